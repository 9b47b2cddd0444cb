//! Waiting for a started core's servers, for any command that needs tools (the core itself is
//! `mcplex_runtime::Core`).

use std::collections::BTreeSet;
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use mcplex_config::Config;
use mcplex_dispatch::Gateway;
use mcplex_protocol::ServerHealth;

pub use mcplex_runtime::Core;

/// Waits until no server is still connecting for the first time, or `limit` passes. On a
/// terminal, shows which servers are still connecting.
pub async fn settle(gateway: &Gateway, limit: Duration) {
    let show = std::io::stderr().is_terminal();
    let mut changes = gateway.snapshot_changes();
    let mut shown = BTreeSet::new();
    let _ = tokio::time::timeout(limit, async {
        loop {
            let pending: BTreeSet<String> = connecting(gateway).into_iter().collect();
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

/// The servers still connecting for the first time.
fn connecting(gateway: &Gateway) -> Vec<String> {
    gateway
        .snapshot()
        .servers()
        .iter()
        .filter(|(_, view)| view.status == ServerHealth::Connecting)
        .map(|(name, _)| name.clone())
        .collect()
}

/// Logs what the startup wait holds: the servers the first listings wait for, then whether
/// they all started in time or which ones the listings went out without.
pub fn report_startup_wait(gateway: Arc<Gateway>, wait: Duration) {
    let Some((pending, _)) = gateway.startup_pending() else {
        return;
    };
    tracing::info!(
        "listings wait up to {} (startup_wait) for {} server(s) still starting: {}",
        humantime::format_duration(wait),
        pending.len(),
        pending.join(", ")
    );
    let started = std::time::Instant::now();
    tokio::spawn(async move {
        gateway.startup_settled().await;
        let late = connecting(&gateway);
        if late.is_empty() {
            tracing::info!(
                "every server started or failed after {:.1}s; listings are answered",
                started.elapsed().as_secs_f64()
            );
        } else {
            tracing::warn!(
                "startup_wait of {} is over: listings go out without {} (still starting; \
                 announced with list_changed when ready). Raise startup_wait if they are only slow",
                humantime::format_duration(wait),
                late.join(", ")
            );
        }
    });
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
