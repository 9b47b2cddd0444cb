//! One person's login to one server, in two halves: [`begin`] (discovery, the client, PKCE and
//! `state` → the URL to open) and [`finish`] (the code the authorization server sent back →
//! the [`StoredLogin`]). Between them is a [`PendingLogin`], which serializes: the CLI keeps it
//! in memory while it waits on a loopback port, the gateway keeps it in the store (sealed, like
//! a login) so that the callback may reach any replica.

use mcplex_config::OAuthConfig;
use serde::{Deserialize, Serialize};
use url::Url;

use crate::{
    AuthorizationRequest, Client, Discovered, Grant, OAuthError, Pkce, Secret, StoredLogin,
    authorization_url, configured_secret, discover, now_unix, random_text, register, request_token,
};

/// How long a login may take from [`begin`] to [`finish`].
pub const PENDING_FOR_SECS: i64 = 600;

/// A login begun and not yet finished. Holds the PKCE verifier and the client's secret: kept
/// only where logins are kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingLogin {
    pub server: String,
    /// Whose own login it is, on a `per_user` server (`None`: the gateway's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
    /// What the callback's browser must show to finish it (the keyed hash of a cookie set when
    /// it began): a caller's own login finishes only in the browser that began it. Set by
    /// whoever keeps the pending login.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_to: Option<String>,
    pub server_url: String,
    /// The `state` the callback must bring back.
    pub state: String,
    pub redirect_uri: String,
    verifier: Secret,
    issuer: String,
    token_endpoint: String,
    resource: String,
    client_id: String,
    client_secret: Option<Secret>,
    /// The client was configured (its secret stays in the config, not in the login).
    configured_client: bool,
    /// Unix seconds.
    pub begun_at: i64,
}

impl PendingLogin {
    /// Still in time at `now`.
    pub fn is_fresh(&self, now: i64) -> bool {
        now >= self.begun_at && now - self.begun_at <= PENDING_FOR_SECS
    }
}

/// A login begun: what to keep, and the URL the person opens.
pub struct Begun {
    pub pending: PendingLogin,
    pub url: Url,
}

/// What a login is for and where its answer goes.
pub struct LoginTarget<'a> {
    pub server: &'a str,
    pub server_url: &'a str,
    /// The `WWW-Authenticate` of the server's 401, when the caller saw one.
    pub challenge: Option<&'a str>,
    pub redirect_uri: &'a str,
    /// The caller whose own login it is, on a `per_user` server (`None`: the gateway's).
    pub caller: Option<&'a str>,
}

/// Begins a login to `target`.
pub async fn begin(
    http: &reqwest::Client,
    target: &LoginTarget<'_>,
    oauth: &OAuthConfig,
) -> Result<Begun, OAuthError> {
    let (server, server_url, redirect_uri) =
        (target.server, target.server_url, target.redirect_uri);
    let found = discover(http, server_url, target.challenge).await?;
    let scope = scope_of(&oauth.scopes, &found);
    let client = client_for(http, oauth, &found, redirect_uri, scope.as_deref()).await?;
    let authorization_endpoint = found.authorization_endpoint.as_deref().ok_or_else(|| {
        OAuthError::Metadata(
            "the authorization server's metadata has no authorization_endpoint".into(),
        )
    })?;
    let (pkce, state) = (Pkce::generate()?, random_text(24)?);
    let url = authorization_url(&AuthorizationRequest {
        endpoint: authorization_endpoint,
        client_id: &client.id,
        redirect_uri,
        challenge: &pkce.challenge,
        state: &state,
        scope: scope.as_deref(),
        resource: &found.resource,
    })?;
    let pending = PendingLogin {
        server: server.to_owned(),
        caller: target.caller.map(str::to_owned),
        bound_to: None,
        server_url: server_url.to_owned(),
        state,
        redirect_uri: redirect_uri.to_owned(),
        verifier: pkce.verifier,
        issuer: found.issuer,
        token_endpoint: found.token_endpoint,
        resource: found.resource,
        client_id: client.id,
        client_secret: client.secret,
        configured_client: oauth.client_id.is_some(),
        begun_at: now_unix(),
    };
    Ok(Begun { pending, url })
}

/// Finishes `pending` with the `code` its callback brought: the tokens, as stored.
pub async fn finish(
    http: &reqwest::Client,
    pending: &PendingLogin,
    code: &str,
) -> Result<StoredLogin, OAuthError> {
    let client = Client {
        id: pending.client_id.clone(),
        secret: pending.client_secret.clone(),
    };
    let grant = Grant::Code {
        code,
        verifier: &pending.verifier,
        redirect_uri: &pending.redirect_uri,
    };
    let granted = request_token(
        http,
        &pending.token_endpoint,
        &client,
        grant,
        &pending.resource,
    )
    .await?;
    Ok(StoredLogin {
        server_url: pending.server_url.clone(),
        issuer: pending.issuer.clone(),
        token_endpoint: pending.token_endpoint.clone(),
        resource: pending.resource.clone(),
        client_id: pending.client_id.clone(),
        // A configured secret stays in the config; only a registered one is stored.
        client_secret: if pending.configured_client {
            None
        } else {
            pending.client_secret.clone()
        },
        access_token: granted.access_token,
        refresh_token: granted.refresh_token,
        expires_at: granted.expires_at,
        obtained_at: now_unix(),
        scope: granted.scope,
    })
}

/// The configured scopes, else those the resource lists, else none.
fn scope_of(configured: &[String], found: &Discovered) -> Option<String> {
    let scopes = if configured.is_empty() {
        &found.scopes_supported
    } else {
        configured
    };
    (!scopes.is_empty()).then(|| scopes.join(" "))
}

/// The configured client, else one registered now (RFC 7591).
async fn client_for(
    http: &reqwest::Client,
    oauth: &OAuthConfig,
    found: &Discovered,
    redirect_uri: &str,
    scope: Option<&str>,
) -> Result<Client, OAuthError> {
    if let Some(id) = &oauth.client_id {
        return Ok(Client {
            id: id.clone(),
            secret: configured_secret(oauth)?,
        });
    }
    let endpoint = found.registration_endpoint.as_deref().ok_or_else(|| {
        OAuthError::Registration(
            "the authorization server offers no dynamic client registration: register mcplex there and set \"oauth\": {\"client_id\": …}".into(),
        )
    })?;
    register(http, endpoint, Some(redirect_uri), scope).await
}
