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

use crate::AuditRecord;
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
    /// Where finished calls are reported, once the operator's audit log is attached.
    pub(crate) audit: std::sync::OnceLock<Audit>,
    /// The sentence-embedding model, once attached: searches turn hybrid.
    semantic: std::sync::OnceLock<crate::SemanticSearch>,
    /// What the last catalog build reported (set by the catalog task with each publish).
    diagnostics: ArcSwap<Vec<Diagnostic>>,
    /// Why the last edit of the config file was not applied, until a valid one is.
    refused_edit: ArcSwap<Option<String>>,
    /// The callers' limits on tool calls and their counts.
    pub(crate) limits: Arc<crate::CallLimiter>,
}

impl Gateway {
    /// Starts every enabled server of `config` (their lifecycle events go to `events`) and
    /// returns the gateway over them at once; servers join as they connect. For `startup_wait`
    /// after now, listings wait for servers that are still connecting for the first time (zero:
    /// never wait). The connections belong to the gateway: nothing else can reach them.
    pub fn start(
        config: &Config,
        builtin: Option<BuiltinConnector>,
        logins: Option<Arc<Logins>>,
        events: mpsc::UnboundedSender<UpstreamEvent>,
        startup_wait: Duration,
        isolation: Isolation,
    ) -> Gateway {
        let upstreams = Upstreams::start(config, builtin, logins, events, isolation);
        Gateway {
            snapshot: ArcSwap::from_pointee(Snapshot::empty()),
            upstreams,
            listing_version: watch::Sender::new(0),
            offers_version: watch::Sender::new(0),
            published: watch::Sender::new(0),
            settle_until: Instant::now() + startup_wait,
            audit: std::sync::OnceLock::new(),
            semantic: std::sync::OnceLock::new(),
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
        if let Some(semantic) = self.semantic.get() {
            semantic.embed_later(self.snapshot());
        }
    }

    /// Turns on hybrid search with `semantic`'s model: the current snapshot and every one
    /// published after it are embedded in the background. Once only; later calls are ignored.
    pub fn search_semantically(&self, semantic: crate::SemanticSearch) {
        if self.semantic.set(semantic).is_ok()
            && let Some(semantic) = self.semantic.get()
        {
            semantic.embed_later(self.snapshot());
        }
    }

    /// The name of the sentence model searches use, once one is set.
    pub fn semantic_model(&self) -> Option<&str> {
        self.semantic.get().map(crate::SemanticSearch::model)
    }

    /// Why the model's last pass over the catalog failed, when it did (see
    /// [`crate::SemanticSearch::embedding_failure`]).
    pub fn embedding_failure(&self) -> Option<String> {
        self.semantic.get()?.embedding_failure()
    }

    /// The embedding of a search `query` against `snapshot`: `None` (plain BM25F) without a
    /// model, before the snapshot's tools are embedded, or for a blank query.
    pub(crate) async fn query_vector(
        &self,
        snapshot: &Snapshot,
        query: &str,
    ) -> Option<Arc<[f32]>> {
        let semantic = self.semantic.get()?;
        if query.trim().is_empty() || !snapshot.has_vectors() {
            return None;
        }
        semantic.query_vector(query).await
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

    /// Reports every finished call to `records` (bounded: when the writer falls behind, records
    /// are dropped and counted, calls never wait). Argument values only with `with_arguments`.
    pub fn audit_to(&self, records: mpsc::Sender<AuditRecord>, with_arguments: bool) {
        let _ = self.audit.set(Audit {
            records,
            with_arguments,
        });
    }

    /// Terminates every upstream.
    pub async fn shutdown(&self) {
        self.upstreams.shutdown().await;
    }
}
