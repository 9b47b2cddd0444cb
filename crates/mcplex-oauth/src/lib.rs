//! OAuth for mcplex, both halves, knowing neither MCP nor the store's tables.
//!
//! The client half: mcplex as an OAuth 2.1 client of upstream MCP servers, per server and, for a
//! `per_user` server, per caller.
//!
//! Owns: discovery (the 401 `WWW-Authenticate` challenge a caller saw, protected resource metadata per
//! RFC 9728, authorization server metadata per RFC 8414 with the OpenID configuration as the
//! fallback), dynamic client registration (RFC 7591), the authorization code flow's pieces (PKCE
//! S256, `state`, `resource` per RFC 8707), the token endpoint's grants (code, refresh, client
//! credentials, and RFC 8693's token exchange of a caller's own token: [`Exchanges`]), one person's login in two halves ([`begin`], [`finish`]: the CLI's and the
//! dashboard's alike), and [`ServerLogin`]: one server's bearer token, refreshed before it expires and
//! once when the server refuses it, a rotated refresh token stored at once. Every secret is a
//! [`Secret`], which never prints.
//!
//! The resource-server half: an issuer's signing keys ([`IssuerKeys`], found through the same
//! metadata discovery as an authorization server's, compared with the one [`same_issuer`]), the
//! verification of its JWTs ([`JwtVerifier`]: the gateway's access tokens and the dashboard
//! sign-in's ID tokens, one key loop), the `auth.rules` that turn claims into a scope
//! ([`Rules`]), and the rate-limited log of refusals ([`RefusalLog`]).
//!
//! Must not: know the store's tables (a [`LoginStore`] persists logins) or the MCP protocol (a
//! caller sends the ping that provokes a challenge; the binary turns claims into a caller).
//!
//! Written here rather than on other crates, after reading what they do:
//! - `oauth2` covers the token requests only; discovery and registration, most of the work, are
//!   outside it, and the grants are a form POST each over the workspace's reqwest client.
//! - rmcp's `auth` feature is an `AuthorizationManager` on `oauth2` for rmcp's own client
//!   transport, one login per manager; mcplex's upstreams are its own client, its logins are per
//!   server and per caller, sealed in a store several replicas share, renewed once on a 401 and
//!   reconciled with another replica's refresh, and begun on one replica and finished on another.
//!   Adapting its credential and state stores would keep every one of those rules here and add
//!   a dependency on the rmcp version the gateway is pinned to. It has no resource-server half.
//! - `openidconnect` would verify the sign-in's ID tokens with a JOSE stack of its own beside
//!   jsonwebtoken, which verifies the access tokens: the ID token's checks are the same key loop
//!   with another audience and a nonce.

mod answer;
mod discovery;
mod error;
mod exchange;
mod flow;
mod issuer_keys;
mod jwt;
mod login;
mod pkce;
mod protocol;
mod redirects;
mod refusals;
mod rules;
mod secret;

pub use answer::{MAX_ANSWER_BYTES, read_capped};
pub use discovery::{
    Discovered, discover, resource_covers, resource_metadata_of, resource_metadata_urls,
    same_issuer, server_metadata_urls,
};
pub use error::{AnswerError, IssuerError, JwtError, LoginStoreError, OAuthError};
pub use exchange::Exchanges;
pub use flow::{Begun, LoginTarget, PENDING_FOR_SECS, PendingLogin, begin, finish};
pub use issuer_keys::{IssuerKeys, KeySet, REFRESH_COOLDOWN};
pub use jwt::{Claims, JwtVerifier, subject_of};
pub use login::{
    ConnectLinks, LoginKey, LoginStore, Logins, ServerLogin, StoredLogin, configured_secret,
    http_client,
};
pub use pkce::{Pkce, challenge_of, random_text};
pub use protocol::{
    AuthorizationRequest, Client, Grant, Granted, authorization_url, register, request_token,
};
pub use redirects::{redirect_refusal, same_origin_redirects};
pub use refusals::RefusalLog;
pub use rules::Rules;
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
