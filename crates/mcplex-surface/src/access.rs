//! The HTTP guard in front of every route: DNS-rebinding protection (`Host` and `Origin`), the
//! request body limit, and authentication. It attaches a [`Caller`] to every MCP request it lets
//! through; the surfaces read it through [`crate::Reach`].
//!
//! - `Host` must be a loopback name or listed in `trusted_hosts`; a browser `Origin` the same.
//!   Anything else gets 403 before any handler runs.
//! - A body whose `Content-Length` exceeds the limit gets 413 (streamed bodies are cut at the
//!   same limit by the MCP service and the API's extractors).
//! - `/api/…` takes only the admin API key, but for the routes an agent uses (`agent_api`: the
//!   provider projection and calls by name), which are authenticated like MCP routes. MCP routes take the API key (full access) or an agent
//!   token (its scope); with no `Authorization` header, a caller gets full access only where
//!   authentication is not required (loopback, by default). A header that is not exactly one
//!   `Bearer <token>` (another scheme, a bare token, `Bearer:`, an empty value, two headers)
//!   is 401 like a wrong token: a typo never silently becomes anonymous access.
//! - With `auth` configured ([`ResourceServer`]), a bearer token that is neither the API key
//!   nor an agent token is verified as an OAuth access token (awaited: its keys may need
//!   fetching), the metadata at `/.well-known/oauth-protected-resource` is open, and every 401
//!   of an MCP route carries `WWW-Authenticate: Bearer resource_metadata="…"` (with
//!   `error="invalid_token"` when a token was refused); a valid token that no rule grants
//!   anything is 403 `insufficient_scope`.
//! - `/ui/…` (the dashboard) passes after the Host, Origin and body checks; its handlers ask
//!   for the login. On `/api/…`, a request without `Authorization` but with a live dashboard
//!   session cookie is the admin (state-changing methods need the session's CSRF token and an
//!   `Origin`: `cookie_session.rs`).
//! - `/healthz` and `/readyz` are open (probes), behind the Host check. Where authentication is
//!   required, `/readyz` says only whether the gateway is ready unless the API key is presented
//!   (server names and statuses are the detail). `/metrics` is open where MCP needs no
//!   credential and takes the API key where it does.
//! - A `Host` or `Origin` that is not exactly a host name or IP literal with an optional port
//!   (`[::1].evil.com`, `evil.com#.localhost`) is not a loopback name.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use mcplex_catalog::Scope;

use crate::Caller;
use crate::cookie_session::{CookieAccess, cookie_access};
use crate::oauth::{ResourceServer, TokenRefusal};

/// Checks credentials. Implemented by the binary, which owns the token store.
pub trait Authenticator: Send + Sync + 'static {
    /// The caller an agent token stands for; `None` when it is unknown, expired or revoked.
    fn agent(&self, token: &str) -> Option<Caller>;
    /// Whether `key` is the installation's admin API key.
    fn is_admin(&self, key: &str) -> bool;
    /// The CSRF token of the dashboard session `id` (a `mcplex_ui` cookie's value); `None`
    /// when no such session is live. Without a dashboard, no session ever is.
    fn session_csrf(&self, _id: &str) -> Option<String> {
        None
    }
    /// The person the live dashboard session `id` was opened for (signed in at the issuer);
    /// `None` for a session opened with the API key.
    fn session_person(&self, _id: &str) -> Option<String> {
        None
    }
    /// The reach of the live dashboard session `id` when it is a viewer's (a person who is not
    /// an operator: read-only, within this scope); `None` for an operator's or the API key's.
    fn session_viewer(&self, _id: &str) -> Option<Scope> {
        None
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

impl Guard {
    /// The checks above for one request: `Ok` lets it on to its route, with a [`Caller`] (MCP
    /// routes, the agent API) or a [`ReadyDetail`] (`/readyz`) attached; `Err` is the answer
    /// instead (a refusal, or the OAuth metadata).
    pub(crate) async fn admit(&self, request: &mut Request) -> Result<(), Response> {
        let headers = request.headers();
        if let Some(host) = headers.get(header::HOST) {
            let allowed = host
                .to_str()
                .ok()
                .is_some_and(|host| self.authority_allowed(host));
            if !allowed {
                return Err(refuse(
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
                return Err(refuse(StatusCode::FORBIDDEN, "Origin not allowed"));
            }
        }
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > self.max_body_bytes as u64) {
            return Err(refuse(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("request body over the {} byte limit", self.max_body_bytes),
            ));
        }
        let path = request.uri().path();
        // The login form is a key and a few fields: a large body there is nobody's login.
        if path == "/ui/login" && declared.is_some_and(|n| n > LOGIN_BODY_LIMIT) {
            return Err(refuse(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("a login is at most {LOGIN_BODY_LIMIT} bytes"),
            ));
        }
        // The dashboard's pages and assets hold no data; its handlers ask for the login.
        // `/api/v1/identity` takes no credential: it is how a CLI checks who answers before it
        // sends one.
        if path == "/healthz" || path == "/api/v1/identity" || is_dashboard(path) {
            return Ok(());
        }
        if let Some(oauth) = &self.oauth
            && ResourceServer::is_metadata_path(path)
        {
            return Err(oauth.metadata(request.headers()));
        }
        let credential = credential(request.headers());
        if path == "/readyz" {
            let admin = matches!(credential, Credential::Bearer(key) if self.auth.is_admin(key));
            let detail = ReadyDetail(admin || !self.require_auth);
            request.extensions_mut().insert(detail);
            return Ok(());
        }
        let credential = match credential {
            Credential::Malformed => {
                let message = "malformed Authorization header: send exactly one \"Authorization: Bearer <token>\"";
                let management = path == "/metrics"
                    || ((path == "/api" || path.starts_with("/api/")) && !agent_api(path));
                return Err(match &self.oauth {
                    Some(oauth) if !management => oauth.refusal(
                        request.headers(),
                        StatusCode::UNAUTHORIZED,
                        Some("invalid_request"),
                        message,
                    ),
                    _ => unauthorized(message),
                });
            }
            Credential::Bearer(token) => Some(token),
            Credential::Absent => None,
        };
        // A dashboard session stands for the API key on `/api/…`, and only there.
        let api = path == "/api" || path.starts_with("/api/");
        let session = if credential.is_none() && api {
            cookie_access(request.method(), request.headers(), |id| {
                self.auth.session_csrf(id)
            })
        } else {
            CookieAccess::None
        };
        match session {
            CookieAccess::Refused(why) => return Err(refuse(StatusCode::FORBIDDEN, why)),
            CookieAccess::Admin => {
                let path = path.to_owned();
                return match crate::session_access::admit(self.auth.as_ref(), request, &path) {
                    Some(refusal) => Err(refusal),
                    None => Ok(()),
                };
            }
            CookieAccess::None => {}
        }
        // Metrics name every server and tool: open where MCP is, the API key where auth is
        // required.
        if path == "/metrics" {
            return match credential {
                Some(key) if self.auth.is_admin(key) => Ok(()),
                _ if !self.require_auth => Ok(()),
                _ => Err(unauthorized(
                    "metrics need the admin API key on this listener",
                )),
            };
        }
        if api && !agent_api(path) {
            return match credential {
                Some(key) if self.auth.is_admin(key) => Ok(()),
                _ => Err(unauthorized(
                    "the management API needs the admin API key (Authorization: Bearer, from the api_key file in the data directory)",
                )),
            };
        }
        let caller = match credential {
            Some(key) if self.auth.is_admin(key) => Caller::local(),
            Some(token) => match self.auth.agent(token) {
                Some(caller) => caller,
                None => access_token(self, request.headers(), token).await?,
            },
            None if self.require_auth => {
                let message = "this gateway requires a token (Authorization: Bearer)";
                return Err(match &self.oauth {
                    Some(oauth) => {
                        oauth.refusal(request.headers(), StatusCode::UNAUTHORIZED, None, message)
                    }
                    None => unauthorized(message),
                });
            }
            None => Caller::local(),
        };
        request.extensions_mut().insert(caller);
        Ok(())
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

/// The largest body `POST /ui/login` takes.
const LOGIN_BODY_LIMIT: u64 = 8 * 1024;

/// The `/api/v1` routes that take an agent token like an MCP route (their handlers read the
/// [`Caller`] and answer within its scope): the provider projection, `POST /api/v1/call` and
/// `DELETE /api/v1/connections/{name}` (a caller forgets its own login to a `per_user` server).
fn agent_api(path: &str) -> bool {
    path.starts_with("/api/v1/projection/")
        || path == "/api/v1/call"
        || path.starts_with("/api/v1/connections/")
}

/// The dashboard's own paths (`/ui`, `/ui/…`).
fn is_dashboard(path: &str) -> bool {
    path == "/ui" || path.starts_with("/ui/")
}

/// Whether `/readyz` may name servers and their statuses to this request (set by the guard).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReadyDetail(pub bool);

impl Guard {
    /// Whether a `Host` value or an origin's authority names this gateway.
    fn authority_allowed(&self, authority: &str) -> bool {
        let authority = authority.trim();
        // Lowered only when it has capitals: every request is checked.
        let lowered;
        let authority = if authority.bytes().any(|b| b.is_ascii_uppercase()) {
            lowered = authority.to_ascii_lowercase();
            lowered.as_str()
        } else {
            authority
        };
        let Some(host) = host_of(authority) else {
            return false;
        };
        is_loopback_name(host)
            || self
                .trusted_hosts
                .iter()
                .any(|trusted| *trusted == authority || trusted == host)
    }
}

/// The host part of `host[:port]` or `[v6][:port]`; `None` when the authority is neither (text
/// after `]`, characters no host name has, an unbracketed IPv6 address).
fn host_of(authority: &str) -> Option<&str> {
    let is_port = |port: &str| port.len() <= 5 && port.chars().all(|c| c.is_ascii_digit());
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port_ok = after.is_empty() || after.strip_prefix(':').is_some_and(is_port);
        return (port_ok && host.parse::<std::net::Ipv6Addr>().is_ok()).then_some(host);
    }
    let host = match authority.rsplit_once(':') {
        Some((host, port)) if is_port(port) => host,
        Some(_) => return None,
        None => authority,
    };
    let name_like = host.split('.').all(|label| {
        !label.is_empty()
            && label
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    });
    name_like.then_some(host)
}

fn is_loopback_name(host: &str) -> bool {
    host == "localhost"
        || host.ends_with(".localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// `scheme://authority` → authority; `None` for `null`, anything without a scheme, and
/// anything with user info, a path (but `/`), a query or a fragment.
fn origin_authority(origin: &str) -> Option<&str> {
    let (scheme, rest) = origin.split_once("://")?;
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    let clean = !authority.contains(['/', '?', '#', '@', '\\']);
    (scheme_ok && clean).then_some(authority)
}

/// What the `Authorization` header holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Credential<'a> {
    /// No `Authorization` header.
    Absent,
    /// Exactly one `Bearer <token>`, the token without whitespace.
    Bearer(&'a str),
    /// Anything else: another scheme, a bare token, `Bearer:`, an empty value, two headers.
    Malformed,
}

pub(crate) fn credential(headers: &HeaderMap) -> Credential<'_> {
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

pub(crate) fn refuse(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(json!({"error": message}))).into_response()
}

fn unauthorized(message: &str) -> Response {
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

    struct NoAuth;

    impl Authenticator for NoAuth {
        fn agent(&self, _: &str) -> Option<Caller> {
            None
        }
        fn is_admin(&self, _: &str) -> bool {
            false
        }
    }

    fn guard() -> Guard {
        Guard {
            trusted_hosts: Arc::new(vec!["mcp.example.com".to_owned()]),
            require_auth: false,
            max_body_bytes: 1024,
            auth: Arc::new(NoAuth),
            oauth: None,
        }
    }

    fn with_authorization(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            if let Ok(value) = header::HeaderValue::from_str(value) {
                headers.append(header::AUTHORIZATION, value);
            }
        }
        headers
    }

    #[test]
    fn hosts_and_origins_parse() {
        assert_eq!(host_of("localhost:8080"), Some("localhost"));
        assert_eq!(host_of("[::1]:8080"), Some("::1"));
        assert_eq!(host_of("example.com"), Some("example.com"));
        assert_eq!(host_of("[::1].evil.com"), None);
        assert_eq!(host_of("[::1]evil"), None);
        assert_eq!(host_of("evil.com#.localhost"), None);
        assert!(is_loopback_name("127.0.0.1") && is_loopback_name("::1"));
        assert!(is_loopback_name("app.localhost"));
        assert!(!is_loopback_name("127.0.0.1.evil.com"));
        assert_eq!(
            origin_authority("http://localhost:3000"),
            Some("localhost:3000")
        );
        assert_eq!(origin_authority("null"), None);
        assert_eq!(origin_authority("http://evil.com@localhost"), None);
        let guard = guard();
        assert!(!guard.authority_allowed("[::1].evil.com"));
        assert!(guard.authority_allowed("[::1]:8080"));
        assert!(guard.authority_allowed("MCP.example.com:443"));
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

    fn loopback_host() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("localhost".to_owned()),
            Just("[::1]".to_owned()),
            Just("[0:0:0:0:0:0:0:1]".to_owned()),
            "[a-z][a-z0-9-]{0,8}".prop_map(|label| format!("{label}.localhost")),
            (0u8..=255, 0u8..=255, 1u8..=254).prop_map(|(a, b, c)| format!("127.{a}.{b}.{c}")),
        ]
    }

    fn port() -> impl Strategy<Value = String> {
        prop_oneof![Just(String::new()), (1u16..).prop_map(|p| format!(":{p}"))]
    }

    /// Text that turns an authority into something else: another host, user info, a path.
    fn tail() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            ".evil.com",
            "].evil.com",
            "evil",
            "@evil.com",
            "#.evil.com",
            "/evil",
            "?x",
            ":80.evil.com",
            ":http",
            " evil",
            "\\evil",
            ".",
        ])
    }

    proptest! {
        /// Every loopback name with any port is accepted, as `Host` and in an `Origin`.
        #[test]
        fn loopback_authorities_are_accepted(host in loopback_host(), port in port()) {
            let guard = guard();
            let authority = format!("{host}{port}");
            prop_assert!(guard.authority_allowed(&authority), "{authority}");
            let origin = format!("http://{authority}");
            prop_assert!(origin_authority(&origin).is_some_and(|a| guard.authority_allowed(a)));
        }

        /// A loopback name with anything appended is never accepted (the `[::1].evil.com`
        /// family), whether or not a port sits between.
        #[test]
        fn appended_text_is_never_loopback(host in loopback_host(), port in port(), tail in tail()) {
            let guard = guard();
            let authority = format!("{host}{port}{tail}");
            prop_assert!(!guard.authority_allowed(&authority), "{authority}");
            let origin = format!("http://{authority}");
            prop_assert!(!origin_authority(&origin).is_some_and(|a| guard.authority_allowed(a)), "{origin}");
        }

        /// Whatever the text, what is accepted is exactly a loopback name or a trusted host,
        /// with at most a port after it.
        #[test]
        fn accepted_authorities_are_a_name_and_a_port(text in "[a-z0-9.:\\[\\]@#/-]{0,24}") {
            let guard = guard();
            if guard.authority_allowed(&text) {
                let host = host_of(&text);
                prop_assert!(host.is_some());
                let host = host.unwrap_or_default();
                prop_assert!(is_loopback_name(host) || host == "mcp.example.com", "{text}");
                let rest = text
                    .strip_prefix('[')
                    .and_then(|t| t.strip_prefix(host))
                    .and_then(|t| t.strip_prefix(']'))
                    .or_else(|| text.strip_prefix(host))
                    .unwrap_or("x");
                prop_assert!(rest.is_empty() || rest.strip_prefix(':').is_some_and(|p| p.chars().all(|c| c.is_ascii_digit())), "{text}");
            }
        }

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
