//! Starting the gateway core (upstreams + live catalog) for any command that needs tools.

use std::collections::BTreeSet;
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use mcplex_catalog::ServerStatus;
use mcplex_config::Config;
use mcplex_dispatch::Gateway;
use mcplex_upstream::BuiltinConnector;
use tokio::sync::{mpsc, watch};

use crate::trust::{Trust, TrustRequest};

/// A started core: the gateway and the task that keeps its catalog current.
pub struct Core {
    pub gateway: Arc<Gateway>,
    /// The config the catalog is built from; sending a new one rebuilds the snapshot.
    pub config: watch::Sender<Arc<Config>>,
    /// Operator requests to the approvals (refused when the core runs without them).
    pub trust: mpsc::Sender<TrustRequest>,
    /// The store's write generation as last seen; a new value makes the catalog task reload
    /// the approvals from the store (written by the follower of a serving gateway).
    pub store_generation: watch::Sender<i64>,
    live: tokio::task::JoinHandle<()>,
}

impl Core {
    /// Starts every enabled server and returns at once; servers join as they connect. With
    /// `trust`, only approved servers and tools are served; without, everything is (one-shot
    /// commands and benchmarks).
    pub fn start(
        config: Config,
        builtin: Option<BuiltinConnector>,
        startup_grace: Duration,
        trust: Option<Trust>,
    ) -> Core {
        let config = Arc::new(config);
        let (events_tx, events) = mpsc::unbounded_channel();
        let gateway = Arc::new(Gateway::start(&config, builtin, events_tx, startup_grace));
        let configs = watch::Sender::new(config.clone());
        let (trust_tx, trust_rx) = mpsc::channel(16);
        let store_generation = watch::Sender::new(0);
        let live = crate::live::start(
            gateway.clone(),
            config,
            events,
            configs.subscribe(),
            trust,
            crate::live::TrustInputs {
                requests: trust_rx,
                store_changes: store_generation.subscribe(),
            },
        );
        Core {
            gateway,
            config: configs,
            trust: trust_tx,
            store_generation,
            live,
        }
    }

    /// Terminates every upstream (process groups included) and stops the catalog task.
    pub async fn shutdown(self) {
        self.gateway.shutdown().await;
        self.live.abort();
    }
}

/// Waits until no server is still connecting for the first time, or `limit` passes. On a
/// terminal, shows which servers are still connecting.
pub async fn settle(gateway: &Gateway, limit: Duration) {
    let show = std::io::stderr().is_terminal();
    let mut changes = gateway.snapshot_changes();
    let mut shown = BTreeSet::new();
    let _ = tokio::time::timeout(limit, async {
        loop {
            let pending: BTreeSet<String> = gateway
                .snapshot()
                .servers()
                .iter()
                .filter(|(_, view)| view.status == ServerStatus::Connecting)
                .map(|(name, _)| name.clone())
                .collect();
            if pending.is_empty() {
                return;
            }
            if show && pending != shown {
                eprintln!(
                    "connecting: {}",
                    pending.iter().cloned().collect::<Vec<_>>().join(", ")
                );
                shown = pending;
            }
            if changes.changed().await.is_err() {
                return;
            }
        }
    })
    .await;
}

/// The longest init timeout of the enabled servers, plus a margin: how long `settle` may wait.
pub fn settle_limit(config: &Config) -> Duration {
    config
        .servers
        .iter()
        .filter(|s| s.enabled)
        .map(|s| s.init_timeout)
        .max()
        .unwrap_or_default()
        + Duration::from_secs(1)
}
