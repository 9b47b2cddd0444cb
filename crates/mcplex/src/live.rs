//! The live catalog: folds upstream events and direct-mode changes into the latest state and
//! publishes a new snapshot after each burst (events that arrive together cost one rebuild).
//! Owns the `CatalogCache`, so a rebuild compiles only schemas it has not seen.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use mcplex_catalog::{
    BuildInput, CatalogCache, Diagnostic, ServerStatus, UpstreamTools, build_snapshot,
};
use mcplex_config::Config;
use mcplex_dispatch::Gateway;
use mcplex_upstream::{UpstreamEvent, UpstreamState};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::trust::{Trust, TrustRequest};

struct Live {
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

/// What reaches the approvals from outside the catalog task.
pub struct TrustInputs {
    /// Operator requests (the management API of this gateway).
    pub requests: mpsc::Receiver<TrustRequest>,
    /// The store's write generation: when it moves, another writer (the CLI, another gateway,
    /// or this one) changed the approvals, which are reloaded from the store.
    pub store_changes: watch::Receiver<i64>,
}

/// Publishes the first snapshot (every server connecting) before returning, so readers never
/// see a catalog that lacks a configured server; then runs until every supervisor has stopped.
pub fn start(
    gateway: Arc<Gateway>,
    config: Arc<Config>,
    mut events: mpsc::UnboundedReceiver<UpstreamEvent>,
    mut configs: watch::Receiver<Arc<Config>>,
    trust: Option<Trust>,
    inputs: TrustInputs,
) -> JoinHandle<()> {
    let TrustInputs {
        mut requests,
        mut store_changes,
    } = inputs;
    configs.mark_unchanged();
    store_changes.mark_unchanged();
    let mut live = Live {
        trust,
        reported: HashSet::new(),
        gateway,
        config,
        upstreams: BTreeMap::new(),
        cache: CatalogCache::default(),
        generation: 0,
    };
    if let Some(trust) = &mut live.trust {
        trust.register(&live.config);
    }
    live.publish();
    tokio::spawn(async move {
        let mut configs_open = true;
        let mut requests_open = true;
        let mut store_open = true;
        loop {
            tokio::select! {
                changed = store_changes.changed(), if store_open => {
                    if changed.is_err() {
                        store_open = false;
                        continue;
                    }
                    let reloaded = match &mut live.trust {
                        Some(trust) => trust.reload(),
                        None => false,
                    };
                    if !reloaded {
                        continue;
                    }
                }
                request = requests.recv(), if requests_open => {
                    let Some(request) = request else {
                        requests_open = false;
                        continue;
                    };
                    let snapshot = live.gateway.snapshot();
                    match &mut live.trust {
                        Some(trust) => trust.handle(request, &live.config, &snapshot),
                        None => request.refuse("this command runs without approvals"),
                    }
                }
                event = events.recv() => {
                    let Some(event) = event else { return };
                    apply(&mut live.upstreams, event);
                    while let Ok(event) = events.try_recv() {
                        apply(&mut live.upstreams, event);
                    }
                }
                changed = configs.changed(), if configs_open => {
                    if changed.is_err() {
                        // Nobody can change the config any more; keep serving upstream events.
                        configs_open = false;
                        continue;
                    }
                    let config = configs.borrow_and_update().clone();
                    let hot = config.hot();
                    tracing::info!(
                        "config applied: direct_tool_response_mode {}, tool_response_mode {:?}, {} server(s)",
                        hot.direct_tool_response_mode.as_str(),
                        hot.tool_response_mode,
                        config.servers.len()
                    );
                    live.upstreams.retain(|name, _| config.servers.iter().any(|s| s.name == *name));
                    if let Some(trust) = &mut live.trust {
                        trust.register(&config);
                    }
                    live.config = config;
                }
            }
            live.publish();
        }
    })
}

impl Live {
    fn publish(&mut self) {
        let hot = self.config.hot();
        self.generation += 1;
        let input = BuildInput {
            config: &self.config,
            hot,
            generation: self.generation,
            approvals: self.trust.as_mut().map(Trust::approvals_mut),
        };
        let skipped_before = self.cache.skipped_validators;
        let built = build_snapshot(input, &self.upstreams, &mut self.cache);
        if let Some(trust) = &self.trust {
            trust.persist(&built.changes);
        }
        let (snapshot, diagnostics) = (built.snapshot, built.diagnostics);
        // Every rebuild sees every upstream's tools again: report only what is new, so one bad
        // schema is one warning, not one per unrelated list_changed.
        let current: HashSet<Diagnostic> = diagnostics.into_iter().collect();
        for diagnostic in current.difference(&self.reported) {
            tracing::warn!(server = %diagnostic.server, "{}", diagnostic.message);
        }
        self.reported = current;
        if self.cache.skipped_validators > skipped_before {
            tracing::warn!(
                "{} input schema(s) did not compile; calls to those tools are forwarded unvalidated",
                self.cache.skipped_validators - skipped_before
            );
        }
        tracing::debug!(
            generation = self.generation,
            tools = snapshot.tools().len(),
            "catalog snapshot published"
        );
        mcplex_telemetry::metrics().snapshot_rebuilds.inc();
        if let Some(trust) = &mut self.trust {
            trust.record(&snapshot);
        }
        self.gateway.publish(snapshot);
    }
}

fn apply(upstreams: &mut BTreeMap<String, UpstreamTools>, event: UpstreamEvent) {
    let metrics = mcplex_telemetry::metrics();
    let label = mcplex_telemetry::server(&event.server);
    let previous = upstreams.remove(&event.server);
    // A restart is a ready server that is lost; the supervisor then reconnects it.
    let was_ready = previous
        .as_ref()
        .is_some_and(|u| u.status == ServerStatus::Ready);
    if was_ready && !matches!(event.state, UpstreamState::Ready { .. }) {
        metrics.upstream_restarts.get_or_create(&label).inc();
    }
    let up = i64::from(matches!(event.state, UpstreamState::Ready { .. }));
    metrics.upstream_up.get_or_create(&label).set(up);
    let (previous_tools, previous_offer) = previous.map(|u| (u.tools, u.offer)).unwrap_or_default();
    let entry = match event.state {
        UpstreamState::Connecting => UpstreamTools {
            status: ServerStatus::Connecting,
            tools: previous_tools,
            offer: previous_offer,
        },
        UpstreamState::Ready { tools, offer } => UpstreamTools {
            status: ServerStatus::Ready,
            tools,
            offer: Arc::new(mcplex_catalog::Offer {
                capabilities: offer.capabilities.clone(),
                prompts: offer.prompts.clone(),
                resources: offer.resources.clone(),
                resource_templates: offer.resource_templates.clone(),
            }),
        },
        // Keep the last known tools and offers through an outage: listings stay stable, calls
        // fail clearly.
        UpstreamState::Failed { reason } => UpstreamTools {
            status: ServerStatus::Unhealthy { reason },
            tools: previous_tools,
            offer: previous_offer,
        },
    };
    upstreams.insert(event.server, entry);
}
