//! A started gateway core: the [`Gateway`] over the configured upstreams and the live catalog
//! task that keeps its snapshot current, with the channels through which the rest of the
//! process (config reload, the store follower, the management API) reaches that task.

use std::sync::Arc;
use std::time::Duration;

use mcplex_config::Config;
use mcplex_dispatch::Gateway;
use mcplex_upstream::{BuiltinConnector, Isolation, Logins};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::live::{Inputs, LiveCatalog};
use crate::trust::{Trust, TrustRequest};

/// How many operator requests may wait for the catalog task.
const PENDING_REQUESTS: usize = 16;

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
    live: JoinHandle<()>,
}

impl Core {
    /// Starts every enabled server and returns at once, with the first snapshot (every server
    /// connecting) published; servers join as they connect. With `trust`, only approved servers
    /// and tools are served; without, everything is (one-shot commands and benchmarks). For
    /// `startup_wait`, listings wait for servers still connecting (see [`Gateway::start`]).
    /// Stdio servers start in `isolation`'s sandbox; with `trust`, the ones not approved under
    /// its quarantine policy from their very first start.
    pub fn start(
        config: Config,
        builtin: Option<BuiltinConnector>,
        logins: Option<Arc<Logins>>,
        startup_wait: Duration,
        mut trust: Option<Trust>,
        isolation: Isolation,
    ) -> Core {
        let config = Arc::new(config);
        let (events_tx, events) = mpsc::unbounded_channel();
        // Registered before anything starts, so that a new server's first process is already
        // the quarantined one.
        let approved = trust.as_mut().map(|trust| {
            trust.register(&config);
            trust.approved_servers()
        });
        let gateway = Arc::new(Gateway::start(
            &config,
            builtin,
            logins,
            events_tx,
            startup_wait,
            isolation.approving(approved),
        ));
        let configs = watch::Sender::new(config.clone());
        let (trust_tx, requests) = mpsc::channel(PENDING_REQUESTS);
        let store_generation = watch::Sender::new(0);
        let live = LiveCatalog::new(gateway.clone(), config, trust);
        let inputs = Inputs {
            configs: configs.subscribe(),
            requests,
            store_changes: store_generation.subscribe(),
        };
        Core {
            live: crate::live::start(live, events, inputs),
            gateway,
            config: configs,
            trust: trust_tx,
            store_generation,
        }
    }

    /// Terminates every upstream (process groups included) and stops the catalog task.
    pub async fn shutdown(self) {
        self.gateway.shutdown().await;
        self.live.abort();
    }
}
