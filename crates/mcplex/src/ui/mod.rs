//! The dashboard at `/ui`: a few static files (`crates/mcplex/assets/ui/`, embedded at build
//! time: no Node toolchain, nothing fetched at run time) and its login. The pages read and write
//! only through `/api/v1`, with the session cookie this module sets (the `/api` guard,
//! `api_session.rs`, turns a live session into the admin and checks CSRF and Origin on writes).
//! The dashboard's own routes pass their guard ([`family`]) after the edge checks: its pages
//! and assets hold no data, and its handlers ask for the login.
//!
//! - `GET /ui/` (and `/ui`): the page; `GET /ui/<file>`: its scripts and stylesheet.
//! - `POST /ui/login` [`LoginRequest`]: the API key, pasted once → the session cookie and
//!   [`SessionAnswer`]; `GET /ui/login/{token}`: a one-time login link (`mcplex serve` prints one
//!   when it listens on loopback) → the cookie and a redirect to the page.
//! - `GET /ui/session`: the live session's CSRF token, or 401; `POST /ui/logout`.
//!
//! Every answer carries a strict Content-Security-Policy (no inline script or style),
//! `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer`, and is not cached.

pub(crate) mod cookies;
mod person;
mod sessions;
mod sign_in;
mod throttle;

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use mcplex_api::{LoginRequest, SessionAnswer};
use mcplex_state::now_unix;
use mcplex_surface::{
    Admission, Authenticator, Family, Guard, RouteGuard, declared_length, refuse, same_secret,
};

pub use person::Person;
pub use sessions::{LINK_LIFETIME, Sessions};
pub use sign_in::SignIn;
pub use throttle::LoginThrottle;

use crate::api::error;
use crate::api_session::{CSRF_HEADER, SESSION_COOKIE, session_id};
use crate::auth::Access;

/// The Content-Security-Policy of every `/ui` answer.
/// `data:` images and audio: what a tool returns, shown on Try a tool (never a script).
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
                   img-src 'self' data:; media-src data:; \
                   connect-src 'self'; object-src 'none'; frame-ancestors 'none'; \
                   base-uri 'none'; form-action 'self'";

/// The page's files: (name under `/ui/`, content type, content).
const ASSETS: &[(&str, &str, &str)] = &[
    (
        "app.css",
        "text/css; charset=utf-8",
        include_str!("../../assets/ui/app.css"),
    ),
    ("app.js", JS, include_str!("../../assets/ui/app.js")),
    ("dom.js", JS, include_str!("../../assets/ui/dom.js")),
    ("diff.js", JS, include_str!("../../assets/ui/diff.js")),
    ("chart.js", JS, include_str!("../../assets/ui/chart.js")),
    ("form.js", JS, include_str!("../../assets/ui/form.js")),
    (
        "overview.js",
        JS,
        include_str!("../../assets/ui/overview.js"),
    ),
    ("server.js", JS, include_str!("../../assets/ui/server.js")),
    (
        "add_server.js",
        JS,
        include_str!("../../assets/ui/add_server.js"),
    ),
    ("tools.js", JS, include_str!("../../assets/ui/tools.js")),
    ("tokens.js", JS, include_str!("../../assets/ui/tokens.js")),
    (
        "activity.js",
        JS,
        include_str!("../../assets/ui/activity.js"),
    ),
    (
        "favicon.svg",
        "image/svg+xml",
        include_str!("../../assets/ui/favicon.svg"),
    ),
];
const JS: &str = "text/javascript; charset=utf-8";
const INDEX: &str = include_str!("../../assets/ui/index.html");

/// The dashboard's routes, `sign_in`'s and `more` (other `/ui` pages: an upstream login's
/// callback, the connect links), every answer with the dashboard's security headers.
pub fn router(access: Arc<Access>, sign_in: Option<SignIn>, more: Router) -> Router {
    let sign_in = sign_in.map(SignIn::router).unwrap_or_default();
    Router::new()
        .route("/ui", get(|| async { Redirect::permanent("/ui/") }))
        .route("/ui/", get(index))
        .route("/ui/session", get(session))
        // A login is a key and a few fields; a streamed body is cut there too.
        .route(
            "/ui/login",
            post(login).layer(axum::extract::DefaultBodyLimit::max(LOGIN_BODY_LIMIT)),
        )
        .route("/ui/login/{token}", get(login_link))
        .route("/ui/logout", post(logout))
        .route("/ui/{file}", get(asset))
        .with_state(access)
        .merge(sign_in)
        .merge(more)
        .layer(axum::middleware::from_fn(secure_headers))
}

/// The `/ui` family of routes and its guard.
pub fn family() -> Family {
    Family::new("/ui", DashboardGuard)
}

/// Lets every dashboard request on but a login too large to be one: a login is a key and a few
/// fields, so its declared length is refused before the body is read.
struct DashboardGuard;

impl RouteGuard for DashboardGuard {
    fn admit<'a>(&'a self, _: &'a Guard, request: &'a mut Request) -> Admission<'a> {
        let too_large = request.uri().path() == "/ui/login"
            && declared_length(request.headers()).is_some_and(|n| n > LOGIN_BODY_LIMIT as u64);
        let admitted = if too_large {
            Err(refuse(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("a login is at most {LOGIN_BODY_LIMIT} bytes"),
            ))
        } else {
            Ok(())
        };
        Box::pin(std::future::ready(admitted))
    }
}

/// A one-time login link's path for `mcplex serve` to print.
pub fn login_link_path(access: &Access) -> Result<String, String> {
    let token = access.sessions.login_link(Instant::now())?;
    Ok(format!("/ui/login/{token}"))
}

async fn secure_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, CSP),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// Text another party sent (an authorization server's error, a query parameter) as a page or a
/// log line may carry it: without control characters, at most 300 characters.
pub(crate) fn short(text: &str) -> String {
    let mut kept: String = text.chars().filter(|c| !c.is_control()).take(300).collect();
    if text.chars().count() > 300 {
        kept.push('…');
    }
    kept
}

/// A plain-text page for a person who arrived by a redirect (a login's or a sign-in's answer):
/// nothing of the request is ever interpreted as markup.
pub(crate) fn text_page(status: StatusCode, text: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("{text}\n"),
    )
        .into_response()
}

async fn index() -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], INDEX).into_response()
}

async fn asset(Path(file): Path<String>) -> Response {
    match ASSETS.iter().find(|(name, _, _)| *name == file) {
        Some((_, content_type, body)) => {
            ([(header::CONTENT_TYPE, *content_type)], *body).into_response()
        }
        None => error(StatusCode::NOT_FOUND, format!("no dashboard file {file:?}")),
    }
}

/// Whether the page is still logged in: the cookie's session is live and the page presents its
/// CSRF token. The cookie alone gets nothing (a page on another port of the host has it too).
async fn session(State(access): State<Arc<Access>>, headers: HeaderMap) -> Response {
    match proven_session(&access, &headers) {
        Some((id, csrf, expires_at)) => {
            let person = access.sessions.person(&id, now_unix());
            Json(SessionAnswer {
                csrf,
                expires_at,
                viewer: person.as_ref().is_some_and(|p| p.viewer.is_some()),
                who: person.map(|p| p.name),
            })
            .into_response()
        }
        None => error(StatusCode::UNAUTHORIZED, "not logged in"),
    }
}

/// The live session of the request's cookie whose CSRF token the request presents: its id,
/// token and end.
fn proven_session(access: &Access, headers: &HeaderMap) -> Option<(String, String, i64)> {
    let id = session_id(headers)?;
    let (csrf, expires_at) = access.sessions.lookup(id, now_unix())?;
    let sent = headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok())?;
    same_secret(sent, &csrf).then(|| (id.to_owned(), csrf, expires_at))
}

/// The largest login body (its guard refuses a larger declared one before it is read).
const LOGIN_BODY_LIMIT: usize = 8 * 1024;

async fn login(
    State(access): State<Arc<Access>>,
    peer: Option<axum::Extension<mcplex_surface::Peer>>,
    headers: HeaderMap,
    Json(request): Json<LoginRequest>,
) -> Response {
    // The guard has checked a present Origin; a login from a page needs one.
    if !headers.contains_key(header::ORIGIN) {
        return error(StatusCode::FORBIDDEN, "a login needs an Origin header");
    }
    let peer = peer.map(|axum::Extension(peer)| peer.0.ip());
    if let Some(wait) = peer.and_then(|peer| access.login_throttle.wait(peer, Instant::now())) {
        let mut refused = error(
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "too many wrong keys from this address: try again in {} s",
                wait.as_secs().max(1)
            ),
        );
        if let Ok(value) = HeaderValue::from_str(&wait.as_secs().max(1).to_string()) {
            refused.headers_mut().insert(header::RETRY_AFTER, value);
        }
        return refused;
    }
    if !access.is_admin(request.key.trim()) {
        if let Some(peer) = peer {
            access.login_throttle.failed(peer, Instant::now());
        }
        return error(
            StatusCode::UNAUTHORIZED,
            "that is not this gateway's API key (it is in the api_key file of the data directory)",
        );
    }
    match access.sessions.open(now_unix()) {
        Ok(opened) => {
            let answer = SessionAnswer {
                csrf: opened.csrf.clone(),
                expires_at: opened.expires_at,
                who: None,
                viewer: false,
            };
            with_cookie(Json(answer).into_response(), &opened.id, &headers)
        }
        Err(why) => error(StatusCode::INTERNAL_SERVER_ERROR, why),
    }
}

async fn login_link(
    State(access): State<Arc<Access>>,
    headers: HeaderMap,
    Path(token): Path<String>,
) -> Response {
    match access.sessions.redeem(&token, Instant::now(), now_unix()) {
        // The page learns the session's token from the fragment (never sent to a server) and
        // keeps it in its own origin's storage.
        Some(Ok(opened)) => with_cookie(
            Redirect::to(&format!("/ui/#login={}", opened.csrf)).into_response(),
            &opened.id,
            &headers,
        ),
        Some(Err(why)) => error(StatusCode::INTERNAL_SERVER_ERROR, why),
        None => (
            StatusCode::FORBIDDEN,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            LINK_REFUSED,
        )
            .into_response(),
    }
}

const LINK_REFUSED: &str = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
<title>mcplex: login link refused</title><link rel=\"stylesheet\" href=\"/ui/app.css\">\
<link rel=\"icon\" href=\"/ui/favicon.svg\"></head>\
<body><main class=\"notice\"><h1>This login link cannot be used</h1><p>A login link works once, \
within five minutes of the gateway's start. <a href=\"/ui/\">Log in with the API key</a> \
instead (it is in the api_key file of the data directory).</p></main></body></html>";

/// Ends the session (on every gateway of the store) and drops its cookie. When the store does
/// not take the logout, the cookie is dropped all the same and the answer says so (503): the
/// session is ended on this gateway only.
async fn logout(State(access): State<Arc<Access>>, headers: HeaderMap) -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    // Only the page that holds the session's token ends it: a cookie sent from another port of
    // the host cannot log the operator out.
    if session_id(&headers).is_some_and(|id| access.sessions.lookup(id, now_unix()).is_some())
        && proven_session(&access, &headers).is_none()
    {
        return error(
            StatusCode::FORBIDDEN,
            "a logout needs the session's X-CSRF-Token header",
        );
    }
    if let Some(id) = session_id(&headers).map(str::to_owned) {
        let closing = access.clone();
        let closed = tokio::task::spawn_blocking(move || closing.sessions.close(&id, now_unix()))
            .await
            .unwrap_or_else(|e| Err(format!("the logout stopped: {e}")));
        if let Err(why) = closed {
            tracing::error!("dashboard logout: {why}");
            response = error(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "{why}; this gateway no longer accepts the session, other gateways of the store may until it ends"
                ),
            );
        }
    }
    cookies::expire(
        response,
        SESSION_COOKIE,
        "/",
        cookies::Kind::Session,
        &headers,
    )
}

/// `response` with the session cookie (see [`cookies::Kind::Session`]).
fn with_cookie(response: Response, id: &str, request: &HeaderMap) -> Response {
    cookies::set(
        response,
        SESSION_COOKIE,
        id,
        "/",
        cookies::Kind::Session,
        request,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn the_cookie_is_secure_exactly_when_the_browser_came_over_https() {
        for (request, secure) in [
            (vec![], false),
            (vec![("origin", "http://127.0.0.1:8080")], false),
            (vec![("origin", "HTTPS://gateway.example")], true),
            (vec![("x-forwarded-proto", "https")], true),
            (vec![("x-forwarded-proto", "http, https")], false),
            (vec![("x-forwarded-proto", "https, http")], true),
            (
                vec![("forwarded", "for=1.2.3.4;proto=https;by=5.6.7.8")],
                true,
            ),
            (vec![("forwarded", "proto=\"HTTPS\"")], true),
            (vec![("forwarded", "proto=http, proto=https")], false),
            (vec![("forwarded", "for=proto=https")], false),
        ] {
            let response = cookies::set(
                Response::default(),
                SESSION_COOKIE,
                "id",
                "/",
                cookies::Kind::Session,
                &headers(&request),
            );
            let cookie = response.headers()[header::SET_COOKIE]
                .to_str()
                .expect("text");
            assert_eq!(cookie.ends_with("; Secure"), secure, "{request:?}");
            assert!(cookie.contains("; Path=/; HttpOnly; SameSite=Strict; Max-Age="));
        }
    }
}
