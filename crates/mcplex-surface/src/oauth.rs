//! The guard's OAuth resource-server side (RFC 9728, the MCP authorization spec): the protected
//! resource metadata at `/.well-known/oauth-protected-resource` (and its path-inserted form for
//! `/mcp`), and the `WWW-Authenticate: Bearer resource_metadata="…"` challenge on every 401 of
//! an MCP route, so a client finds the issuer from the refusal alone.
//!
//! Verifying an access token is the binary's ([`AccessTokens`]): it may fetch the issuer's keys,
//! so it is async and the guard awaits it; no request blocks a worker on network I/O.
//! The whole gateway is one protected resource, `<base>/mcp`: every MCP route (`/mcp/all`,
//! `/mcp/p/<name>`, …) lies under it, so a token bound to it is good for all of them.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::Caller;

/// The well-known path of the protected resource metadata.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// Why an access token was not accepted (the binary logs the detail, without the token).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenRefusal {
    /// Not a valid token of the configured issuer for this resource: 401 `invalid_token`.
    Invalid,
    /// Valid, but no rule grants it anything: 403 `insufficient_scope`.
    InsufficientScope,
}

/// A future that verifies one token.
pub type Verification<'a> = Pin<Box<dyn Future<Output = Result<Caller, TokenRefusal>> + Send + 'a>>;

/// Verifies OAuth access tokens. Implemented by the binary, which owns the issuer's keys.
pub trait AccessTokens: Send + Sync + 'static {
    /// The caller `token` stands for, or why it stands for none.
    fn verify<'a>(&'a self, token: &'a str) -> Verification<'a>;
}

/// What the guard needs to act as a resource server.
#[derive(Clone)]
pub struct ResourceServer {
    /// The authorization server's issuer identifier.
    pub issuer: String,
    /// The public URL of `/mcp`; `None`: `http://<Host>/mcp`.
    pub resource: Option<String>,
    /// `scopes_supported`.
    pub scopes: Vec<String>,
    pub tokens: Arc<dyn AccessTokens>,
}

impl ResourceServer {
    /// Whether `path` is one of the metadata documents this gateway serves.
    pub(crate) fn is_metadata_path(path: &str) -> bool {
        match path.strip_prefix(METADATA_PATH) {
            Some("") => true,
            Some(rest) => rest == "/mcp" || rest.starts_with("/mcp/"),
            None => false,
        }
    }

    /// The protected resource metadata document.
    pub(crate) fn metadata(&self, headers: &HeaderMap) -> Response {
        let body = json!({
            "resource": self.resource_url(headers),
            "authorization_servers": [self.issuer],
            "scopes_supported": self.scopes,
            "bearer_methods_supported": ["header"],
            "resource_name": "mcplex",
        });
        let mut response = axum::Json(body).into_response();
        response.headers_mut().insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("public, max-age=300"),
        );
        response
    }

    /// A 401 (`error` `None`: no token was presented) or a 403 (`insufficient_scope`) carrying
    /// the challenge that points at the metadata.
    pub(crate) fn refusal(
        &self,
        headers: &HeaderMap,
        status: StatusCode,
        error: Option<&str>,
        message: &str,
    ) -> Response {
        let mut challenge = format!(
            "Bearer resource_metadata=\"{}\"",
            self.metadata_url(headers)
        );
        if let Some(error) = error {
            challenge.push_str(&format!(", error=\"{error}\""));
        }
        // RFC 6750 §3.1: the scopes that would do, so a client can step up.
        let scopes: Vec<&str> = self
            .scopes
            .iter()
            .map(String::as_str)
            .filter(|s| !s.contains(['"', '\\']))
            .collect();
        if error == Some("insufficient_scope") && !scopes.is_empty() {
            challenge.push_str(&format!(", scope=\"{}\"", scopes.join(" ")));
        }
        let mut response = (status, axum::Json(json!({"error": message}))).into_response();
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }

    /// The protected resource: the configured URL, else `/mcp` on the host the client used.
    fn resource_url(&self, headers: &HeaderMap) -> String {
        if let Some(resource) = &self.resource {
            return resource.clone();
        }
        // The guard accepted this Host (loopback, an IP address or trusted: a name the requester
        // used, so these URLs go back to whoever asked); without one, loopback.
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("localhost");
        format!("http://{host}/mcp")
    }

    /// RFC 9728 §3.1: the well-known path inserted between the host and the resource's path.
    fn metadata_url(&self, headers: &HeaderMap) -> String {
        let resource = self.resource_url(headers);
        let after_scheme = resource.find("://").map_or(0, |at| at + 3);
        let path_at = resource[after_scheme..]
            .find('/')
            .map_or(resource.len(), |at| after_scheme + at);
        let (origin, path) = resource.split_at(path_at);
        let path = path.trim_end_matches('/');
        format!("{origin}{METADATA_PATH}{path}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Nobody;

    impl AccessTokens for Nobody {
        fn verify<'a>(&'a self, _: &'a str) -> Verification<'a> {
            Box::pin(async { Err(TokenRefusal::Invalid) })
        }
    }

    fn server(resource: Option<&str>) -> ResourceServer {
        ResourceServer {
            issuer: "https://id.example.com".into(),
            resource: resource.map(str::to_owned),
            scopes: vec!["mcp:read".into()],
            tokens: Arc::new(Nobody),
        }
    }

    fn host(value: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_static(value));
        headers
    }

    #[test]
    fn the_metadata_url_inserts_the_well_known_path_before_the_resource_path() {
        let headers = host("127.0.0.1:8080");
        assert_eq!(
            server(None).metadata_url(&headers),
            "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp"
        );
        let configured = server(Some("https://gw.example.com/team/mcp/"));
        assert_eq!(
            configured.metadata_url(&headers),
            "https://gw.example.com/.well-known/oauth-protected-resource/team/mcp"
        );
        assert_eq!(
            server(Some("https://gw.example.com")).metadata_url(&headers),
            "https://gw.example.com/.well-known/oauth-protected-resource"
        );
    }

    #[test]
    fn metadata_paths_are_the_root_and_the_mcp_routes() {
        for path in [
            METADATA_PATH,
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource/mcp/p/code",
        ] {
            assert!(ResourceServer::is_metadata_path(path), "{path}");
        }
        for path in [
            "/.well-known/oauth-protected-resourcex",
            "/.well-known/oauth-protected-resource/api/v1",
            "/.well-known/oauth-protected-resource/mcpx",
        ] {
            assert!(!ResourceServer::is_metadata_path(path), "{path}");
        }
    }

    #[test]
    fn a_refusal_carries_the_challenge() {
        let headers = host("localhost:9");
        let response = server(None).refusal(
            &headers,
            StatusCode::UNAUTHORIZED,
            Some("invalid_token"),
            "no",
        );
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        let challenge = response
            .headers()
            .get(header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok());
        assert_eq!(
            challenge,
            Some(
                "Bearer resource_metadata=\"http://localhost:9/.well-known/oauth-protected-resource/mcp\", error=\"invalid_token\""
            )
        );
        let response = server(None).refusal(
            &headers,
            StatusCode::FORBIDDEN,
            Some("insufficient_scope"),
            "no",
        );
        let challenge = response
            .headers()
            .get(header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        assert!(
            challenge.ends_with(", error=\"insufficient_scope\", scope=\"mcp:read\""),
            "{challenge}"
        );
    }
}
