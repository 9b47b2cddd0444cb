//! A started gateway core: the [`Gateway`] over the configured upstreams and the live catalog
//! task that keeps its snapshot current, with the channels through which the rest of the
//! process (config reload, the store follower, the management API) reaches that task.

use std::sync::Arc;

use mcplex_config::Config;
use mcplex_dispatch::{Gateway, GatewaySetup};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::live::{Inputs, LiveCatalog};
use crate::semantic::SemanticSearch;
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
    /// The search model and the worker that embeds each published snapshot (`None`: BM25F).
    pub semantic: Option<Arc<SemanticSearch>>,
    /// Whether the gateway lists `tool_search` and `call_tool`: decided once, from the config
    /// it started with (a client that listed them keeps them), for everything that applies a
    /// later config (the file reloader, the added servers' follower).
    pub search_tools_listed: bool,
    live: JoinHandle<()>,
}

impl Core {
    /// Starts every enabled server and returns at once, with the first snapshot (every server
    /// connecting) published; servers join as they connect. With `trust`, only approved servers
    /// and tools are served; without, everything is (one-shot commands and benchmarks). Stdio
    /// servers start in `setup`'s isolation; with `trust`, the ones not approved under its
    /// quarantine policy from their very first start; without, under the approvals `setup`'s
    /// isolation already holds. With `semantic`, the gateway embeds
    /// queries with its model and its worker embeds every snapshot the gateway publishes.
    pub fn start(
        config: Config,
        mut setup: GatewaySetup,
        mut trust: Option<Trust>,
        semantic: Option<SemanticSearch>,
    ) -> Core {
        let search_tools_listed = config.defers_anything();
        let config = Arc::new(config);
        let (events_tx, events) = mpsc::unbounded_channel();
        // Registered before anything starts, so that a new server's first process is already
        // the quarantined one.
        // Without `trust` the caller's isolation stands as it was given: a one-shot command
        // read the approvals from the store itself (`for_command`), and its unapproved servers
        // stay under the quarantine policy.
        if let Some(trust) = trust.as_mut() {
            trust.register(&config);
            setup.isolation = setup.isolation.approving(Some(trust.approved_servers()));
        }
        let semantic = semantic.map(Arc::new);
        if let Some(semantic) = &semantic {
            setup.queries = Some(semantic.queries());
        }
        let gateway = Arc::new(Gateway::start(&config, events_tx, setup));
        if let Some(semantic) = &semantic {
            semantic.follow(&gateway);
        }
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
            search_tools_listed,
            live: crate::live::start(live, events, inputs),
            gateway,
            config: configs,
            trust: trust_tx,
            store_generation,
            semantic,
        }
    }

    /// Terminates every upstream (process groups included) and stops the catalog task.
    pub async fn shutdown(self) {
        self.gateway.shutdown().await;
        self.live.abort();
    }
}
