//! The live catalog: folds upstream events, config changes, store changes and operator requests
//! into the latest state and publishes a new snapshot after each burst (events that arrive
//! together cost one rebuild). Owns the `CatalogCache`, so a rebuild compiles only schemas it
//! has not seen, and the running gateway's [`Trust`]. [`LiveCatalog`] is the state and its
//! steps (each testable with events made by hand); [`start`] is the task that feeds it.

use mcplex_protocol::ServerHealth;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use mcplex_catalog::{BuildInput, CatalogCache, Diagnostic, UpstreamTools, build_snapshot};
use mcplex_config::Config;
use mcplex_dispatch::Gateway;
use mcplex_upstream::{UpstreamEvent, UpstreamReport};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::trust::{Trust, TrustRequest};

/// What reaches the catalog task from outside besides upstream events.
pub struct Inputs {
    /// The config to build from; a new value (a hot reload) rebuilds the snapshot.
    pub configs: watch::Receiver<Arc<Config>>,
    /// Operator requests (the management API of this gateway).
    pub requests: mpsc::Receiver<TrustRequest>,
    /// The store's write generation: when it moves, another writer (the CLI, another gateway,
    /// or this one) changed the approvals, which are reloaded from the store.
    pub store_changes: watch::Receiver<i64>,
}

/// Publishes the first snapshot (every server connecting) before returning, so readers never
/// see a catalog that lacks a configured server; then runs until every supervisor has stopped.
pub fn start(
    mut live: LiveCatalog,
    mut events: mpsc::UnboundedReceiver<UpstreamEvent>,
    inputs: Inputs,
) -> JoinHandle<()> {
    let Inputs {
        mut configs,
        mut requests,
        mut store_changes,
    } = inputs;
    configs.mark_unchanged();
    store_changes.mark_unchanged();
    live.publish();
    tokio::spawn(async move {
        let (mut configs_open, mut requests_open, mut store_open) = (true, true, true);
        loop {
            tokio::select! {
                changed = store_changes.changed(), if store_open => {
                    if changed.is_err() {
                        store_open = false;
                        continue;
                    }
                    if !live.reload_approvals() {
                        continue;
                    }
                }
                request = requests.recv(), if requests_open => {
                    match request {
                        Some(request) => live.carry_out(request),
                        None => {
                            requests_open = false;
                            continue;
                        }
                    }
                }
                event = events.recv() => {
                    let Some(event) = event else { return };
                    live.fold(event);
                    while let Ok(event) = events.try_recv() {
                        live.fold(event);
                    }
                }
                changed = configs.changed(), if configs_open => {
                    if changed.is_err() {
                        // Nobody can change the config any more; keep serving upstream events.
                        configs_open = false;
                        continue;
                    }
                    let config = configs.borrow_and_update().clone();
                    live.apply_config(config);
                }
            }
            live.publish();
        }
    })
}

/// The catalog's inputs as last seen, and what the last build reported.
pub struct LiveCatalog {
    /// Approvals and where they are persisted; `None` serves every tool (one-shot commands).
    trust: Option<Trust>,
    /// The diagnostics of the last rebuild, already logged.
    reported: HashSet<Diagnostic>,
    gateway: Arc<Gateway>,
    config: Arc<Config>,
    upstreams: BTreeMap<String, UpstreamTools>,
    cache: CatalogCache,
    generation: u64,
}

impl LiveCatalog {
    /// The catalog of `config`, published to `gateway`; with `trust`, the configured servers are
    /// registered with the approvals at once.
    pub fn new(gateway: Arc<Gateway>, config: Arc<Config>, mut trust: Option<Trust>) -> Self {
        if let Some(trust) = &mut trust {
            trust.register(&config);
        }
        LiveCatalog {
            trust,
            reported: HashSet::new(),
            gateway,
            config,
            upstreams: BTreeMap::new(),
            cache: CatalogCache::default(),
            generation: 0,
        }
    }

    /// Takes in one upstream's new state, counting restarts and up/down in the metrics. A server
    /// that fails keeps its last known tools and offers: listings stay stable, calls fail
    /// clearly.
    pub fn fold(&mut self, event: UpstreamEvent) {
        let previous = self.upstreams.remove(&event.server);
        count(&event, previous.as_ref());
        let (tools, offer) = previous.map(|u| (u.tools, u.offer)).unwrap_or_default();
        let entry = match event.report {
            UpstreamReport::Listed { tools, offer } => UpstreamTools {
                status: ServerHealth::Ready,
                tools,
                offer,
            },
            // Unlike an outage, a missing login serves nothing: the last tools are dropped.
            UpstreamReport::Health(status @ ServerHealth::NeedsLogin { .. }) => UpstreamTools {
                status,
                tools: Arc::default(),
                offer: Arc::default(),
            },
            UpstreamReport::Health(status) => UpstreamTools {
                status,
                tools,
                offer,
            },
        };
        self.upstreams.insert(event.server, entry);
    }

    /// Builds from `config` from now on (a hot reload): forgets removed servers and registers
    /// new ones with the approvals.
    pub fn apply_config(&mut self, config: Arc<Config>) {
        let hot = config.hot();
        tracing::info!(
            "config applied: direct_tool_response_mode {}, tool_response_mode {}, {} server(s)",
            hot.direct_tool_response_mode.as_str(),
            hot.tool_response_mode.as_str(),
            config.servers.len()
        );
        self.upstreams
            .retain(|name, _| config.servers.iter().any(|s| s.name == *name));
        if let Some(trust) = &mut self.trust {
            trust.register(&config);
        }
        self.config = config;
    }

    /// Re-reads the approvals after another writer moved the store; true when they changed
    /// (the catalog must be rebuilt).
    pub fn reload_approvals(&mut self) -> bool {
        self.trust.as_mut().is_some_and(Trust::reload)
    }

    /// Carries out an operator request against the snapshot served now and replies.
    pub fn carry_out(&mut self, request: TrustRequest) {
        let Some(trust) = &mut self.trust else {
            request.refuse("this command runs without approvals");
            return;
        };
        let snapshot = self.gateway.snapshot();
        let outcome = trust.act(&request.action, &self.config, &snapshot);
        let _ = request.reply.send(outcome);
    }

    /// Builds and publishes a snapshot of what is known now; persists the pins the build made
    /// and records the definitions it saw. Logs (and returns) only the diagnostics the last
    /// build did not have, so one bad schema is one warning, not one per unrelated rebuild.
    pub fn publish(&mut self) -> Vec<Diagnostic> {
        self.generation += 1;
        let input = BuildInput {
            config: &self.config,
            hot: self.config.hot(),
            generation: self.generation,
            approvals: self.trust.as_mut().map(Trust::approvals_mut),
        };
        let skipped_before = self.cache.skipped_validators;
        let built = build_snapshot(input, &self.upstreams, &mut self.cache);
        if let Some(trust) = &self.trust {
            trust.persist(&built.changes);
        }
        let new = self.report(built.diagnostics);
        let skipped = self.cache.skipped_validators - skipped_before;
        if skipped > 0 {
            tracing::warn!(
                "{skipped} input schema(s) did not compile; calls to those tools are forwarded unvalidated"
            );
        }
        let snapshot = built.snapshot;
        tracing::debug!(
            generation = self.generation,
            tools = snapshot.tools().len(),
            "catalog snapshot published"
        );
        mcplex_telemetry::metrics().snapshot_rebuilds.inc();
        if let Some(trust) = &mut self.trust {
            trust.record(&snapshot);
            self.gateway
                .set_approved_servers(Some(trust.approved_servers()));
        }
        self.gateway.publish(snapshot);
        new
    }

    /// Logs the diagnostics not reported before, remembers this build's and gives them to the
    /// gateway for the operator.
    fn report(&mut self, diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
        let current: HashSet<Diagnostic> = diagnostics.into_iter().collect();
        let new: Vec<Diagnostic> = current.difference(&self.reported).cloned().collect();
        for diagnostic in &new {
            tracing::warn!(server = %diagnostic.server, "{}", diagnostic.message);
        }
        let mut listed: Vec<Diagnostic> = current.iter().cloned().collect();
        listed.sort_by(|a, b| (&a.server, &a.message).cmp(&(&b.server, &b.message)));
        self.gateway.set_diagnostics(listed);
        self.reported = current;
        new
    }
}

/// Counts `event` in the metrics: whether its server is up, and a restart when a ready server
/// is lost (the supervisor then reconnects it).
fn count(event: &UpstreamEvent, previous: Option<&UpstreamTools>) {
    let metrics = mcplex_telemetry::metrics();
    let label = mcplex_telemetry::server(event.server.as_str());
    let ready = matches!(event.report, UpstreamReport::Listed { .. });
    let was_ready = previous.is_some_and(|u| u.status == ServerHealth::Ready);
    if was_ready && !ready {
        metrics.upstream_restarts.get_or_create(&label).inc();
    }
    metrics
        .upstream_up
        .get_or_create(&label)
        .set(i64::from(ready));
}
