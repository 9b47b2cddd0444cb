//! OAuth logins kept in the store: [`StoreLogins`] is the `LoginStore` the gateway's upstreams
//! and `mcplex auth` share (a login serialized as JSON, sealed by the store).

use std::sync::Arc;

use mcplex_oauth::{LoginStore, Logins, StoredLogin};
use mcplex_state::Store;

/// The store as the place logins persist.
pub struct StoreLogins(pub Arc<Store>);

impl LoginStore for StoreLogins {
    fn load(&self, server: &str) -> Result<Option<StoredLogin>, String> {
        let Some(bytes) = self.0.oauth_login(server).map_err(|e| e.to_string())? else {
            return Ok(None);
        };
        // serde's message could quote the text, which holds tokens: only its category.
        serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            format!(
                "the stored login of {server:?} is unreadable ({:?}); log in again",
                e.classify()
            )
        })
    }

    fn save(&self, server: &str, login: &StoredLogin) -> Result<(), String> {
        let bytes = serde_json::to_vec(login).map_err(|e| e.to_string())?;
        self.0
            .put_oauth_login(server, &bytes)
            .map_err(|e| e.to_string())
    }
}

/// The logins of a gateway over `store`; `None` (OAuth servers then need a login that cannot
/// be made here) when no HTTP client can be built.
pub fn logins(store: Arc<Store>) -> Option<Arc<Logins>> {
    match Logins::new(Arc::new(StoreLogins(store))) {
        Ok(logins) => Some(Arc::new(logins)),
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
