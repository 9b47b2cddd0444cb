//! The benchmarks behind `mcplex bench …`: measurements that print a table and write JSON.
//! Comparisons run side by side in one run, so the ratio is meaningful on a noisy 2-core
//! machine. Gateways under test are real `mcplex serve` processes of the executable the
//! [`Host`] names; the bench reaches them and their upstreams only as an MCP client of its own
//! (an `Upstreams` instance of this process, or plain HTTP), never through a gateway's insides.
//! Search and listing benchmarks build snapshots through the catalog, as the gateway does.
//!
//! A library of its own so that the gateway binary carries no benchmark code and none of its
//! dependencies (tiktoken, tempfile): `mcplex` mounts [`BenchCommand`] only in builds with its
//! `bench` feature.

mod cache;
mod cli;
mod code;
mod control;
mod embed;
mod gateway;
mod levers;
mod load;
mod overhead;
mod paired;
mod retrieval;
mod rig;
mod sandbox;
mod stats;

pub use cli::BenchCommand;

use mcplex_protocol::ServerHealth;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use mcplex_catalog::{BuildInput, CatalogCache, Snapshot, UpstreamTools, build_snapshot};
use mcplex_code::WorkerCommand;
use mcplex_config::{Config, HotSettings, ServerConfig, Transport};
use mcplex_runtime::SemanticSearch;
use serde_json::Value;

/// What the benchmarks need from the binary that runs them.
pub struct Host {
    /// The `mcplex` executable: every gateway under test is `<gateway> serve …`.
    pub gateway: PathBuf,
    /// A code_execution worker, for the engine's per-run cost measured in this process.
    pub code_worker: WorkerCommand,
    /// How often a serving gateway polls its store (reported by `bench control`).
    pub store_poll_interval: Duration,
    /// Loads the sentence model in a directory (`builtin`: the one in the binary), with its
    /// embedding worker started (`bench retrieval --model`, `bench embed`); an error in builds
    /// without semantic search.
    pub load_model: fn(&Path) -> Result<SemanticSearch>,
}

/// Runs one benchmark.
pub async fn run(command: BenchCommand, host: &Host) -> Result<ExitCode> {
    match command {
        BenchCommand::Overhead { calls, out } => overhead::run(host, calls, &out).await,
        BenchCommand::Retrieval {
            corpus,
            queries,
            model,
            sample,
            rankers,
            rounds,
            rankings,
            out,
        } => retrieval::run(
            host,
            &retrieval::RetrievalArgs {
                corpus: &corpus,
                queries: &queries,
                model: model.as_deref(),
                sample,
                rankers: &rankers,
                rounds,
                rankings,
                out: &out,
            },
        ),
        BenchCommand::Cache { corpus, turns, out } => cache::run(&corpus, turns, &out),
        BenchCommand::Embed {
            model,
            corpus,
            queries,
            rounds,
            out,
        } => embed::run(host, &model, &corpus, &queries, rounds, &out),
        BenchCommand::Code { repeats, out } => code::run(host, repeats, &out).await,
        BenchCommand::Sandbox { starts, out } => sandbox::run(host, starts, &out),
        BenchCommand::Control {
            replicas,
            rounds,
            store,
            out,
        } => control::run(host, replicas, rounds, store, &out).await,
        BenchCommand::Load {
            sessions,
            calls,
            url: Some(url),
            tool,
            out,
            ..
        } => load::run_against(&url, &tool, sessions, calls, &out).await,
        BenchCommand::Load {
            sessions,
            calls,
            corpus,
            soak,
            out,
            ..
        } => {
            let soak = soak
                .map(|s| mcplex_config::parse_duration(&s).map_err(anyhow::Error::msg))
                .transpose()?;
            load::run(
                host,
                load::LoadArgs {
                    sessions,
                    calls,
                    corpus,
                    soak,
                    out,
                },
            )
            .await
        }
    }
}

/// A snapshot of tool definitions grouped by server, every server ready, built the way the
/// gateway builds its own.
pub fn corpus_snapshot(
    by_server: BTreeMap<String, Vec<Value>>,
    hot: HotSettings,
    defer_all: bool,
) -> Snapshot {
    corpus_snapshot_deferring(by_server, hot, &|_| defer_all)
}

/// [`corpus_snapshot`] with the servers `defers` names deferred by search (`"defer": true`).
pub fn corpus_snapshot_deferring(
    by_server: BTreeMap<String, Vec<Value>>,
    hot: HotSettings,
    defers: &dyn Fn(&str) -> bool,
) -> Snapshot {
    let servers = by_server
        .keys()
        .map(|name| {
            let mut server = ServerConfig::new(
                name.clone(),
                Transport::Builtin {
                    kind: "corpus".to_owned(),
                },
            );
            server.defer = Some(defers(name));
            server
        })
        .collect();
    let config = Config::with_servers(servers);
    let upstreams: BTreeMap<String, UpstreamTools> = by_server
        .into_iter()
        .map(|(server, tools)| {
            (
                server,
                UpstreamTools {
                    status: ServerHealth::Ready,
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
