//! RFC 8693 token exchange for `"per_user": "token_exchange"` servers: a caller's own access
//! token (a JWT of the gateway's issuer, which the guard verified) is exchanged at the server's
//! authorization server for a token for that server, with the client and token endpoint of the
//! gateway's own login to it; no second login. That authorization server must be the gateway's
//! own issuer: a caller's token, which the gateway accepts, goes to no one else (a server could
//! otherwise name any authorization server and collect its callers' tokens). What comes back is held in memory for that caller
//! and that access token until a quarter of its life (at most a minute) before it expires: a new
//! access token of the caller (another identity, other scopes) is exchanged anew, and nothing is
//! stored (every replica exchanges for itself).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use sha2::{Digest, Sha256};

use crate::protocol::{Client, Grant, request_token};
use crate::{LoginKey, OAuthError, Secret, ServerLogin, StoredLogin, now_unix, same_issuer};

/// Exchanged tokens held at once; past it the whole table is dropped (each is one exchange away).
const MAX_HELD: usize = 10_000;

/// One caller's exchanged token.
struct Exchanged {
    /// A digest of the access token it was exchanged for.
    subject: [u8; 32],
    /// Kept as a login, for its expiry rule.
    login: StoredLogin,
}

/// The callers' exchanged tokens of a gateway.
#[derive(Default)]
pub struct Exchanges {
    /// The gateway's issuer (`auth.issuer`): the only authorization server a caller's token is
    /// sent to. `None`: no exchange.
    issuer: Option<String>,
    held: Mutex<HashMap<LoginKey, Exchanged>>,
}

impl Exchanges {
    /// Exchanges at `issuer` only (the issuer of the callers' tokens).
    pub fn at(issuer: Option<String>) -> Exchanges {
        Exchanges {
            issuer,
            held: Mutex::default(),
        }
    }

    /// The token for `caller` on `gateway`'s server: the one exchanged for `subject_token`
    /// earlier, while it lasts, else a new exchange.
    pub async fn bearer(
        &self,
        gateway: &ServerLogin,
        caller: &str,
        subject_token: &Secret,
    ) -> Result<Secret, OAuthError> {
        let key = LoginKey::caller(gateway.server(), caller);
        let subject: [u8; 32] = Sha256::digest(subject_token.expose().as_bytes()).into();
        let now = now_unix();
        if let Some(held) = self.held().get(&key)
            && held.subject == subject
            && !held.login.expiring(now)
        {
            return Ok(held.login.access_token.clone());
        }
        let base = gateway.stored().await?.ok_or_else(|| {
            OAuthError::NoLogin(format!(
                "{} exchanges its callers' tokens with the client of the gateway's own login: run `mcplex auth login {}` once",
                gateway.server(),
                gateway.server()
            ))
        })?;
        let trusted = self
            .issuer
            .as_deref()
            .filter(|issuer| same_issuer(issuer, &base.issuer));
        if trusted.is_none() {
            return Err(OAuthError::Metadata(format!(
                "{}'s authorization server {} is not the issuer of the callers' tokens ({}): a caller's token is exchanged only where it was issued",
                gateway.server(),
                mcplex_config::redact_url(&base.issuer),
                self.issuer.as_deref().map_or_else(
                    || "none: \"auth\" is not set".to_owned(),
                    mcplex_config::redact_url
                )
            )));
        }
        let client = Client {
            id: base.client_id.clone(),
            secret: base
                .client_secret
                .clone()
                .or_else(|| gateway.configured_secret().ok().flatten()),
        };
        let granted = request_token(
            gateway.http(),
            &base.token_endpoint,
            &client,
            Grant::TokenExchange { subject_token },
            &base.resource,
        )
        .await?;
        tracing::info!(server = %gateway.server(), caller, "a caller's token exchanged (RFC 8693)");
        let login = StoredLogin {
            refresh_token: None,
            ..base.renewed(granted)
        };
        let token = login.access_token.clone();
        let mut held = self.held();
        if held.len() >= MAX_HELD {
            held.clear();
        }
        held.insert(key, Exchanged { subject, login });
        Ok(token)
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<LoginKey, Exchanged>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
