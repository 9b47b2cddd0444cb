//! The HTTP guard in front of every route. It owns the edge checks every request passes
//! (DNS-rebinding protection on `Host` and `Origin`, the request body limit) and the admission
//! of the gateway's own routes (the MCP routes, `/healthz`, `/readyz`, `/metrics`, the OAuth
//! metadata), attaching a [`Caller`] to every MCP request it lets through; the surfaces read it
//! through [`crate::Reach`]. The routes the binary serves beside them bring their own guard
//! ([`RouteGuard`], one per [`Family`] of paths): the guard runs it after the edge checks, in
//! place of its own admission, and names none of their paths.
//!
//! - `Host` must be a loopback name, an IP address, or listed in `trusted_hosts`: DNS rebinding
//!   needs a name the attacker controls, and an address is none (Prometheus and other
//!   infrastructure reach a pod by its address). A browser `Origin` must be a loopback name or
//!   listed: a page served from any address is another site. Anything else gets 403 before any
//!   handler runs.
//! - A body whose `Content-Length` exceeds the limit gets 413 (streamed bodies are cut at the
//!   same limit by the MCP service and the API's extractors).
//! - MCP routes (and any path no family owns) take the API key (full access) or an agent token
//!   (its scope); with no `Authorization` header, a caller gets full access only where
//!   authentication is not required (loopback, by default). A header that is not exactly one
//!   `Bearer <token>` (another scheme, a bare token, `Bearer:`, an empty value, two headers)
//!   is 401 like a wrong token: a typo never silently becomes anonymous access.
//!   [`Guard::authenticate`] is this rule, for a family's routes that take agents like MCP.
//! - With `auth` configured ([`ResourceServer`]), a bearer token that is neither the API key
//!   nor an agent token is verified as an OAuth access token (awaited: its keys may need
//!   fetching), the metadata at `/.well-known/oauth-protected-resource` is open, and every 401
//!   of an MCP route carries `WWW-Authenticate: Bearer resource_metadata="…"` (with
//!   `error="invalid_token"` when a token was refused); a valid token that no rule grants
//!   anything is 403 `insufficient_scope`.
//! - `/healthz` and `/readyz` are open (probes), behind the Host check. Where authentication is
//!   required, `/readyz` says only whether the gateway is ready unless the API key is presented
//!   (server names and statuses are the detail). `/metrics` is open where MCP needs no
//!   credential and takes the API key where it does.
//! - A `Host` or `Origin` that is not exactly a host name or IP literal with an optional port
//!   (`[::1].evil.com`, `evil.com#.localhost`) is not a loopback name (`authority.rs`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::Caller;
use crate::authority::{authority_allowed, host_allowed, origin_authority};
use crate::oauth::{ResourceServer, TokenRefusal};

/// Checks credentials. Implemented by the binary, which owns the token store.
pub trait Authenticator: Send + Sync + 'static {
    /// The caller an agent token stands for; `None` when it is unknown, expired or revoked.
    fn agent(&self, token: &str) -> Option<Caller>;
    /// Whether `key` is the installation's admin API key.
    fn is_admin(&self, key: &str) -> bool;
    /// Whether the caller named `name` (an agent token's name, or an OAuth subject's
    /// `oauth:…`) is still in force: a revoked or expired agent token is not, and its sessions
    /// end with their streams. An OAuth subject is until its access token expires, which each
    /// request's check sees.
    fn in_force(&self, name: &str) -> bool;
}

/// What a [`RouteGuard`] answers: `Ok` lets the request on to its route (with whatever its
/// handlers read attached), `Err` is the answer instead.
pub type Admission<'a> = Pin<Box<dyn Future<Output = Result<(), Response>> + Send + 'a>>;

/// The guard of a family of routes served beside the MCP routes: which credentials they take,
/// and anything else their requests must carry. It runs after the edge checks; `guard` lends it
/// the MCP routes' rules ([`Guard::authenticate`]) for routes that take agents alike.
pub trait RouteGuard: Send + Sync + 'static {
    fn admit<'a>(&'a self, guard: &'a Guard, request: &'a mut Request) -> Admission<'a>;
}

/// A path prefix and the guard of every route at it or under it (`/p` and `/p/…`, never
/// `/px`). A family's prefix holds no MCP route.
#[derive(Clone)]
pub struct Family {
    prefix: String,
    guard: Arc<dyn RouteGuard>,
}

impl Family {
    pub fn new(prefix: &str, guard: impl RouteGuard) -> Family {
        Family {
            prefix: prefix.trim_end_matches('/').to_owned(),
            guard: Arc::new(guard),
        }
    }

    /// Whether `path` is the family's.
    fn owns(&self, path: &str) -> bool {
        path.strip_prefix(self.prefix.as_str())
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    }
}

/// The guard's settings.
#[derive(Clone)]
pub struct Guard {
    /// Lowercase host names or `host:port` authorities accepted besides loopback names.
    pub trusted_hosts: Arc<Vec<String>>,
    /// MCP requests without a credential are refused.
    pub require_auth: bool,
    pub max_body_bytes: usize,
    pub auth: Arc<dyn Authenticator>,
    /// OAuth access tokens accepted beside agent tokens (`auth` in the config).
    pub oauth: Option<Arc<ResourceServer>>,
    /// The routes served beside the MCP routes, each family with its own guard.
    pub families: Arc<Vec<Family>>,
}

/// The guard as a middleware, in front of the router. [`crate::Door`] applies it; the MCP POSTs
/// it sends past the router pass [`Guard::admit`] themselves.
pub(crate) async fn guard(
    State(guard): State<Guard>,
    mut request: Request,
    next: Next,
) -> Response {
    match guard.admit(&mut request).await {
        Ok(()) => next.run(request).await,
        Err(answer) => answer,
    }
}

/// What a malformed `Authorization` header is told.
const MALFORMED: &str =
    "malformed Authorization header: send exactly one \"Authorization: Bearer <token>\"";

impl Guard {
    /// The checks above for one request: `Ok` lets it on to its route, with a [`Caller`] (MCP
    /// routes) or a [`ReadyDetail`] (`/readyz`) attached, or whatever a family's guard
    /// attaches; `Err` is the answer instead (a refusal, or the OAuth metadata).
    pub(crate) async fn admit(&self, request: &mut Request) -> Result<(), Response> {
        if let Some(refusal) = self.check_edge(request.headers()) {
            return Err(refusal);
        }
        let path = request.uri().path();
        match self.families.iter().find(|family| family.owns(path)) {
            Some(family) => family.guard.admit(self, request).await,
            None => self.admit_own(request).await,
        }
    }

    /// The checks every request passes first, whatever its route: `Host`, `Origin`, the
    /// declared body length. `Some` is the refusal.
    fn check_edge(&self, headers: &HeaderMap) -> Option<Response> {
        if let Some(host) = headers.get(header::HOST) {
            let allowed = host
                .to_str()
                .ok()
                .is_some_and(|host| host_allowed(host, &self.trusted_hosts));
            if !allowed {
                return Some(refuse(
                    StatusCode::FORBIDDEN,
                    "Host not allowed (DNS rebinding protection); add it to trusted_hosts",
                ));
            }
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let allowed = origin
                .to_str()
                .ok()
                .and_then(origin_authority)
                .is_some_and(|authority| self.authority_allowed(authority));
            if !allowed {
                return Some(refuse(StatusCode::FORBIDDEN, "Origin not allowed"));
            }
        }
        if declared_length(headers).is_some_and(|n| n > self.max_body_bytes as u64) {
            return Some(refuse(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("request body over the {} byte limit", self.max_body_bytes),
            ));
        }
        None
    }

    /// Admission to the routes of this crate: the probes, the metrics, the OAuth metadata and
    /// the MCP routes (any path no family owns is judged like one).
    async fn admit_own(&self, request: &mut Request) -> Result<(), Response> {
        let path = request.uri().path();
        if path == "/healthz" {
            return Ok(());
        }
        if let Some(oauth) = &self.oauth
            && ResourceServer::is_metadata_path(path)
        {
            return Err(oauth.metadata(request.headers()));
        }
        if path == "/readyz" {
            let detail = self.ready_detail(request.headers());
            request.extensions_mut().insert(detail);
            return Ok(());
        }
        if path == "/metrics" {
            return match self.metrics_refusal(request.headers()) {
                Some(refusal) => Err(refusal),
                None => Ok(()),
            };
        }
        let caller = self.authenticate(request.headers()).await?;
        request.extensions_mut().insert(caller);
        Ok(())
    }

    /// Whether `/readyz` may name servers and statuses: to the API key, or to anyone where
    /// authentication is not required.
    fn ready_detail(&self, headers: &HeaderMap) -> ReadyDetail {
        let admin =
            matches!(credential(headers), Credential::Bearer(key) if self.auth.is_admin(key));
        ReadyDetail(admin || !self.require_auth)
    }

    /// Metrics name every server and tool: open where MCP is, the API key where auth is
    /// required. `Some` is the refusal.
    fn metrics_refusal(&self, headers: &HeaderMap) -> Option<Response> {
        match credential(headers) {
            Credential::Malformed => Some(malformed_authorization()),
            Credential::Bearer(key) if self.auth.is_admin(key) => None,
            _ if !self.require_auth => None,
            _ => Some(unauthorized(
                "metrics need the admin API key on this listener",
            )),
        }
    }

    /// The caller a request stands for by the MCP routes' rule: the API key is the local user,
    /// an agent token its caller, an OAuth access token the caller its rules make; without
    /// `Authorization`, the local user unless authentication is required. Every 401 carries the
    /// OAuth challenge when `auth` is configured.
    pub async fn authenticate(&self, headers: &HeaderMap) -> Result<Caller, Response> {
        match credential(headers) {
            Credential::Malformed => {
                Err(self.challenge(headers, Some("invalid_request"), MALFORMED))
            }
            Credential::Bearer(key) if self.auth.is_admin(key) => Ok(Caller::local()),
            Credential::Bearer(token) => match self.auth.agent(token) {
                Some(caller) => Ok(caller),
                None => access_token(self, headers, token).await,
            },
            Credential::Absent if self.require_auth => Err(self.challenge(
                headers,
                None,
                "this gateway requires a token (Authorization: Bearer)",
            )),
            Credential::Absent => Ok(Caller::local()),
        }
    }

    /// A 401 of an MCP route: with the OAuth challenge when `auth` is configured.
    fn challenge(&self, headers: &HeaderMap, error: Option<&str>, message: &str) -> Response {
        match &self.oauth {
            Some(oauth) => oauth.refusal(headers, StatusCode::UNAUTHORIZED, error, message),
            None => unauthorized(message),
        }
    }

    /// Whether an origin's authority names this gateway.
    fn authority_allowed(&self, authority: &str) -> bool {
        authority_allowed(authority, &self.trusted_hosts)
    }
}

/// A bearer token that is neither the API key nor an agent token: an OAuth access token when
/// `auth` is configured, else refused.
async fn access_token(guard: &Guard, headers: &HeaderMap, token: &str) -> Result<Caller, Response> {
    const REFUSED: &str = "invalid, expired or revoked token";
    let Some(oauth) = &guard.oauth else {
        return Err(unauthorized(REFUSED));
    };
    match oauth.tokens.verify(token).await {
        Ok(caller) => Ok(caller),
        Err(TokenRefusal::Invalid) => Err(oauth.refusal(
            headers,
            StatusCode::UNAUTHORIZED,
            Some("invalid_token"),
            REFUSED,
        )),
        Err(TokenRefusal::InsufficientScope) => Err(oauth.refusal(
            headers,
            StatusCode::FORBIDDEN,
            Some("insufficient_scope"),
            "the access token is valid, but no rule of this gateway grants it anything",
        )),
    }
}

/// Whether `/readyz` may name servers and their statuses to this request (set by the guard).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReadyDetail(pub bool);

/// What the `Authorization` header holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credential<'a> {
    /// No `Authorization` header.
    Absent,
    /// Exactly one `Bearer <token>`, the token without whitespace.
    Bearer(&'a str),
    /// Anything else: another scheme, a bare token, `Bearer:`, an empty value, two headers.
    Malformed,
}

/// Reads the `Authorization` header.
pub fn credential(headers: &HeaderMap) -> Credential<'_> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Credential::Absent;
    };
    if values.next().is_some() {
        return Credential::Malformed;
    }
    let Ok(value) = value.to_str() else {
        return Credential::Malformed;
    };
    let Some((scheme, token)) = value.trim().split_once(' ') else {
        return Credential::Malformed;
    };
    let token = token.trim_start_matches(' ');
    let token_ok = !token.is_empty() && token.chars().all(|c| c.is_ascii_graphic());
    if scheme.eq_ignore_ascii_case("bearer") && token_ok {
        Credential::Bearer(token)
    } else {
        Credential::Malformed
    }
}

/// The refusal of an `Authorization` header that is not exactly one `Bearer <token>` on a route
/// that takes only the API key: a plain 401 (an MCP route's carries the OAuth challenge:
/// [`Guard::authenticate`]).
pub fn malformed_authorization() -> Response {
    unauthorized(MALFORMED)
}

/// The `Content-Length` a request declares, when it declares one.
pub fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
}

/// A refusal: `status` with `{"error": message}`.
pub fn refuse(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(json!({"error": message}))).into_response()
}

/// A 401 with `WWW-Authenticate: Bearer`.
pub fn unauthorized(message: &str) -> Response {
    let mut response = refuse(StatusCode::UNAUTHORIZED, message);
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn with_authorization(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            if let Ok(value) = header::HeaderValue::from_str(value) {
                headers.append(header::AUTHORIZATION, value);
            }
        }
        headers
    }
    struct NoGuard;

    impl RouteGuard for NoGuard {
        fn admit<'a>(&'a self, _: &'a Guard, _: &'a mut Request) -> Admission<'a> {
            Box::pin(async { Ok(()) })
        }
    }

    #[test]
    fn a_family_owns_its_prefix_and_what_is_under_it() {
        for prefix in ["/fam", "/fam/"] {
            let family = Family::new(prefix, NoGuard);
            for path in ["/fam", "/fam/", "/fam/v1/things"] {
                assert!(family.owns(path), "{prefix} {path}");
            }
            for path in ["/famx", "/fa", "/", "/mcp/fam"] {
                assert!(!family.owns(path), "{prefix} {path}");
            }
        }
    }

    #[test]
    fn only_one_bearer_token_is_a_credential() {
        let check = |values: &[&str], expected: Credential<'_>| {
            let headers = with_authorization(values);
            assert_eq!(credential(&headers), expected, "{values:?}");
        };
        check(&[], Credential::Absent);
        check(&["Bearer abc"], Credential::Bearer("abc"));
        check(&["bearer   abc"], Credential::Bearer("abc"));
        for malformed in [
            "Basic abc",
            "Token abc",
            "abc",
            "Bearer: abc",
            "",
            "Bearer",
            "Bearer ",
            "Bearer a b",
        ] {
            check(&[malformed], Credential::Malformed);
        }
        check(&["Bearer a", "Bearer b"], Credential::Malformed);
    }
    proptest! {
        /// A well-formed bearer token, in any case of the scheme, is the credential.
        #[test]
        fn bearer_tokens_parse(token in "[A-Za-z0-9._~+/=-]{1,40}", upper in any::<bool>(), spaces in 1usize..4) {
            let scheme = if upper { "BEARER" } else { "Bearer" };
            let value = format!("{scheme}{}{token}", " ".repeat(spaces));
            let headers = with_authorization(&[&value]);
            prop_assert_eq!(credential(&headers), Credential::Bearer(&token));
        }

        /// Any other form of the header is malformed, never absent.
        #[test]
        fn other_forms_are_malformed(
            token in "[A-Za-z0-9._~+/=-]{1,40}",
            prefix in prop::sample::select(vec!["Basic ", "Token ", "", "Bearer: ", "Bearer:", "Bearer\t", "Bearerx ", "Bearer ", "Bearer x "]),
            value in "[ -~]{0,30}",
        ) {
            let form = format!("{prefix}{token}");
            let headers = with_authorization(&[&form]);
            let parsed = credential(&headers);
            if prefix == "Bearer " {
                prop_assert_eq!(parsed, Credential::Bearer(&token));
            } else {
                prop_assert_eq!(parsed, Credential::Malformed, "{}", form);
            }
            // Arbitrary text is a bearer token only when it is exactly `Bearer <token>`.
            let headers = with_authorization(&[&value]);
            match credential(&headers) {
                Credential::Bearer(t) => {
                    let trimmed = value.trim();
                    prop_assert!(trimmed.len() > 7 && trimmed[..7].eq_ignore_ascii_case("bearer "));
                    prop_assert_eq!(trimmed[7..].trim_start(), t);
                    prop_assert!(!t.contains(char::is_whitespace));
                }
                Credential::Absent => prop_assert!(false, "a header is never absent"),
                Credential::Malformed => {}
            }
        }
    }
}
