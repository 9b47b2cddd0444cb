//! A caller's own login to a `per_user` upstream, from the link its refused call carried.
//! The link is `<public URL>/ui/connect/<payload>.<mac>`: the server, the caller and when the
//! link ends (an hour), keyed-hashed under the store's installation secret, so every replica
//! of the store accepts it and nothing is written when a call is refused. Following it begins
//! that caller's login (`upstream_login::begin_login`) and sends the browser to the
//! authorization server; its answer comes back to the dashboard's callback, which stores the
//! login as that caller's, and the caller's next call goes out with it.
//!
//! Whoever completes the login ties their upstream account to the link's caller: a link passed
//! to someone else would tie their account to another identity. So the page the link opens says
//! what it does and whom it connects before anything begins, and when the caller is an OAuth
//! subject and the dashboard's sign-in can ask the issuer, the person first signs in there
//! (`/ui/oidc/prove/<link>`, a sign-in bound to the browser that began it): only the same
//! subject gets the proof (a cookie of that browser, bound to the link, ten minutes) that lets
//! the login begin. An agent token has no person behind it at the issuer: its link, which only
//! the agent received in its own call's result, is the proof. Either way nothing begins but by
//! the page's own form (`POST /ui/connect/<link>/begin`): its token is the keyed hash of a
//! cookie the page set in this browser, and a request another site sends (`Sec-Fetch-Site`; an
//! `Origin` not the gateway's is refused at the edge) is refused, so a link or a begin URL
//! passed to someone else shows them the page and starts nothing. The login finishes only in
//! the browser that began it (a cookie set at the begin, whose keyed hash the pending login
//! carries), so a URL of the flow passed to someone else cannot tie their account to the
//! caller; and a caller already connected must disconnect before another account replaces its
//! own.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcplex_config::Config;
use mcplex_state::Store;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::ui::cookies::{self, Kind};
use crate::ui::text_page as page;

/// Where a link points, beneath the public URL.
pub const CONNECT_PATH: &str = "/ui/connect";
/// How long a link may be followed.
const LINK_LIFETIME_SECS: i64 = 3600;
/// What the mac covers besides the payload, so that it can stand for nothing else.
const PURPOSE: &str = "mcplex-connect";
/// What a proof's mac covers besides the link.
const PROOF_PURPOSE: &str = "mcplex-connect-proof";
/// How long a subject's proof lets the login begin.
const PROOF_LIFETIME_SECS: i64 = 600;
/// The cookie that carries a subject's proof from the issuer's sign-in to the login's begin.
const PROOF_COOKIE: &str = "mcplex_connect_proof";
/// The cookie that ties a caller's login to the browser that began it.
pub(crate) const BROWSER_COOKIE: &str = "mcplex_connect";
/// What the browser cookie's keyed hash covers besides the cookie.
const BROWSER_PURPOSE: &str = "mcplex-connect-browser";
/// The cookie the link's page sets, whose keyed hash (with the link) is its form's token.
const FORM_COOKIE: &str = "mcplex_connect_form";
/// What the form token's keyed hash covers besides the link and the cookie.
const FORM_PURPOSE: &str = "mcplex-connect-form";
/// The largest body of the page's form (one token).
const FORM_BODY_LIMIT: usize = 1024;

/// What a link says.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Link {
    #[serde(rename = "s")]
    server: String,
    #[serde(rename = "c")]
    caller: String,
    /// Unix seconds.
    #[serde(rename = "e")]
    ends_at: i64,
}

/// The origin of `auth.resource`: the public URL people reach the gateway at, when configured.
pub(crate) fn resource_origin(auth: &mcplex_config::AuthSettings) -> Option<String> {
    auth.resource
        .as_deref()
        .and_then(|resource| url::Url::parse(resource).ok())
        .map(|url| url.origin().ascii_serialization())
        .filter(|origin| origin != "null")
}

/// The public URL links and callbacks are made under: the origin of `auth.resource` when it is
/// set, else the address the gateway listens on (an unspecified one named `localhost`).
pub fn public_origin(config: &Config) -> String {
    if let Some(origin) = config.auth.as_ref().and_then(resource_origin) {
        return origin;
    }
    let listen = config
        .listen
        .replace("0.0.0.0", "localhost")
        .replace("[::]", "localhost");
    format!("http://{listen}")
}

/// The link maker the gateway's logins hand out with a refused call.
pub fn links(store: Arc<Store>, origin: String) -> mcplex_oauth::ConnectLinks {
    Box::new(move |server, caller| {
        let link = Link {
            server: server.to_owned(),
            caller: caller.to_owned(),
            ends_at: mcplex_oauth::now_unix().saturating_add(LINK_LIFETIME_SECS),
        };
        Some(format!("{origin}{CONNECT_PATH}/{}", sign(&store, &link)?))
    })
}

fn sign(store: &Store, link: &Link) -> Option<String> {
    let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(link).ok()?);
    let mac = store.token_mac(&format!("{PURPOSE}\n{payload}"));
    Some(format!("{payload}.{mac}"))
}

/// The link `text` names, when this store signed it and it has not ended at `now`.
fn verify(store: &Store, text: &str, now: i64) -> Option<Link> {
    let (payload, mac) = text.split_once('.')?;
    let expected = store.token_mac(&format!("{PURPOSE}\n{payload}"));
    if !mcplex_surface::same_secret(mac, &expected) {
        return None;
    }
    let link: Link = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()?;
    (link.ends_at > now).then_some(link)
}

/// The subject an OAuth subject's link `text` is for, when this store signed it and it has not
/// ended at `now` (`None` for an agent token's link).
pub(crate) fn link_subject(store: &Store, text: &str, now: i64) -> Option<String> {
    let link = verify(store, text, now)?;
    link.caller
        .strip_prefix(mcplex_state::OAUTH_CALLER_PREFIX)
        .map(str::to_owned)
}

/// A proof that the person following link `text` signed in at the issuer as its subject.
pub(crate) fn prove(store: &Store, text: &str, now: i64) -> String {
    let ends_at = now.saturating_add(PROOF_LIFETIME_SECS);
    let mac = store.token_mac(&format!("{PROOF_PURPOSE}\n{text}\n{ends_at}"));
    format!("{ends_at}.{mac}")
}

fn proof_holds(store: &Store, text: &str, proof: &str, now: i64) -> bool {
    let Some((ends_at, mac)) = proof.split_once('.') else {
        return false;
    };
    let expected = store.token_mac(&format!("{PROOF_PURPOSE}\n{text}\n{ends_at}"));
    mcplex_surface::same_secret(mac, &expected) && ends_at.parse::<i64>().is_ok_and(|e| e > now)
}

/// Whether this browser holds a proof for link `text` (the cookie the issuer's sign-in set).
fn proven_here(store: &Store, text: &str, headers: &HeaderMap, now: i64) -> bool {
    mcplex_surface::cookie(headers, PROOF_COOKIE)
        .is_some_and(|proof| proof_holds(store, text, proof, now))
}

/// The page of link `text`.
fn page_path(text: &str) -> String {
    format!("{CONNECT_PATH}/{text}")
}

/// Where the page's form begins the login of link `text`.
fn begin_path(text: &str) -> String {
    format!("{CONNECT_PATH}/{text}/begin")
}

/// The token of the form link `text`'s page shows to the browser whose cookie is `nonce`.
fn form_token(store: &Store, text: &str, nonce: &str) -> String {
    store.token_mac(&format!("{FORM_PURPOSE}\n{text}\n{nonce}"))
}

/// Whether `body` is the form of link `text`'s page as this browser was shown it: its token is
/// the keyed hash of this browser's page cookie.
fn form_holds(store: &Store, text: &str, headers: &HeaderMap, body: &[u8]) -> bool {
    // The page's cookie is scoped to the link's own path: a page of another link, open in
    // another tab, neither shadows nor replaces it.
    let Some(nonce) = mcplex_surface::cookie(headers, FORM_COOKIE) else {
        return false;
    };
    let expected = form_token(store, text, nonce);
    url::form_urlencoded::parse(body)
        .find(|(name, _)| name == "token")
        .is_some_and(|(_, sent)| mcplex_surface::same_secret(&sent, &expected))
}

/// Whether the browser says another site sends the request (`Sec-Fetch-Site`, where it sends
/// one). An `Origin` that is not the gateway's is refused before any route, at the edge
/// (`mcplex_surface`'s guard), as for every dashboard request.
fn from_another_site(headers: &HeaderMap) -> bool {
    headers
        .get("sec-fetch-site")
        .is_some_and(|site| site.as_bytes() != b"same-origin")
}

/// The redirect back to link `text`'s page, with the subject's proof as a cookie of this
/// browser: the person continues from the page, nothing begins on the way.
pub(crate) fn proven_redirect(
    store: &Store,
    text: &str,
    now: i64,
    request: &HeaderMap,
) -> Response {
    let proof = prove(store, text, now);
    cookies::set(
        Redirect::to(&page_path(text)).into_response(),
        PROOF_COOKIE,
        &proof,
        CONNECT_PATH,
        Kind::Flow,
        request,
    )
}

/// Whether the callback's request comes from the browser whose cookie `bound_to` is the keyed
/// hash of.
pub(crate) fn same_browser(store: &Store, request: &axum::http::HeaderMap, bound_to: &str) -> bool {
    mcplex_surface::cookie(request, BROWSER_COOKIE).is_some_and(|nonce| {
        mcplex_surface::same_secret(
            &store.token_mac(&format!("{BROWSER_PURPOSE}\n{nonce}")),
            bound_to,
        )
    })
}

#[derive(Clone)]
struct Connect {
    store: Arc<Store>,
    config: watch::Receiver<Arc<Config>>,
}

/// `GET /ui/connect/{link}` (what the link does, and the form that goes on) and `POST
/// /ui/connect/{link}/begin` (the login; a GET of it only leads to the page), open like every
/// `/ui` page: the signed link, the page's form token and a subject's proof are what they check.
pub fn router(store: Arc<Store>, config: watch::Receiver<Arc<Config>>) -> Router {
    Router::new()
        .route(&format!("{CONNECT_PATH}/{{link}}"), get(follow))
        .route(
            &format!("{CONNECT_PATH}/{{link}}/begin"),
            get(to_the_page)
                .post(begin)
                .layer(DefaultBodyLimit::max(FORM_BODY_LIMIT)),
        )
        .with_state(Connect { store, config })
}

/// What a checked link says, the server it is for and the config it was checked against.
type Checked = (Link, mcplex_config::ServerConfig, Arc<Config>);

/// A link checked, or why it is refused (the page's status and text).
fn checked(connect: &Connect, text: &str) -> Result<Checked, (StatusCode, String)> {
    let refused = || {
        (
            StatusCode::BAD_REQUEST,
            "This link is not one of this gateway's, or it ended (a link lasts an hour): call the tool again for a new one.".to_owned(),
        )
    };
    if text.len() > 4096 {
        return Err(refused());
    }
    let link = verify(&connect.store, text, mcplex_oauth::now_unix()).ok_or_else(refused)?;
    let config = connect.config.borrow().clone();
    let server = config
        .servers
        .iter()
        .find(|s| s.name == link.server && s.oauth.as_ref().is_some_and(|o| o.own_logins()))
        .cloned()
        .ok_or_else(|| {
            (
                StatusCode::NOT_FOUND,
                format!(
                    "{} no longer asks each caller for its own login.",
                    link.server
                ),
            )
        })?;
    Ok((link, server, config))
}

/// Whether `config`'s issuer must confirm who follows a link for `caller`: an OAuth subject's,
/// when the dashboard's sign-in is configured.
fn needs_proof(config: &Config, caller: &str) -> bool {
    caller.starts_with(mcplex_state::OAUTH_CALLER_PREFIX)
        && config
            .auth
            .as_ref()
            .is_some_and(|auth| auth.dashboard.is_some())
}

/// What the link does, and the way on: first the issuer's sign-in where the caller must be
/// proven, else the form that begins the login (its token tied to a cookie set here).
async fn follow(
    State(connect): State<Connect>,
    Path(text): Path<String>,
    headers: HeaderMap,
) -> Response {
    let (link, _, config) = match checked(&connect, &text) {
        Ok(checked) => checked,
        Err((status, why)) => return page(status, &why),
    };
    let (caller, server) = (escape(&link.caller), escape(&link.server));
    let title = format!("Connect {server}");
    let what = format!(
        "<p>This link connects an account on <strong>{server}</strong> to <strong>{caller}</strong> on this gateway: every call {caller} makes to {server} will act as the account you log in with there.</p>"
    );
    let subject = escape(
        link.caller
            .trim_start_matches(mcplex_state::OAUTH_CALLER_PREFIX),
    );
    let now = mcplex_oauth::now_unix();
    let proof_needed = needs_proof(&config, &link.caller);
    if proof_needed && !proven_here(&connect.store, &text, &headers, now) {
        let body = format!(
            "{what}\n<p>First sign in at the issuer as <strong>{subject}</strong>: only {subject} can follow this link.</p>\n<p><a class=\"button primary\" id=\"continue\" href=\"/ui/oidc/prove/{}\">Sign in as {subject}</a></p>",
            escape(&text)
        );
        return html_page(StatusCode::OK, &title, "", &body);
    }
    let Ok(nonce) = mcplex_oauth::random_text(24) else {
        return page(
            StatusCode::INTERNAL_SERVER_ERROR,
            "No randomness for the page.",
        );
    };
    let whose = if proof_needed {
        format!(
            "<p>The issuer says you are <strong>{subject}</strong>. Continue only if you mean to connect your own account on {server}.</p>"
        )
    } else {
        format!("<p>Continue only if {caller} is yours (an agent you run).</p>")
    };
    let body = format!(
        "{what}\n{whose}\n<form method=\"post\" action=\"{}\"><input type=\"hidden\" name=\"token\" value=\"{}\"><p><button class=\"button primary\" id=\"continue\" type=\"submit\">Log in to {server}</button></p></form>",
        escape(&begin_path(&text)),
        form_token(&connect.store, &text, &nonce)
    );
    // The form's POST carries this origin (a page that sends no referrer would send `null`).
    let head = "<meta name=\"referrer\" content=\"same-origin\">";
    cookies::set(
        html_page(StatusCode::OK, &title, head, &body),
        FORM_COOKIE,
        &nonce,
        &page_path(&text),
        Kind::Flow,
        &headers,
    )
}

/// A GET of a begin URL (an old link, or one passed on) begins nothing: it leads to the page.
async fn to_the_page(State(connect): State<Connect>, Path(text): Path<String>) -> Response {
    match checked(&connect, &text) {
        Ok(_) => Redirect::to(&page_path(&text)).into_response(),
        Err((status, why)) => page(status, &why),
    }
}

/// Begins the caller's login in this browser, from the link's page in this same browser, once
/// the subject is proven where it must be.
async fn begin(
    State(connect): State<Connect>,
    Path(text): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (link, server, config) = match checked(&connect, &text) {
        Ok(checked) => checked,
        Err((status, why)) => return page(status, &why),
    };
    if !crate::origin::from_this_origin(&headers)
        || from_another_site(&headers)
        || !form_holds(&connect.store, &text, &headers, &body)
    {
        tracing::warn!(server = %link.server, caller = %link.caller, "a caller's login was asked to begin from elsewhere than its page in this browser; refused");
        return page(
            StatusCode::FORBIDDEN,
            "A login begins only from the link's own page, in the browser that opened it: open the link and continue from its page.",
        );
    }
    if needs_proof(&config, &link.caller)
        && !proven_here(&connect.store, &text, &headers, mcplex_oauth::now_unix())
    {
        return page(
            StatusCode::FORBIDDEN,
            &format!(
                "Only {} can follow this link: open the link itself and sign in at the issuer first.",
                link.caller
            ),
        );
    }
    let Ok(nonce) = mcplex_oauth::random_text(24) else {
        return page(
            StatusCode::INTERNAL_SERVER_ERROR,
            "No randomness for the login.",
        );
    };
    let bound_to = connect
        .store
        .token_mac(&format!("{BROWSER_PURPOSE}\n{nonce}"));
    let origin = public_origin(&config);
    let caller = crate::upstream_login::ForCaller {
        caller: &link.caller,
        bound_to,
    };
    match crate::upstream_login::begin_login(&connect.store, &server, &origin, Some(caller)).await {
        Ok(url) => {
            tracing::info!(server = %link.server, caller = %link.caller, "a caller's login to its own account begins");
            let onward = onward(&link.server, &url);
            let onward =
                cookies::expire(onward, FORM_COOKIE, &page_path(&text), Kind::Flow, &headers);
            cookies::set(onward, BROWSER_COOKIE, &nonce, "/ui", Kind::Flow, &headers)
        }
        Err((status, why)) => page(
            status,
            &format!(
                "The login to {} could not begin: {}",
                link.server,
                crate::ui::short(&why)
            ),
        ),
    }
}

/// The page that sends the browser on to the authorization server at `url`. Not a redirect:
/// the dashboard's `form-action 'self'` would stop a form's redirect to another site.
fn onward(server: &str, url: &str) -> Response {
    let (server, url) = (escape(server), escape(url));
    html_page(
        StatusCode::OK,
        &format!("Log in to {server}"),
        &format!("<meta http-equiv=\"refresh\" content=\"0; url={url}\">"),
        &format!(
            "<p>On to {server}'s authorization server.</p>\n<p><a class=\"button primary\" id=\"continue\" href=\"{url}\">Continue</a></p>"
        ),
    )
}

/// `text` for HTML.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A small HTML page: what a link does, readable without the dashboard's script; `head` is
/// more of its head.
fn html_page(status: StatusCode, title: &str, head: &str, body: &str) -> Response {
    let html = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">{head}<title>{title}</title><link rel=\"stylesheet\" href=\"/ui/app.css\"></head>\n<body><main><h1>{title}</h1>\n<div class=\"card\">{body}</div></main>\n</body></html>\n"
    );
    (
        status,
        [(axum::http::header::CONTENT_TYPE, "text/html; charset=utf-8")],
        html,
    )
        .into_response()
}

#[cfg(test)]
#[path = "connect_tests.rs"]
mod tests;
