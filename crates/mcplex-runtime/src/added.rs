//! Servers added from the dashboard, followed. The control plane holds them (every replica runs
//! them); [`AddedServers`] is this gateway's copy of the set, read at start and again whenever
//! the store's generation moves. A changed set is merged into the running config (the config
//! file keeps every name it has) and applied as a config edit is: added servers start (under
//! the quarantine policy, quarantined), removed ones stop, the others keep their connections.
//! Every valid edit of the file is merged with the set the same way (`reload.rs`), under the
//! same lock, so neither source can undo the other's change.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use mcplex_config::{Config, ServerConfig, parse_added_server, with_added};
use mcplex_dispatch::Gateway;
use mcplex_state::{StateError, Store};
use tokio::sync::watch;

/// The servers the control plane adds to the config file's, as last read.
#[derive(Clone, Default)]
pub struct AddedServers(Arc<Mutex<Vec<ServerConfig>>>);

impl AddedServers {
    /// The set as the store holds it now (rows that do not open or parse are left out and
    /// logged).
    pub fn load(store: &Store) -> Result<AddedServers, StateError> {
        let added = AddedServers::default();
        *added.lock() = read(store, &mut BTreeSet::new())?;
        Ok(added)
    }

    /// Holds the set while a config is merged and applied.
    pub fn lock(&self) -> MutexGuard<'_, Vec<ServerConfig>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `file` (a config read from the file) with the added servers merged in.
    pub fn merged(&self, file: &Config) -> Config {
        merge(file, &self.lock())
    }
}

/// `config` with `added` merged in; the names the file shadows are said in the log.
pub(crate) fn merge(config: &Config, added: &[ServerConfig]) -> Config {
    let (merged, shadowed) = with_added(config, added);
    for name in shadowed {
        tracing::warn!(
            "the server {name:?} added from the dashboard is not run: the config file has a server of that name, and the file wins"
        );
    }
    merged
}

/// Reads the added servers from `store`; a row that does not open or parse is logged once per
/// name (`reported` remembers which).
fn read(store: &Store, reported: &mut BTreeSet<String>) -> Result<Vec<ServerConfig>, StateError> {
    let mut servers = Vec::new();
    for row in store.added_servers()? {
        let parsed = match row.entry.as_deref().map(serde_json::from_slice) {
            None => Err(format!(
                "it does not open with this gateway's token key (on PostgreSQL, {} must be the same on every replica)",
                mcplex_state::TOKEN_KEY_ENV
            )),
            Some(Err(e)) => Err(format!("its entry is not JSON ({e})")),
            Some(Ok(entry)) => parse_added_server(&row.name, &entry).map_err(|e| e.to_string()),
        };
        match parsed {
            Ok(server) => {
                reported.remove(&row.name);
                servers.push(server);
            }
            Err(why) => {
                if reported.insert(row.name.clone()) {
                    tracing::error!("the added server {:?} is not run: {why}", row.name);
                }
            }
        }
    }
    Ok(servers)
}

/// Follows the store: whenever `generations` moves, the set is read again and, when it changed,
/// applied to `configs` and `gateway`'s running servers.
pub fn follow(
    store: Arc<Store>,
    mut generations: watch::Receiver<i64>,
    added: AddedServers,
    configs: watch::Sender<Arc<Config>>,
    gateway: Arc<Gateway>,
    search_tools_listed: bool,
) {
    tokio::spawn(async move {
        let mut reported = BTreeSet::new();
        while generations.changed().await.is_ok() {
            let reading = store.clone();
            let mut kept = std::mem::take(&mut reported);
            let read = tokio::task::spawn_blocking(move || {
                let servers = read(&reading, &mut kept);
                (kept, servers)
            })
            .await;
            let servers = match read {
                Ok((kept, servers)) => {
                    reported = kept;
                    servers
                }
                Err(e) => {
                    tracing::error!("reading the added servers failed: {e}");
                    continue;
                }
            };
            match servers {
                Ok(servers) => {
                    let applying = Applying {
                        configs: &configs,
                        gateway: &gateway,
                        search_tools_listed,
                    };
                    applying.apply(&added, servers);
                }
                // The follower says when the store is unreachable; the running set stays.
                Err(e) => tracing::debug!("cannot read the added servers: {e}"),
            }
        }
    });
}

/// Where a changed set is applied.
struct Applying<'a> {
    configs: &'a watch::Sender<Arc<Config>>,
    gateway: &'a Gateway,
    search_tools_listed: bool,
}

impl Applying<'_> {
    /// Replaces the set with `servers` and, when it changed, applies it to the running config
    /// as a config edit is applied (`mcplex_config::reload_listing`: what is hot, deferral as
    /// decided at start).
    fn apply(&self, added: &AddedServers, servers: Vec<ServerConfig>) {
        let mut current = added.lock();
        if *current == servers {
            return;
        }
        let names =
            |set: &[ServerConfig]| -> Vec<String> { set.iter().map(|s| s.name.clone()).collect() };
        tracing::info!(
            "servers added from the dashboard: {:?} (were {:?})",
            names(&servers),
            names(&current)
        );
        // The store quarantined each new name as it was added; the approvals are read again
        // after this, so a new name must not start under an approval it had before.
        for server in servers.iter().filter(|s| !current.contains(s)) {
            self.gateway.withhold_approval(&server.name);
        }
        *current = servers;
        let running = self.configs.borrow().clone();
        let merged = merge(&running, &current);
        let reloaded = mcplex_config::reload_listing(&running, merged, self.search_tools_listed);
        if reloaded.servers_changed() {
            self.gateway.reconcile(&reloaded.config);
        }
        self.configs.send_replace(Arc::new(reloaded.config));
    }
}
