//! The HTTP guard in front of every route: DNS-rebinding protection (`Host` and `Origin`), the
//! request body limit, and authentication. It attaches a [`Caller`] to every MCP request it lets
//! through; the surfaces read it through [`crate::Reach`].
//!
//! - `Host` must be a loopback name or listed in `trusted_hosts`; a browser `Origin` the same.
//!   Anything else gets 403 before any handler runs.
//! - A body whose `Content-Length` exceeds the limit gets 413 (streamed bodies are cut at the
//!   same limit by the MCP service and the API's extractors).
//! - `/api/…` takes only the admin API key. MCP routes take the API key (full access) or an agent
//!   token (its scope); with no credential, a caller gets full access only where
//!   authentication is not required (loopback, by default). A credential that is presented
//!   but wrong is always 401: a typo never silently becomes anonymous access.
//! - `/healthz` and `/readyz` are open (probes), behind the Host check; `/metrics` is open
//!   where MCP needs no credential and takes the API key where it does.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::Caller;

/// Checks credentials. Implemented by the binary, which owns the token store.
pub trait Authenticator: Send + Sync + 'static {
    /// The caller an agent token stands for; `None` when it is unknown, expired or revoked.
    fn agent(&self, token: &str) -> Option<Caller>;
    /// Whether `key` is the installation's admin API key.
    fn is_admin(&self, key: &str) -> bool;
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
}

/// The middleware: `axum::middleware::from_fn_with_state(guard, access::guard)`.
pub async fn guard(State(guard): State<Guard>, mut request: Request, next: Next) -> Response {
    let headers = request.headers();
    if let Some(host) = headers.get(header::HOST) {
        let allowed = host
            .to_str()
            .ok()
            .is_some_and(|host| guard.authority_allowed(host));
        if !allowed {
            return refuse(
                StatusCode::FORBIDDEN,
                "Host not allowed (DNS rebinding protection); add it to trusted_hosts",
            );
        }
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let allowed = origin
            .to_str()
            .ok()
            .and_then(origin_authority)
            .is_some_and(|authority| guard.authority_allowed(authority));
        if !allowed {
            return refuse(StatusCode::FORBIDDEN, "Origin not allowed");
        }
    }
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > guard.max_body_bytes as u64) {
        return refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("request body over the {} byte limit", guard.max_body_bytes),
        );
    }
    let path = request.uri().path();
    if path == "/healthz" || path == "/readyz" {
        return next.run(request).await;
    }
    let credential = bearer(request.headers());
    // Metrics name every server and tool: open where MCP is, the API key where auth is required.
    if path == "/metrics" {
        return match credential {
            Some(key) if guard.auth.is_admin(key) => next.run(request).await,
            _ if !guard.require_auth => next.run(request).await,
            _ => unauthorized("metrics need the admin API key on this listener"),
        };
    }
    if path == "/api" || path.starts_with("/api/") {
        return match credential {
            Some(key) if guard.auth.is_admin(key) => next.run(request).await,
            _ => unauthorized(
                "the management API needs the admin API key (Authorization: Bearer, from the api_key file in the data directory)",
            ),
        };
    }
    let caller = match credential {
        Some(key) if guard.auth.is_admin(key) => Caller::local(),
        Some(token) => match guard.auth.agent(token) {
            Some(caller) => caller,
            None => return unauthorized("invalid, expired or revoked token"),
        },
        None if guard.require_auth => {
            return unauthorized("this gateway requires a token (Authorization: Bearer)");
        }
        None => Caller::local(),
    };
    request.extensions_mut().insert(caller);
    next.run(request).await
}

impl Guard {
    /// Whether a `Host` value or an origin's authority names this gateway.
    fn authority_allowed(&self, authority: &str) -> bool {
        let authority = authority.trim().to_ascii_lowercase();
        let host = host_of(&authority);
        is_loopback_name(host)
            || self
                .trusted_hosts
                .iter()
                .any(|trusted| *trusted == authority || trusted == host)
    }
}

/// The host part of `host[:port]` or `[v6][:port]`.
fn host_of(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if port.chars().all(|c| c.is_ascii_digit()) => host,
        _ => authority,
    }
}

fn is_loopback_name(host: &str) -> bool {
    host == "localhost"
        || host.ends_with(".localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// `scheme://authority` → authority; `None` for `null` and anything without a scheme.
fn origin_authority(origin: &str) -> Option<&str> {
    let (_, rest) = origin.split_once("://")?;
    Some(rest.split('/').next().unwrap_or(rest))
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, credential) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| credential.trim())
        .filter(|c| !c.is_empty())
}

fn refuse(status: StatusCode, message: &str) -> Response {
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

    #[test]
    fn hosts_and_origins_parse() {
        assert_eq!(host_of("localhost:8080"), "localhost");
        assert_eq!(host_of("[::1]:8080"), "::1");
        assert_eq!(host_of("example.com"), "example.com");
        assert!(is_loopback_name("127.0.0.1") && is_loopback_name("::1"));
        assert!(is_loopback_name("app.localhost"));
        assert!(!is_loopback_name("127.0.0.1.evil.com"));
        assert_eq!(
            origin_authority("http://localhost:3000"),
            Some("localhost:3000")
        );
        assert_eq!(origin_authority("null"), None);
    }
}
