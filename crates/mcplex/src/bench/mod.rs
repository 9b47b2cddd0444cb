//! `mcplex bench …`: measurements that print a table and write JSON. Comparisons run side by
//! side in one process and one run, so the ratio is meaningful on a noisy 2-core machine.

pub mod cache;
pub mod code;
pub mod control;
pub mod load;
pub mod overhead;
pub mod retrieval;
mod rig;
mod stats;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use mcplex_catalog::{
    BuildInput, CatalogCache, ServerStatus, Snapshot, UpstreamTools, build_snapshot,
};
use mcplex_config::{Config, HotSettings, ServerConfig, Transport};
use serde_json::Value;

/// A snapshot of tool definitions grouped by server, every server ready, built the way the
/// gateway builds its own.
pub fn corpus_snapshot(
    by_server: BTreeMap<String, Vec<Value>>,
    hot: HotSettings,
    defer_all: bool,
) -> Snapshot {
    let servers = by_server
        .keys()
        .map(|name| {
            ServerConfig::new(
                name.clone(),
                Transport::Builtin {
                    kind: "corpus".to_owned(),
                },
            )
        })
        .collect();
    let mut config = Config::with_servers(servers);
    config.defer_tools = defer_all;
    let upstreams: BTreeMap<String, UpstreamTools> = by_server
        .into_iter()
        .map(|(server, tools)| {
            (
                server,
                UpstreamTools {
                    status: ServerStatus::Ready,
                    tools: Arc::new(tools),
                    offer: Arc::default(),
                },
            )
        })
        .collect();
    build_snapshot(
        BuildInput {
            config: &config,
            hot,
            generation: 1,
            approvals: None,
        },
        &upstreams,
        &mut CatalogCache::default(),
    )
    .snapshot
}

/// Writes a benchmark's JSON report, creating its directory.
pub fn write_report(out: &Path, report: &serde_json::Value) -> Result<()> {
    if let Some(parent) = out.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(out, serde_json::to_vec_pretty(report)?)
        .with_context(|| format!("cannot write {}", out.display()))?;
    println!("written: {}", out.display());
    Ok(())
}
