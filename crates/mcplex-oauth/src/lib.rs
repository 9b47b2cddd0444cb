//! mcplex as an OAuth 2.1 client of upstream MCP servers, per server.
//!
//! Owns: discovery (the 401 `WWW-Authenticate` challenge a caller saw, protected resource metadata per
//! RFC 9728, authorization server metadata per RFC 8414 with the OpenID configuration as the
//! fallback), dynamic client registration (RFC 7591), the authorization code flow's pieces (PKCE
//! S256, `state`, `resource` per RFC 8707), the token endpoint's grants (code, refresh, client
//! credentials), one person's login in two halves ([`begin`], [`finish`]: the CLI's and the
//! dashboard's alike), and [`ServerLogin`]: one server's bearer token, refreshed before it expires and
//! once when the server refuses it, a rotated refresh token stored at once. Every secret is a
//! [`Secret`], which never prints.
//! Must not: know the store's tables (a [`LoginStore`] persists logins) or the MCP protocol.
//!
//! Written here rather than on the `oauth2` crate: that crate covers the token requests only;
//! discovery and registration, most of the work, are outside it, and the grants are a form POST
//! each over the workspace's reqwest client.

mod answer;
mod discovery;
mod error;
mod flow;
mod login;
mod pkce;
mod protocol;
mod redirects;
mod secret;

pub use answer::{MAX_ANSWER_BYTES, read_capped};
pub use discovery::{
    Discovered, discover, resource_covers, resource_metadata_of, resource_metadata_urls,
    server_metadata_urls,
};
pub use error::OAuthError;
pub use flow::{Begun, LoginTarget, PENDING_FOR_SECS, PendingLogin, begin, finish};
pub use login::{
    ConnectLinks, LoginKey, LoginStore, Logins, ServerLogin, StoredLogin, configured_secret,
    http_client,
};
pub use pkce::{Pkce, challenge_of, random_text};
pub use protocol::{
    AuthorizationRequest, Client, Grant, Granted, authorization_url, register, request_token,
};
pub use redirects::{redirect_refusal, same_origin_redirects};
pub use secret::Secret;

/// Seconds since the Unix epoch, now.
pub fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests;
