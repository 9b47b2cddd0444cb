//! OAuth logins kept in the store: [`StoreLogins`] is the `LoginStore` the gateway's upstreams
//! and `mcplex auth` share (a login serialized as JSON, sealed by the store).

use std::sync::Arc;

use mcplex_oauth::{LoginKey, LoginStore, LoginStoreError, Logins, StoredLogin};
use mcplex_state::Store;

/// The store as the place logins persist.
pub struct StoreLogins(pub Arc<Store>);

impl LoginStore for StoreLogins {
    fn load(&self, key: &LoginKey) -> Result<Option<StoredLogin>, LoginStoreError> {
        let opened = match &key.caller {
            None => self.0.oauth_login(&key.server),
            Some(caller) => self.0.caller_login(&key.server, caller),
        };
        let Some(bytes) = opened.map_err(|e| LoginStoreError::Store(e.to_string()))? else {
            return Ok(None);
        };
        // serde's message could quote the text, which holds tokens: only its category.
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| LoginStoreError::Unreadable {
                server: key.server.clone(),
                category: format!("{:?}", e.classify()),
            })
    }

    fn update(&self, key: &LoginKey, login: &StoredLogin) -> Result<bool, LoginStoreError> {
        let bytes =
            serde_json::to_vec(login).map_err(|e| LoginStoreError::Encode(e.to_string()))?;
        match &key.caller {
            None => self.0.update_oauth_login(&key.server, &bytes),
            Some(caller) => self.0.update_caller_login(&key.server, caller, &bytes),
        }
        .map_err(|e| LoginStoreError::Store(e.to_string()))
    }

    fn save(&self, key: &LoginKey, login: &StoredLogin) -> Result<(), LoginStoreError> {
        let bytes =
            serde_json::to_vec(login).map_err(|e| LoginStoreError::Encode(e.to_string()))?;
        match &key.caller {
            None => self.0.put_oauth_login(&key.server, &bytes),
            Some(caller) => self.0.put_caller_login(&key.server, caller, &bytes),
        }
        .map_err(|e| LoginStoreError::Store(e.to_string()))
    }
}

/// The logins of a gateway over `store`; `None` (OAuth servers then need a login that cannot
/// be made here) when no HTTP client can be built.
pub fn logins(store: Arc<Store>) -> Option<Arc<Logins>> {
    new_logins(store).map(Arc::new)
}

/// The logins of a gateway that serves `config`: a call to a `per_user` server by a caller
/// with no login of its own carries the link that connects it.
pub fn serving(store: Arc<Store>, config: &mcplex_config::Config) -> Option<Arc<Logins>> {
    let links = crate::connect::links(store.clone(), crate::connect::public_origin(config));
    let issuer = config.auth.as_ref().map(|auth| auth.issuer.clone());
    new_logins(store).map(|logins| Arc::new(logins.with_connect_links(links).exchanging_at(issuer)))
}

fn new_logins(store: Arc<Store>) -> Option<Logins> {
    match Logins::new(Arc::new(StoreLogins(store))) {
        Ok(logins) => Some(logins),
        Err(e) => {
            tracing::warn!("OAuth servers cannot log in: {e}");
            None
        }
    }
}

/// For a one-shot command (`call`, `tools list`): the logins in `config`'s store, when a server
/// of it may use OAuth: one that says so, or any URL server, which may ask for a login (no
/// store is opened otherwise).
pub fn for_command(config: &mcplex_config::Config) -> Option<Arc<Logins>> {
    let may_log_in = |s: &mcplex_config::ServerConfig| {
        s.oauth.is_some()
            || matches!(
                s.transport,
                mcplex_config::Transport::Http { .. } | mcplex_config::Transport::Sse { .. }
            )
    };
    if !config.servers.iter().any(may_log_in) {
        return None;
    }
    match crate::load::open_store(config) {
        Ok((store, _)) => logins(Arc::new(store)),
        Err(e) => {
            tracing::warn!("OAuth servers cannot use their logins: {e:#}");
            None
        }
    }
}
