//! Credentials of a running gateway: the admin API key and the agent tokens, checked for every
//! HTTP request by the guards (the surface's for MCP routes, `api_guard.rs` for `/api`). Tokens
//! are looked up by their keyed hash in an in-memory copy of the store, refreshed whenever the
//! management API changes them. The dashboard's sessions are checked here too: the `/api` guard
//! asks for a session's CSRF token through [`Access::session_csrf`].

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use arc_swap::ArcSwap;
use mcplex_config::Config;
use mcplex_state::{Store, TokenRecord, now_unix};
use mcplex_surface::{Authenticator, Caller};

pub struct Access {
    store: Arc<Store>,
    /// The admin API key's verifier (its keyed hash): the gateway never needs the key itself.
    verifier: ArcSwap<String>,
    /// By HMAC.
    tokens: ArcSwap<HashMap<String, TokenRecord>>,
    profiles: HashMap<String, BTreeSet<String>>,
    /// The dashboard's logins (`/ui`).
    pub sessions: crate::ui::Sessions,
    /// Wrong keys per address at the dashboard's login.
    pub login_throttle: crate::ui::LoginThrottle,
    /// Where the tokens' own limits go when the tokens are loaded.
    limits: Arc<mcplex_dispatch::CallLimiter>,
}

impl Access {
    pub fn load(
        store: Arc<Store>,
        verifier: String,
        config: &Config,
        limits: Arc<mcplex_dispatch::CallLimiter>,
    ) -> anyhow::Result<Access> {
        let sessions = crate::ui::Sessions::new(store.clone(), &verifier);
        let access = Access {
            store,
            verifier: ArcSwap::from_pointee(verifier),
            tokens: ArcSwap::default(),
            profiles: config
                .profiles
                .iter()
                .map(|p| (p.name.clone(), p.servers.clone()))
                .collect(),
            sessions,
            login_throttle: crate::ui::LoginThrottle::default(),
            limits,
        };
        access.reload_tokens()?;
        access.sessions.reload_logouts(now_unix())?;
        Ok(access)
    }

    /// Re-reads the tokens from the store (after a create or a revoke).
    pub fn reload_tokens(&self) -> Result<(), mcplex_state::StateError> {
        let tokens: HashMap<String, TokenRecord> = self
            .store
            .tokens()?
            .into_iter()
            .map(|t| (t.mac.clone(), t))
            .collect();
        self.limits.set_own(
            tokens
                .values()
                .filter(|t| !t.spec.limits.is_empty())
                .map(|t| (t.spec.name.clone(), t.spec.limits))
                .collect(),
        );
        self.tokens.store(Arc::new(tokens));
        Ok(())
    }

    /// This gateway's answer to a CLI's `nonce`, registered as `instance` at `address`.
    pub fn identity_proof(&self, instance: &str, address: &str, nonce: &str) -> String {
        mcplex_state::identity_proof(&self.verifier.load(), instance, address, nonce)
    }

    /// Re-reads the API key's verifier (`mcplex apikey rotate` changed it): the old key and the
    /// dashboard sessions opened with it stop working.
    fn reload_admin_key(&self) -> Result<(), mcplex_state::StateError> {
        let Some(verifier) = self.store.current_admin_verifier()? else {
            return Ok(());
        };
        if **self.verifier.load() != verifier {
            tracing::info!(
                "the API key was rotated: the old one and its dashboard sessions no longer work"
            );
            self.sessions.rekey(&verifier);
            self.verifier.store(Arc::new(verifier));
        }
        Ok(())
    }

    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }
}

impl mcplex_runtime::follow::Credentials for Access {
    /// The tokens, the API key, and the dashboard sessions any gateway of the store logged out.
    fn reload_credentials(&self) -> Result<(), mcplex_state::StateError> {
        self.reload_tokens()?;
        self.reload_admin_key()?;
        self.sessions.reload_logouts(now_unix())
    }
}

impl Authenticator for Access {
    fn agent(&self, token: &str) -> Option<Caller> {
        let mac = self.store.token_mac(token);
        let tokens = self.tokens.load();
        let record = tokens.get(&mac)?;
        if !record.is_active(now_unix()) {
            return None;
        }
        let mut scope = record.scope();
        if let Some(profile) = &record.spec.profile {
            // A profile that no longer exists leaves the token with nothing, never everything.
            let empty = BTreeSet::new();
            scope = scope.within(self.profiles.get(profile).unwrap_or(&empty));
        }
        Some(Caller {
            token: Some(record.spec.name.as_str().into()),
            scope,
            credential: None,
        })
    }

    fn is_admin(&self, key: &str) -> bool {
        self.store.is_admin_key(key, &self.verifier.load())
    }

    fn in_force(&self, name: &str) -> bool {
        if name.starts_with(mcplex_state::OAUTH_CALLER_PREFIX) {
            return true;
        }
        let now = now_unix();
        self.tokens
            .load()
            .values()
            .any(|record| record.spec.name == name && record.is_active(now))
    }
}

/// The dashboard's sessions, as the `/api` guard reads them (`api_session.rs`).
impl Access {
    /// The CSRF token of the live dashboard session `id` (a `mcplex_ui` cookie's value).
    pub fn session_csrf(&self, id: &str) -> Option<String> {
        self.sessions.lookup(id, now_unix()).map(|(csrf, _)| csrf)
    }

    /// The person the live dashboard session `id` was opened for (signed in at the issuer);
    /// `None` for a session opened with the API key.
    pub fn session_person(&self, id: &str) -> Option<String> {
        self.sessions.person(id, now_unix()).map(|p| p.name)
    }

    /// The reach of the live dashboard session `id` when it is a viewer's (a person who is not
    /// an operator: read-only, within this scope); `None` for an operator's or the API key's.
    pub fn session_viewer(&self, id: &str) -> Option<mcplex_catalog::Scope> {
        self.sessions.person(id, now_unix())?.viewer_scope()
    }
}
