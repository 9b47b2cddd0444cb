//! Single sign-on for the dashboard (`auth.dashboard`): OpenID Connect's authorization code flow
//! against the issuer `auth` names, with PKCE (S256), `state` and `nonce`, and the redirect URI
//! `<public URL>/ui/oidc/callback` (the origin of `auth.resource` when it is set, else the
//! request's own). What was begun waits in the store (sealed, single use, ten minutes), so the
//! callback may reach any replica. The ID token is verified against the issuer's keys (the
//! allowed algorithms, `iss`, `aud` = the client, `exp`, the `nonce`); the userinfo endpoint's
//! claims are added when it has them for the same `sub`. A person whose claims match one of
//! `operators` gets an operator's session; anyone else whose claims `auth.rules` grant something
//! gets a viewer's (read-only, within that reach); the rest are refused with who they are and
//! why. Who they are is signed inside the session. Every sign-in and refusal is one log line naming the person.
//! The same flow proves who follows a connect link (`/ui/oidc/prove/<link>`, see `connect.rs`):
//! no session then, only a proof for the link when the person is its subject. Either way the
//! sign-in finishes only in the browser that began it: the begin sets a cookie (ten minutes,
//! HttpOnly, SameSite=Lax for the issuer's redirect back) holding the keyed hash of its `state`,
//! and a callback without it is refused before anything is taken or stored, so a callback URL
//! passed to someone else signs them in as nobody and proves nothing.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::{Json, Router};
use mcplex_config::{AuthSettings, ClientSecret, DashboardSignIn};
use mcplex_oauth::{PENDING_FOR_SECS, Pkce, random_text};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::text_page as page;
use super::{Person, short};
use crate::auth::Access;
use mcplex_oauth::{IssuerKeys, JwtVerifier, Rules};

/// How long the issuer's endpoints are kept.
const ENDPOINTS_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(3600);

/// Where the issuer sends the browser back.
pub const CALLBACK_PATH: &str = "/ui/oidc/callback";
/// What a pending sign-in's `state` is kept under in the store (apart from upstream logins).
const PENDING_PREFIX: &str = "sign-in:";
/// The cookie that ties a sign-in to the browser that began it.
const STATE_COOKIE: &str = "mcplex_sign_in";
/// The path that cookie is sent to: the callback's.
const STATE_COOKIE_PATH: &str = "/ui/oidc";
/// What the cookie's keyed hash covers besides the `state`.
const STATE_PURPOSE: &str = "mcplex-sign-in-browser";

/// The dashboard's OpenID Connect client.
pub struct SignIn {
    issuer: String,
    settings: DashboardSignIn,
    /// The origin of `auth.resource`, the public URL people reach the gateway at.
    public_origin: Option<String>,
    http: reqwest::Client,
    /// The issuer's keys and the one JWT check, shared with the access tokens' (`mcplex-oauth`).
    verifier: JwtVerifier,
    /// The issuer's endpoints, as last read from its metadata (an hour at most): a sign-in,
    /// which anyone may begin, costs the issuer nothing.
    endpoints: tokio::sync::Mutex<Option<(std::time::Instant, Value)>>,
    /// What a person who is not an operator may read: what `auth.rules` grant their claims.
    rules: Rules,
    access: Arc<Access>,
}

#[derive(Serialize, Deserialize)]
struct PendingSignIn {
    nonce: String,
    verifier: String,
    redirect_uri: String,
    begun_at: i64,
    /// A sign-in that proves who follows this connect link (`connect.rs`), not a dashboard
    /// session's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    connect: Option<String>,
}

impl SignIn {
    pub fn new(
        auth: &AuthSettings,
        profiles: &[mcplex_config::Profile],
        access: Arc<Access>,
    ) -> anyhow::Result<Option<SignIn>> {
        let Some(settings) = auth.dashboard.clone() else {
            return Ok(None);
        };
        let public_origin = crate::connect::resource_origin(auth);
        Ok(Some(SignIn {
            issuer: auth.issuer.clone(),
            settings,
            public_origin,
            http: mcplex_oauth::http_client()?,
            verifier: JwtVerifier::new(
                IssuerKeys::new(&auth.issuer)?,
                &auth.algorithms,
                auth.leeway.as_secs(),
            )?,
            endpoints: tokio::sync::Mutex::new(None),
            rules: Rules::new(&auth.rules, profiles),
            access,
        }))
    }

    pub fn router(self) -> Router {
        Router::new()
            .route("/ui/sign-in", get(offer))
            .route("/ui/oidc/login", get(begin))
            .route("/ui/oidc/prove/{link}", get(prove))
            .route(CALLBACK_PATH, get(callback))
            .with_state(Arc::new(self))
    }

    /// The callback under the public origin (`auth.resource`'s), else under the request's.
    fn redirect_uri(&self, headers: &HeaderMap) -> Option<String> {
        let origin = match &self.public_origin {
            Some(origin) => origin.clone(),
            None => crate::origin::request_origin(headers)?,
        };
        Some(format!("{origin}{CALLBACK_PATH}"))
    }

    fn client_secret(&self) -> Result<Option<String>, String> {
        match &self.settings.client_secret {
            None => Ok(None),
            Some(ClientSecret::Value(secret)) => Ok(Some(secret.clone())),
            Some(ClientSecret::Env(name)) => std::env::var(name)
                .map(Some)
                .map_err(|_| format!("auth.dashboard.client_secret's variable {name} is not set")),
        }
    }

    /// The issuer's metadata with its authorization and token endpoints, read at most once an
    /// hour.
    async fn endpoints(&self) -> Result<Value, String> {
        let mut cached = self.endpoints.lock().await;
        if let Some((at, metadata)) = cached.as_ref()
            && at.elapsed() < ENDPOINTS_MAX_AGE
        {
            return Ok(metadata.clone());
        }
        let metadata = self
            .verifier
            .keys()
            .metadata(&["authorization_endpoint", "token_endpoint"])
            .await
            .map_err(|e| e.to_string())?;
        *cached = Some((std::time::Instant::now(), metadata.clone()));
        Ok(metadata)
    }

    /// The person's claims from the callback's `code`, once every check passed.
    async fn claims(
        &self,
        pending: &PendingSignIn,
        code: &str,
    ) -> Result<Map<String, Value>, String> {
        let metadata = self.endpoints().await?;
        let token_endpoint = text(&metadata, "token_endpoint")?;
        let mut form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code.to_owned()),
            ("redirect_uri", pending.redirect_uri.clone()),
            ("code_verifier", pending.verifier.clone()),
        ];
        let mut request = self.http.post(&token_endpoint);
        match self.client_secret()? {
            Some(secret) => request = request.basic_auth(&self.settings.client_id, Some(secret)),
            None => form.push(("client_id", self.settings.client_id.clone())),
        }
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(&form)
            .finish();
        let response = request
            .header(header::ACCEPT, "application/json")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .map_err(|e| format!("the token endpoint did not answer: {}", e.without_url()))?;
        let status = response.status();
        let body = mcplex_oauth::read_capped(response)
            .await
            .map_err(|e| e.to_string())?;
        let answer: Value = serde_json::from_slice(&body)
            .map_err(|_| format!("the token endpoint's answer is not JSON (HTTP {status})"))?;
        if !status.is_success() {
            return Err(format!(
                "the token endpoint refused the code: {} {}",
                short(
                    answer
                        .get("error")
                        .and_then(Value::as_str)
                        .unwrap_or("(no error code)")
                ),
                short(
                    answer
                        .get("error_description")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                )
            ));
        }
        let id_token = text(&answer, "id_token")?;
        let mut claims = self.verified(&id_token, &pending.nonce).await?;
        if let (Some(userinfo), Some(access_token)) = (
            metadata.get("userinfo_endpoint").and_then(Value::as_str),
            answer.get("access_token").and_then(Value::as_str),
        ) {
            self.add_userinfo(&mut claims, userinfo, access_token).await;
        }
        Ok(claims)
    }

    /// The ID token's claims when its signature, issuer, audience, time and nonce hold.
    async fn verified(&self, id_token: &str, nonce: &str) -> Result<Map<String, Value>, String> {
        self.verifier
            .id_token(id_token, &self.settings.client_id, nonce)
            .await
            .map_err(|e| e.to_string())
    }

    /// Claims the userinfo endpoint adds (groups, often), for the same subject only; a failure
    /// leaves the ID token's alone.
    async fn add_userinfo(
        &self,
        claims: &mut Map<String, Value>,
        endpoint: &str,
        access_token: &str,
    ) {
        let answer = self
            .http
            .get(endpoint)
            .bearer_auth(access_token)
            .header(header::ACCEPT, "application/json")
            .send()
            .await;
        let Ok(response) = answer else { return };
        if !response.status().is_success() {
            return;
        }
        let Ok(body) = mcplex_oauth::read_capped(response).await else {
            return;
        };
        let Ok(Value::Object(info)) = serde_json::from_slice::<Value>(&body) else {
            return;
        };
        if info.get("sub") != claims.get("sub") {
            return;
        }
        for (name, value) in info {
            claims.entry(name).or_insert(value);
        }
    }
}

/// After a sign-in that proves who follows connect link `link`: back to the link's page, whose
/// form begins the caller's login, when the person is the link's subject, else refused with
/// both names.
fn proven(
    sign_in: &SignIn,
    link: &str,
    claims: &Map<String, Value>,
    who: &str,
    headers: &HeaderMap,
) -> Response {
    let store = sign_in.access.store();
    let now = mcplex_oauth::now_unix();
    let Some(subject) = crate::connect::link_subject(store, link, now) else {
        return page(
            StatusCode::BAD_REQUEST,
            "The link is not an OAuth subject's, or it ended: call the tool again for a new one.",
        );
    };
    let signed_in_as = claims
        .get("sub")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if signed_in_as != subject {
        tracing::warn!(
            "connect: {who} signed in at {} to follow a link for {subject}; refused",
            sign_in.issuer
        );
        return page(
            StatusCode::FORBIDDEN,
            &format!(
                "You are signed in at the issuer as {who}, but this link connects the account of {subject}: only {subject} can follow it."
            ),
        );
    }
    crate::connect::proven_redirect(store, link, now, headers)
}

fn text(object: &Value, field: &str) -> Result<String, String> {
    object
        .get(field)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| format!("no {field} in the issuer's answer"))
}

/// Whether the login page offers a sign-in, and at which issuer.
async fn offer(State(sign_in): State<Arc<SignIn>>) -> Json<Value> {
    Json(json!({"issuer": sign_in.issuer}))
}

async fn begin(
    State(sign_in): State<Arc<SignIn>>,
    headers: HeaderMap,
    uri: axum::http::Uri,
) -> Response {
    start(&sign_in, &headers, &uri, "/ui/oidc/login", None).await
}

/// The sign-in that proves the person following connect link `link` is its subject.
async fn prove(
    State(sign_in): State<Arc<SignIn>>,
    headers: HeaderMap,
    uri: axum::http::Uri,
    axum::extract::Path(link): axum::extract::Path<String>,
) -> Response {
    // Nothing is kept for a link this gateway did not sign, or one that is no subject's.
    let now = mcplex_oauth::now_unix();
    if link.len() > 4096
        || crate::connect::link_subject(sign_in.access.store(), &link, now).is_none()
    {
        return page(
            StatusCode::BAD_REQUEST,
            "This link is not one of this gateway's, or it ended: call the tool again for a new one.",
        );
    }
    let path = format!("/ui/oidc/prove/{link}");
    start(&sign_in, &headers, &uri, &path, Some(link)).await
}

/// The query of a sign-in moved to the public origin.
const MOVED: &str = "moved=1";

/// Sends the browser to the issuer, the sign-in kept in the store until it comes back. The
/// issuer sends it back to the public origin, where the cookie of the browser that began it
/// must be: begun on another origin (a port forward, `localhost`), it first goes to `path` there,
/// once (marked [`MOVED`]: a proxy that rewrites `Host` makes the public origin look like another
/// one, and a second move would be a loop).
async fn start(
    sign_in: &SignIn,
    headers: &HeaderMap,
    uri: &axum::http::Uri,
    path: &str,
    connect: Option<String>,
) -> Response {
    let moved = uri
        .query()
        .is_some_and(|query| query.split('&').any(|p| p == MOVED));
    if let Some(public) = &sign_in.public_origin
        && !moved
        && !crate::origin::request_origin(headers)
            .is_some_and(|origin| public.eq_ignore_ascii_case(&origin))
    {
        return Redirect::to(&format!("{public}{path}?{MOVED}")).into_response();
    }
    let Some(redirect_uri) = sign_in.redirect_uri(headers) else {
        return page(
            StatusCode::BAD_REQUEST,
            "The request names no Host to come back to.",
        );
    };
    let metadata = match sign_in.endpoints().await {
        Ok(metadata) => metadata,
        Err(why) => {
            tracing::warn!("dashboard sign-in: {why}");
            return page(
                StatusCode::BAD_GATEWAY,
                &format!("The issuer cannot be reached: {why}"),
            );
        }
    };
    let (pkce, state, nonce) = match (Pkce::generate(), random_text(24), random_text(24)) {
        (Ok(pkce), Ok(state), Ok(nonce)) => (pkce, state, nonce),
        _ => {
            return page(
                StatusCode::INTERNAL_SERVER_ERROR,
                "No randomness for the sign-in.",
            );
        }
    };
    let Ok(mut url) =
        url::Url::parse(&text(&metadata, "authorization_endpoint").unwrap_or_default())
    else {
        return page(
            StatusCode::BAD_GATEWAY,
            "The issuer's authorization_endpoint is not a URL.",
        );
    };
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", &sign_in.settings.client_id)
        .append_pair("redirect_uri", &redirect_uri)
        .append_pair("scope", &sign_in.settings.scopes.join(" "))
        .append_pair("state", &state)
        .append_pair("nonce", &nonce)
        .append_pair("code_challenge", &pkce.challenge)
        .append_pair("code_challenge_method", "S256");
    let pending = PendingSignIn {
        nonce,
        verifier: pkce.verifier.expose().to_owned(),
        redirect_uri,
        begun_at: mcplex_oauth::now_unix(),
        connect,
    };
    let Ok(bytes) = serde_json::to_vec(&pending) else {
        return page(
            StatusCode::INTERNAL_SERVER_ERROR,
            "The sign-in could not be kept.",
        );
    };
    let store = sign_in.access.store().clone();
    let key = format!("{PENDING_PREFIX}{state}");
    let kept = tokio::task::spawn_blocking(move || {
        store.put_pending_login(&key, &bytes, PENDING_FOR_SECS)
    })
    .await;
    match kept {
        Ok(Ok(())) => {
            let mac = state_mac(sign_in, &state);
            super::cookies::set(
                Redirect::to(url.as_str()).into_response(),
                &state_cookie(&mac),
                &mac,
                STATE_COOKIE_PATH,
                super::cookies::Kind::Flow,
                headers,
            )
        }
        Ok(Err(e)) => page(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!("The store did not answer: {e}"),
        ),
        Err(e) => page(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

#[derive(Deserialize)]
struct CallbackQuery {
    state: Option<String>,
    code: Option<String>,
    error: Option<String>,
}

/// The keyed hash of `state` the cookie of the browser that began that sign-in holds.
fn state_mac(sign_in: &SignIn, state: &str) -> String {
    sign_in
        .access
        .store()
        .token_mac(&format!("{STATE_PURPOSE}\n{state}"))
}

/// The name of the cookie of the sign-in whose state's keyed hash is `mac`: one per sign-in,
/// so that two begun at once (two tabs, a sign-in and a connect proof) each finish.
fn state_cookie(mac: &str) -> String {
    format!("{STATE_COOKIE}_{}", mac.get(..16).unwrap_or(mac))
}

/// Whether the request comes from the browser that began the sign-in of `state`.
fn begun_here(sign_in: &SignIn, headers: &HeaderMap, state: &str) -> bool {
    let mac = state_mac(sign_in, state);
    mcplex_surface::cookie(headers, &state_cookie(&mac))
        .is_some_and(|held| mcplex_surface::same_secret(held, &mac))
}

/// The issuer's answer: in the browser that began the sign-in only (else refused, the pending
/// sign-in left to expire), whose cookie for it is then dropped.
async fn callback(
    State(sign_in): State<Arc<SignIn>>,
    headers: HeaderMap,
    Query(query): Query<CallbackQuery>,
) -> Response {
    let Some(state) = query
        .state
        .clone()
        .filter(|s| !s.is_empty() && s.len() <= 200)
    else {
        return page(StatusCode::BAD_REQUEST, "This answer names no sign-in.");
    };
    if !begun_here(&sign_in, &headers, &state) {
        tracing::warn!(
            "dashboard sign-in: an answer came back to another browser than the one that began it; refused"
        );
        return page(
            StatusCode::FORBIDDEN,
            "This sign-in was begun in another browser (or more than ten minutes ago): sign in again from this one.",
        );
    }
    let answer = match take_pending(&sign_in, &state).await {
        Ok(pending) => finish(&sign_in, pending, query, &headers).await,
        Err(refused) => refused,
    };
    let cookie = state_cookie(&state_mac(&sign_in, &state));
    super::cookies::expire(
        answer,
        &cookie,
        STATE_COOKIE_PATH,
        super::cookies::Kind::Flow,
        &headers,
    )
}

/// The pending sign-in of `state`, taken from the store (once), or the page that says why not.
async fn take_pending(sign_in: &SignIn, state: &str) -> Result<PendingSignIn, Response> {
    let store = sign_in.access.store().clone();
    let key = format!("{PENDING_PREFIX}{state}");
    let taken =
        tokio::task::spawn_blocking(move || store.take_pending_login(&key, PENDING_FOR_SECS)).await;
    let (status, why) = match taken {
        Ok(Ok(Some(bytes))) => match serde_json::from_slice(&bytes) {
            Ok(pending) => return Ok(pending),
            Err(_) => (
                StatusCode::BAD_REQUEST,
                "The begun sign-in is unreadable: sign in again.".to_owned(),
            ),
        },
        Ok(Ok(None)) => (
            StatusCode::BAD_REQUEST,
            "No sign-in is waiting for this answer (it was used, or began more than ten minutes ago): sign in again.".to_owned(),
        ),
        Ok(Err(e)) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("The store did not answer: {e}"),
        ),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    Err(page(status, &why))
}

/// The sign-in finished with the issuer's answer: a session, a connect link's proof, or why
/// not.
async fn finish(
    sign_in: &SignIn,
    pending: PendingSignIn,
    query: CallbackQuery,
    headers: &HeaderMap,
) -> Response {
    if let Some(error) = query.error {
        return page(
            StatusCode::FORBIDDEN,
            &format!("The issuer did not sign you in: {}.", short(&error)),
        );
    }
    let Some(code) = query.code else {
        return page(StatusCode::BAD_REQUEST, "The answer has no code.");
    };
    let claims = match sign_in.claims(&pending, &code).await {
        Ok(claims) => claims,
        Err(why) => {
            tracing::warn!("dashboard sign-in refused: {why}");
            return page(StatusCode::FORBIDDEN, &format!("The sign-in failed: {why}"));
        }
    };
    let who = super::person::name_of(&claims);
    if let Some(link) = &pending.connect {
        return proven(sign_in, link, &claims, &who, headers);
    }
    let person = if sign_in.settings.operators.iter().any(|m| m.holds(&claims)) {
        Person::operator(&who)
    } else {
        match sign_in.rules.grant(&claims) {
            Some(reach) => Person::viewer(&who, &reach),
            None => {
                tracing::warn!(
                    "dashboard sign-in: {who} is not an operator (auth.dashboard.operators) and auth.rules grant them nothing; refused"
                );
                return page(
                    StatusCode::FORBIDDEN,
                    &format!(
                        "You are signed in at the issuer as {who}, who is not an operator of this gateway (auth.dashboard.operators) and whom auth.rules let read nothing."
                    ),
                );
            }
        }
    };
    match sign_in
        .access
        .sessions
        .open_as(mcplex_state::now_unix(), &person)
    {
        Ok(opened) => {
            let role = if person.viewer.is_some() {
                "a viewer (read-only, within what auth.rules grant)"
            } else {
                "an operator"
            };
            tracing::info!("dashboard: {who} signed in at {} as {role}", sign_in.issuer);
            super::with_cookie(
                Redirect::to(&format!("/ui/#login={}", opened.csrf)).into_response(),
                &opened.id,
                headers,
            )
        }
        Err(why) => page(StatusCode::INTERNAL_SERVER_ERROR, &why),
    }
}
