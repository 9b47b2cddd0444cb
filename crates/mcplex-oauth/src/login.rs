//! One server's login as the gateway uses it: [`ServerLogin`] hands out the bearer token,
//! renews it before it expires (or when the server refused it), and persists every change at
//! once through a [`LoginStore`], so that a rotated refresh token is never lost and every
//! replica sees it. [`Logins`] holds one per OAuth server (and, for a `per_user` server, one
//! per caller that called it) and is told when the store changed.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use mcplex_config::{ClientSecret, OAuthConfig, OAuthGrant, ServerConfig, Transport};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::protocol::{Client, Grant, Granted, request_token};
use crate::{LoginStoreError, OAuthError, Secret, discover, now_unix};

/// A login as stored (sealed) in the store: where tokens come from, the client, the tokens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredLogin {
    /// The server URL the login was made for: a login never goes to another URL.
    pub server_url: String,
    pub issuer: String,
    pub token_endpoint: String,
    pub resource: String,
    pub client_id: String,
    /// A registered client's secret (a configured one stays in the config).
    pub client_secret: Option<Secret>,
    pub access_token: Secret,
    pub refresh_token: Option<Secret>,
    /// Unix seconds.
    pub expires_at: Option<i64>,
    pub obtained_at: i64,
    pub scope: Option<String>,
}

impl StoredLogin {
    /// `login` with what a token endpoint just granted; a refresh token not rotated is kept.
    pub fn renewed(&self, granted: Granted) -> StoredLogin {
        StoredLogin {
            access_token: granted.access_token,
            refresh_token: granted.refresh_token.or_else(|| self.refresh_token.clone()),
            expires_at: granted.expires_at,
            obtained_at: now_unix(),
            scope: granted.scope.or_else(|| self.scope.clone()),
            ..self.clone()
        }
    }

    /// Whether the access token is expired or about to: within a quarter of its lifetime (at
    /// most a minute) of `expires_at`.
    pub fn expiring(&self, now: i64) -> bool {
        self.expires_at.is_some_and(|at| {
            let margin = (at.saturating_sub(self.obtained_at) / 4).clamp(0, 60);
            now >= at.saturating_sub(margin)
        })
    }
}

/// Whose login to which server: the gateway's own (the operator's, `caller: None`), or one
/// caller's own login to a `per_user` server.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LoginKey {
    pub server: String,
    pub caller: Option<String>,
}

impl LoginKey {
    /// The gateway's own login to `server`.
    pub fn server(server: &str) -> LoginKey {
        LoginKey {
            server: server.to_owned(),
            caller: None,
        }
    }

    /// `caller`'s own login to `server`.
    pub fn caller(server: &str, caller: &str) -> LoginKey {
        LoginKey {
            server: server.to_owned(),
            caller: Some(caller.to_owned()),
        }
    }
}

/// Where logins persist. Calls block (they run on a blocking thread).
pub trait LoginStore: Send + Sync + 'static {
    fn load(&self, key: &LoginKey) -> Result<Option<StoredLogin>, LoginStoreError>;
    fn save(&self, key: &LoginKey, login: &StoredLogin) -> Result<(), LoginStoreError>;
    /// Replaces the login of `key` only if one is still stored: false when it is gone (logged
    /// out or revoked meanwhile), which a refresh must not undo.
    fn update(&self, key: &LoginKey, login: &StoredLogin) -> Result<bool, LoginStoreError>;
}

/// Makes the link a caller follows to connect its own account to a `per_user` server (the
/// gateway's `/connect` page): `(server, caller)` → URL, `None` when none can be made.
pub type ConnectLinks = Box<dyn Fn(&str, &str) -> Option<String> + Send + Sync>;

/// The bearer token of one OAuth server (for one caller, on a `per_user` server).
pub struct ServerLogin {
    name: String,
    /// The caller whose own login this is (`None`: the gateway's).
    caller: Option<String>,
    url: String,
    config: OAuthConfig,
    http: reqwest::Client,
    store: Arc<dyn LoginStore>,
    current: tokio::sync::Mutex<Option<StoredLogin>>,
    /// The store changed: read it again before the next token is handed out.
    stale: AtomicBool,
}

impl ServerLogin {
    /// The server's name.
    pub fn server(&self) -> &str {
        &self.name
    }

    /// The access token to send now: the stored one, renewed first when it is about to expire.
    pub async fn bearer(&self) -> Result<Secret, OAuthError> {
        let mut current = self.current.lock().await;
        if self.stale.swap(false, Ordering::SeqCst) || current.is_none() {
            *current = self.load().await?;
        }
        if let Some(login) = current.as_ref()
            && !login.expiring(now_unix())
        {
            return Ok(login.access_token.clone());
        }
        let renewed = self.renew(current.as_ref()).await?;
        let token = renewed.access_token.clone();
        *current = Some(renewed);
        Ok(token)
    }

    /// The HTTP client for its authorization server.
    pub(crate) fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// The login as the store holds it now (its token endpoint and client, for a token
    /// exchange made with them).
    pub async fn stored(&self) -> Result<Option<StoredLogin>, OAuthError> {
        self.load().await
    }

    /// The server refused `token` (HTTP 401): renews it once, unless it was renewed meanwhile.
    pub async fn refused(&self, token: &Secret) -> Result<Secret, OAuthError> {
        let mut current = self.current.lock().await;
        if let Some(login) = current.as_ref()
            && login.access_token != *token
        {
            return Ok(login.access_token.clone());
        }
        let mut refused = current.clone();
        if let Some(login) = refused.as_mut() {
            login.expires_at = Some(0);
        }
        let renewed = self.renew(refused.as_ref()).await?;
        let token = renewed.access_token.clone();
        *current = Some(renewed);
        Ok(token)
    }

    /// A fresh token: the store's if another process renewed it, else a refresh or client
    /// credentials grant; the result is stored before it is used.
    async fn renew(&self, held: Option<&StoredLogin>) -> Result<StoredLogin, OAuthError> {
        let stored = self.load().await?;
        if let Some(stored) = &stored
            && held.is_none_or(|h| h.access_token != stored.access_token)
            && !stored.expiring(now_unix())
        {
            return Ok(stored.clone());
        }
        // What the store no longer holds was logged out (or revoked): a person's login is not
        // brought back from the copy in memory. Client credentials need no login to start from.
        let base = stored.as_ref();
        let renewed = match self.config.grant {
            OAuthGrant::ClientCredentials => {
                let renewed = self.client_credentials(base).await?;
                self.save(&renewed).await?;
                renewed
            }
            OAuthGrant::AuthorizationCode => match self.refresh(base).await {
                // A logout or a revocation while the refresh was under way wins.
                Ok(renewed) if self.update(&renewed).await? => renewed,
                Ok(_) => return Err(self.no_login("logged out while the token was renewed")),
                Err(refused) if refused.needs_login() => {
                    return self.renewed_elsewhere(base).await?.ok_or(refused);
                }
                Err(e) => return Err(e),
            },
        };
        Ok(renewed)
    }

    /// After a refused refresh: the login another replica renewed meanwhile (it used the
    /// refresh token first, which rotation then invalidated for us), if there is one.
    async fn renewed_elsewhere(
        &self,
        base: Option<&StoredLogin>,
    ) -> Result<Option<StoredLogin>, OAuthError> {
        let stored = self.load().await?;
        Ok(stored.filter(|stored| {
            base.is_none_or(|b| b.refresh_token != stored.refresh_token)
                && !stored.expiring(now_unix())
        }))
    }

    async fn refresh(&self, base: Option<&StoredLogin>) -> Result<StoredLogin, OAuthError> {
        let login = base.ok_or_else(|| self.no_login("not logged in"))?;
        let token = login
            .refresh_token
            .as_ref()
            .ok_or_else(|| self.no_login("the login expired and there is no refresh token"))?;
        let client = self.client(login);
        let granted = request_token(
            &self.http,
            &login.token_endpoint,
            &client,
            Grant::Refresh { token },
            &login.resource,
        )
        .await?;
        tracing::info!(server = %self.name, "OAuth token refreshed");
        Ok(login.renewed(granted))
    }

    async fn client_credentials(
        &self,
        base: Option<&StoredLogin>,
    ) -> Result<StoredLogin, OAuthError> {
        let (issuer, token_endpoint, resource) = match base {
            Some(login) => (
                login.issuer.clone(),
                login.token_endpoint.clone(),
                login.resource.clone(),
            ),
            None => {
                let found = discover(&self.http, &self.url, None).await?;
                (found.issuer, found.token_endpoint, found.resource)
            }
        };
        let client = Client {
            id: self.config.client_id.clone().unwrap_or_default(),
            secret: self.configured_secret()?,
        };
        let scope = (!self.config.scopes.is_empty()).then(|| self.config.scopes.join(" "));
        let granted = request_token(
            &self.http,
            &token_endpoint,
            &client,
            Grant::ClientCredentials {
                scope: scope.as_deref(),
            },
            &resource,
        )
        .await?;
        tracing::info!(server = %self.name, "OAuth token obtained with client credentials");
        Ok(StoredLogin {
            server_url: self.url.clone(),
            issuer,
            token_endpoint,
            resource,
            client_id: client.id,
            client_secret: None,
            access_token: granted.access_token,
            refresh_token: granted.refresh_token,
            expires_at: granted.expires_at,
            obtained_at: now_unix(),
            scope: granted.scope,
        })
    }

    /// The client a stored login uses: its registered secret, else the configured one.
    fn client(&self, login: &StoredLogin) -> Client {
        Client {
            id: login.client_id.clone(),
            secret: login
                .client_secret
                .clone()
                .or_else(|| self.configured_secret().ok().flatten()),
        }
    }

    /// The config's client secret, read from the environment when it names a variable.
    pub fn configured_secret(&self) -> Result<Option<Secret>, OAuthError> {
        configured_secret(&self.config)
    }

    fn no_login(&self, why: &str) -> OAuthError {
        match &self.caller {
            None => OAuthError::NoLogin(format!("{why}: run `mcplex auth login {}`", self.name)),
            Some(caller) => OAuthError::NoLogin(format!(
                "{why}: {caller} has not connected its own account to {}",
                self.name
            )),
        }
    }

    fn key(&self) -> LoginKey {
        LoginKey {
            server: self.name.clone(),
            caller: self.caller.clone(),
        }
    }

    async fn load(&self) -> Result<Option<StoredLogin>, OAuthError> {
        let (store, key) = (self.store.clone(), self.key());
        let loaded = tokio::task::spawn_blocking(move || store.load(&key))
            .await
            .map_err(|e| OAuthError::Store(e.to_string()))?
            .map_err(|e| OAuthError::Store(e.to_string()))?;
        // A login made for another URL (the config changed) is not sent to this one.
        Ok(loaded.filter(|login| login.server_url == self.url))
    }

    async fn update(&self, login: &StoredLogin) -> Result<bool, OAuthError> {
        let (store, key, login) = (self.store.clone(), self.key(), login.clone());
        tokio::task::spawn_blocking(move || store.update(&key, &login))
            .await
            .map_err(|e| OAuthError::Store(e.to_string()))?
            .map_err(|e| OAuthError::Store(e.to_string()))
    }

    async fn save(&self, login: &StoredLogin) -> Result<(), OAuthError> {
        let (store, key, login) = (self.store.clone(), self.key(), login.clone());
        tokio::task::spawn_blocking(move || store.save(&key, &login))
            .await
            .map_err(|e| OAuthError::Store(e.to_string()))?
            .map_err(|e| OAuthError::Store(e.to_string()))
    }
}

/// `config`'s client secret, read from the environment when it names a variable.
pub fn configured_secret(config: &OAuthConfig) -> Result<Option<Secret>, OAuthError> {
    match &config.client_secret {
        None => Ok(None),
        Some(ClientSecret::Value(value)) => Ok(Some(Secret::new(value.clone()))),
        Some(ClientSecret::Env(name)) => std::env::var(name)
            .map(|value| Some(Secret::new(value)))
            .map_err(|_| {
                OAuthError::NoLogin(format!("the client secret's variable {name} is not set"))
            }),
    }
}

/// Logins held in memory at once (the gateway's and its callers').
const MAX_LOGINS_HELD: usize = 10_000;

/// The logins of every OAuth server of a gateway.
pub struct Logins {
    store: Arc<dyn LoginStore>,
    http: reqwest::Client,
    servers: Mutex<HashMap<LoginKey, Arc<ServerLogin>>>,
    changed: watch::Sender<u64>,
    connect_links: Option<ConnectLinks>,
    /// Tokens exchanged for callers' own access tokens (`"per_user": "token_exchange"`).
    exchanges: crate::Exchanges,
}

impl Logins {
    pub fn new(store: Arc<dyn LoginStore>) -> Result<Logins, OAuthError> {
        Ok(Logins {
            store,
            http: http_client()?,
            servers: Mutex::new(HashMap::new()),
            changed: watch::Sender::new(0),
            connect_links: None,
            exchanges: crate::Exchanges::default(),
        })
    }

    /// Callers' tokens exchanged for `"per_user": "token_exchange"` servers.
    pub fn exchanges(&self) -> &crate::Exchanges {
        &self.exchanges
    }

    /// These logins exchanging callers' tokens at `issuer` (the gateway's `auth.issuer`) only.
    pub fn exchanging_at(mut self, issuer: Option<String>) -> Logins {
        self.exchanges = crate::Exchanges::at(issuer);
        self
    }

    /// These logins with `links`, which make the link a caller follows to connect its own
    /// account to a `per_user` server.
    pub fn with_connect_links(mut self, links: ConnectLinks) -> Logins {
        self.connect_links = Some(links);
        self
    }

    /// The link `caller` follows to connect its own account to `server`.
    pub fn connect_link(&self, server: &str, caller: &str) -> Option<String> {
        self.connect_links.as_ref()?(server, caller)
    }

    /// `caller`'s own login to `per_user` server `server` (which names no caller's login
    /// unless its `"oauth"` says `per_user`).
    pub fn for_caller(&self, server: &ServerConfig, caller: &str) -> Option<Arc<ServerLogin>> {
        server.oauth.as_ref().filter(|oauth| oauth.own_logins())?;
        self.login(server, Some(caller))
    }

    /// The login of `server`, when it is an OAuth URL server. The same one while its URL and
    /// `"oauth"` block stay the same.
    pub fn for_server(&self, server: &ServerConfig) -> Option<Arc<ServerLogin>> {
        server.oauth.as_ref()?;
        self.for_url_server(server)
    }

    /// The login of URL server `server` whether or not its config says `"oauth"`: for a server
    /// that asked for one (HTTP 401 with a Bearer challenge), with the defaults discovery fills
    /// in (its `"oauth"` block, when there is one, as configured).
    pub fn for_url_server(&self, server: &ServerConfig) -> Option<Arc<ServerLogin>> {
        self.login(server, None)
    }

    fn login(&self, server: &ServerConfig, caller: Option<&str>) -> Option<Arc<ServerLogin>> {
        let config = server.oauth.clone().unwrap_or_default();
        let url = match &server.transport {
            Transport::Http { url, .. } | Transport::Sse { url, .. } => url.clone(),
            _ => return None,
        };
        let key = LoginKey {
            server: server.name.clone(),
            caller: caller.map(str::to_owned),
        };
        let mut servers = self.servers.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(login) = servers.get(&key)
            && login.url == url
            && login.config == config
        {
            return Some(login.clone());
        }
        let login = Arc::new(ServerLogin {
            name: server.name.clone(),
            caller: key.caller.clone(),
            url,
            config,
            http: self.http.clone(),
            store: self.store.clone(),
            current: tokio::sync::Mutex::new(None),
            stale: AtomicBool::new(false),
        });
        // Callers' logins are made on demand: past this many, the callers' are dropped (each is
        // one store read away), never the gateway's own.
        if servers.len() >= MAX_LOGINS_HELD {
            servers.retain(|key, _| key.caller.is_none());
        }
        servers.insert(key, login.clone());
        Some(login)
    }

    /// The store changed (a login, a logout, another replica's refresh): every login reads it
    /// again before its next token, and servers waiting for a login try again.
    pub fn store_changed(&self) {
        for login in self
            .servers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
        {
            login.stale.store(true, Ordering::SeqCst);
        }
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Ticks on every [`Logins::store_changed`].
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }
}

/// The HTTP client for authorization servers.
pub fn http_client() -> Result<reqwest::Client, OAuthError> {
    reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .redirect(crate::same_origin_redirects())
        .build()
        .map_err(|e| OAuthError::Unreachable(format!("cannot build the HTTP client: {e}")))
}
