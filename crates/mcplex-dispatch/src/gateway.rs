//! [`Gateway`]: the published snapshot, the upstream connections it owns, and the watch
//! channels that tell surfaces when what they serve changed. The requests themselves go
//! through `call.rs` (tool calls) and `forward.rs` (everything else).

use mcplex_protocol::ServerHealth;
use std::sync::Arc;

use arc_swap::ArcSwap;
use std::time::{Duration, Instant};

use mcplex_catalog::{Diagnostic, Snapshot};
use mcplex_config::Config;
use mcplex_upstream::{
    BuiltinConnector, Isolation, Logins, ServerIsolation, UpstreamEvent, UpstreamNotice, Upstreams,
};
use tokio::sync::{broadcast, mpsc, watch};

use crate::QueryEmbedder;
use crate::accounting::Audit;

/// The live gateway: what every surface reads and calls through.
pub struct Gateway {
    snapshot: ArcSwap<Snapshot>,
    /// Private to this crate, and created by [`Gateway::start`]: every request that reaches an
    /// upstream passes [`Gateway::call`] or [`Gateway::request`].
    pub(crate) upstreams: Upstreams,
    listing_version: watch::Sender<u64>,
    /// Ticks when the served prompts, resources or templates change.
    offers_version: watch::Sender<u64>,
    published: watch::Sender<u64>,
    /// Until this instant, listings and calls of unknown names wait for servers still connecting.
    settle_until: Instant,
    /// Where finished calls are reported (`None`: no audit log).
    pub(crate) audit: Option<Audit>,
    /// The sentence-embedding model for queries (`None`: searches are BM25F); searches turn
    /// hybrid once the embedding worker attached a snapshot's vectors.
    queries: Option<Arc<QueryEmbedder>>,
    /// What the last catalog build reported (set by the catalog task with each publish).
    diagnostics: ArcSwap<Vec<Diagnostic>>,
    /// Why the last edit of the config file was not applied, until a valid one is.
    refused_edit: ArcSwap<Option<String>>,
    /// The callers' limits on tool calls and their counts.
    pub(crate) limits: Arc<crate::CallLimiter>,
}

impl Gateway {
    /// Starts every enabled server of `config` (their lifecycle events go to `events`) and
    /// returns the gateway over them at once, whole: servers join as they connect. The
    /// connections belong to the gateway: nothing else can reach them.
    pub fn start(
        config: &Config,
        events: mpsc::UnboundedSender<UpstreamEvent>,
        setup: GatewaySetup,
    ) -> Gateway {
        let GatewaySetup {
            builtin,
            logins,
            startup_wait,
            isolation,
            audit,
            queries,
        } = setup;
        let upstreams = Upstreams::start(config, builtin, logins, events, isolation);
        Gateway {
            snapshot: ArcSwap::from_pointee(Snapshot::empty()),
            upstreams,
            listing_version: watch::Sender::new(0),
            offers_version: watch::Sender::new(0),
            published: watch::Sender::new(0),
            settle_until: Instant::now() + startup_wait,
            audit,
            queries,
            diagnostics: ArcSwap::default(),
            refused_edit: ArcSwap::default(),
            limits: {
                let limits = crate::CallLimiter::default();
                limits.set_defaults(config.limits);
                Arc::new(limits)
            },
        }
    }

    /// The callers' limits on tool calls (the config's defaults are set here on every reload,
    /// the tokens' own where the tokens are loaded) and their counts.
    pub fn limits(&self) -> &Arc<crate::CallLimiter> {
        &self.limits
    }

    /// The diagnostics of the last catalog build (for the operator: `GET /api/v1/config`).
    pub fn diagnostics(&self) -> Arc<Vec<Diagnostic>> {
        self.diagnostics.load_full()
    }

    /// Records what the last catalog build reported.
    pub fn set_diagnostics(&self, diagnostics: Vec<Diagnostic>) {
        self.diagnostics.store(Arc::new(diagnostics));
    }

    /// Why the last edit of the config file was refused (`None`: the running config is the
    /// file's).
    pub fn refused_edit(&self) -> Option<String> {
        (**self.refused_edit.load()).clone()
    }

    /// Records the outcome of a re-read of the config file.
    pub fn set_refused_edit(&self, why: Option<String>) {
        self.refused_edit.store(Arc::new(why));
    }

    /// The current snapshot. Cheap; hold it for the length of one request.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot.load_full()
    }

    /// Swaps in a new snapshot. Ticks [`Gateway::listing_changes`] only when the direct listing
    /// differs, so a rebuild that changes nothing visible sends no `list_changed`.
    pub fn publish(&self, snapshot: Snapshot) {
        let previous = self.snapshot.swap(Arc::new(snapshot));
        let current = self.snapshot.load();
        if previous.direct_listing() != current.direct_listing() {
            self.listing_version.send_modify(|version| *version += 1);
        }
        if !previous.offers().same_listing(current.offers()) {
            self.offers_version.send_modify(|version| *version += 1);
        }
        self.published.send_modify(|count| *count += 1);
    }

    /// The query model's identity (`None`: searches are BM25F).
    pub fn semantic_model(&self) -> Option<&str> {
        self.queries.as_deref().map(QueryEmbedder::model)
    }

    /// The embedding of a search `query` against `snapshot`: `None` (plain BM25F) without a
    /// model, before the snapshot's tools are embedded, or for a blank query.
    pub(crate) async fn query_vector(
        &self,
        snapshot: &Snapshot,
        query: &str,
    ) -> Option<Arc<[f32]>> {
        let queries = self.queries.as_ref()?;
        if query.trim().is_empty() || !snapshot.has_vectors() {
            return None;
        }
        queries.query_vector(query).await
    }

    /// During the startup wait, waits until no server is connecting for the first time (or the
    /// wait ends). Afterwards, or with no wait, returns at once.
    pub async fn startup_settled(&self) {
        let deadline = self.settle_until;
        if Instant::now() >= deadline {
            return;
        }
        let mut changes = self.published.subscribe();
        let _ = tokio::time::timeout_at(deadline.into(), async {
            while self.startup_pending().is_some() {
                if changes.changed().await.is_err() {
                    return;
                }
            }
        })
        .await;
    }

    /// While listings are held by the startup wait: the servers they wait for (still connecting
    /// for the first time) and how long the wait may still last. `None` once nothing holds them.
    pub fn startup_pending(&self) -> Option<(Vec<String>, std::time::Duration)> {
        let left = self.settle_until.checked_duration_since(Instant::now())?;
        let snapshot = self.snapshot();
        let pending: Vec<String> = snapshot
            .servers()
            .iter()
            .filter(|(_, view)| view.status == ServerHealth::Connecting)
            .map(|(name, _)| name.clone())
            .collect();
        (!pending.is_empty()).then_some((pending, left))
    }

    /// A receiver that changes with every published snapshot (server status changes included).
    pub fn snapshot_changes(&self) -> watch::Receiver<u64> {
        self.published.subscribe()
    }

    /// A receiver that changes whenever the served prompts, resources or templates change.
    pub fn offers_changes(&self) -> watch::Receiver<u64> {
        self.offers_version.subscribe()
    }

    /// A receiver that changes whenever the direct listing changes.
    pub fn listing_changes(&self) -> watch::Receiver<u64> {
        self.listing_version.subscribe()
    }

    /// Notifications the upstreams send outside any request (`notifications/resources/updated`
    /// and the like), for the surfaces that forward them to subscribers.
    pub fn upstream_notices(&self) -> broadcast::Receiver<UpstreamNotice> {
        self.upstreams.notices()
    }

    /// Makes the running servers those of `config`: removed, disabled or changed servers are
    /// stopped, new ones started; untouched servers keep their connections.
    pub fn reconcile(&self, config: &Config) {
        self.upstreams.reconcile(config);
    }

    /// Which servers the operator approved (`None`: all): the others' processes run under the
    /// quarantine sandbox, and a change restarts the processes it concerns.
    pub fn set_approved_servers(&self, approved: Option<std::collections::HashSet<String>>) {
        self.upstreams.set_approved(approved);
    }

    /// How `server`'s process is isolated (`None`: not a process, or not started yet).
    pub fn isolation(&self, server: &str) -> Option<ServerIsolation> {
        self.upstreams.isolation(server)
    }

    /// `server`'s failures within the last ten minutes (`None`: no such server).
    pub fn failures(&self, server: &str) -> Option<mcplex_upstream::Failures> {
        self.upstreams.failures(server)
    }

    /// `server`'s events, oldest first (`None`: no such server runs).
    pub fn history(&self, server: &str) -> Option<Vec<mcplex_protocol::ServerEvent>> {
        self.upstreams.history(server)
    }

    /// Makes `server` (not running yet) start under the quarantine policy whatever the last
    /// approvals said.
    pub fn withhold_approval(&self, server: &str) {
        self.upstreams.withhold_approval(server);
    }

    /// Restarts `server`'s process or connection on this gateway; false when no such server
    /// runs.
    pub async fn restart(&self, server: &str) -> bool {
        self.upstreams.restart(server).await
    }

    /// Terminates every upstream.
    pub async fn shutdown(&self) {
        self.upstreams.shutdown().await;
    }
}

/// What a gateway is started with besides its config.
pub struct GatewaySetup {
    /// Opens in-process byte streams to built-in servers (the demo).
    pub builtin: Option<BuiltinConnector>,
    /// Where OAuth servers' tokens come from.
    pub logins: Option<Arc<Logins>>,
    /// For this long after the start, listings and calls of unknown names wait for servers
    /// still connecting for the first time (zero: never wait).
    pub startup_wait: Duration,
    /// How stdio servers are sandboxed.
    pub isolation: Isolation,
    /// Where finished requests are reported (`None`: no audit log).
    pub audit: Option<Audit>,
    /// The model queries are embedded with (`None`: searches are BM25F).
    pub queries: Option<Arc<QueryEmbedder>>,
}

impl GatewaySetup {
    /// Nothing but `isolation`: no built-in servers, logins, startup wait, audit log or model.
    pub fn new(isolation: Isolation) -> GatewaySetup {
        GatewaySetup {
            builtin: None,
            logins: None,
            startup_wait: Duration::ZERO,
            isolation,
            audit: None,
            queries: None,
        }
    }
}
