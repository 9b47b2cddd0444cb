//! The live catalog: folds upstream events into the latest tool lists and publishes a new
//! snapshot after each burst (events that arrive together cost one rebuild).

use std::collections::BTreeMap;
use std::sync::Arc;

use mcplex_catalog::{ServerStatus, UpstreamTools, build_snapshot};
use mcplex_config::Config;
use mcplex_dispatch::Gateway;
use mcplex_upstream::{UpstreamEvent, UpstreamState};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Publishes the first snapshot (every server connecting) before returning, so readers never
/// see a catalog that lacks a configured server; then runs until every supervisor has stopped.
pub fn start(
    gateway: Arc<Gateway>,
    config: Arc<Config>,
    mut events: mpsc::UnboundedReceiver<UpstreamEvent>,
) -> JoinHandle<()> {
    let mut upstreams: BTreeMap<String, UpstreamTools> = BTreeMap::new();
    let mut generation = 0u64;
    publish(&gateway, &config, &upstreams, &mut generation);
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            apply(&mut upstreams, event);
            while let Ok(event) = events.try_recv() {
                apply(&mut upstreams, event);
            }
            publish(&gateway, &config, &upstreams, &mut generation);
        }
    })
}

fn apply(upstreams: &mut BTreeMap<String, UpstreamTools>, event: UpstreamEvent) {
    let previous = upstreams
        .remove(&event.server)
        .map(|u| u.tools)
        .unwrap_or_default();
    let entry = match event.state {
        UpstreamState::Connecting => UpstreamTools {
            status: ServerStatus::Connecting,
            tools: previous,
        },
        UpstreamState::Ready { tools } => UpstreamTools {
            status: ServerStatus::Ready,
            tools,
        },
        // Keep the last known tools through an outage: listings stay stable, calls fail clearly.
        UpstreamState::Failed { reason } => UpstreamTools {
            status: ServerStatus::Unhealthy { reason },
            tools: previous,
        },
    };
    upstreams.insert(event.server, entry);
}

fn publish(
    gateway: &Gateway,
    config: &Config,
    upstreams: &BTreeMap<String, UpstreamTools>,
    generation: &mut u64,
) {
    *generation += 1;
    let (snapshot, diagnostics) = build_snapshot(config, upstreams, *generation);
    for diagnostic in diagnostics {
        tracing::warn!(server = %diagnostic.server, "{}", diagnostic.message);
    }
    tracing::debug!(
        generation = *generation,
        tools = snapshot.tools().len(),
        "catalog snapshot published"
    );
    gateway.publish(snapshot);
}
