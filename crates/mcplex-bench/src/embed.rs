//! `mcplex bench embed`: what the sentence model costs, per model side by side in one run: its
//! load time and the memory it adds, how long the first embedding of a tool catalog takes, the
//! latency of one query embedding (uncached, on one thread, as a search computes it), and, with
//! two models, how close their query vectors are (the int8 built-in model against the f32 one
//! it was made from); and for the first model, the latency of simulated calls while a fresh copy
//! of it embeds the catalog, against the same calls with nothing else running.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use mcplex_config::HotSettings;
use serde_json::{Value, json};

use crate::Host;
use crate::stats::percentiles;

/// One model's figures.
struct ModelCost {
    model: String,
    load_ms: f64,
    rss_added_mib: f64,
    catalog_ms: f64,
    query_p50_ms: f64,
    query_p99_ms: f64,
    /// The query vectors of the last round, in query order.
    vectors: Vec<Arc<[f32]>>,
}

pub fn run(
    host: &Host,
    models: &[PathBuf],
    corpus: &Path,
    queries: &Path,
    rounds: usize,
    out: &Path,
) -> Result<ExitCode> {
    let corpus_text = std::fs::read_to_string(corpus)
        .with_context(|| format!("cannot read {}", corpus.display()))?;
    let tools = mcplex_fixtures::load_corpus(&corpus_text).map_err(anyhow::Error::msg)?;
    let mut by_server: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for tool in tools {
        by_server
            .entry(tool.server)
            .or_default()
            .push(tool.definition);
    }
    let queries_text = std::fs::read_to_string(queries)
        .with_context(|| format!("cannot read {}", queries.display()))?;
    let parsed: Value = serde_json::from_str(&queries_text).context("queries file is not JSON")?;
    let texts: Vec<&str> = parsed["queries"]
        .as_array()
        .context("queries file has no \"queries\" array")?
        .iter()
        .filter_map(|q| q["query"].as_str())
        .collect();
    anyhow::ensure!(!texts.is_empty(), "{} has no queries", queries.display());

    let fresh_snapshot =
        || crate::corpus_snapshot(by_server.clone(), HotSettings::default(), false);
    let mut costs = Vec::new();
    for model in models {
        costs.push(measure(host, model, &fresh_snapshot(), &texts, rounds)?);
    }
    print(&costs, snapshot_size(&by_server), texts.len(), rounds);
    // On a thread of its own: the calls get a runtime of their own, and this one is async.
    let calls = match models.first() {
        Some(model) => Some(std::thread::scope(|scope| {
            scope
                .spawn(|| calls_during_embedding(host, model, &fresh_snapshot, &texts))
                .join()
                .map_err(|_| anyhow::anyhow!("the calls' thread panicked"))?
        })?),
        None => None,
    };
    if let Some(calls) = &calls {
        println!(
            "simulated calls (a BM25 search each, on a 2-worker runtime), p50/p99 ms: idle {:.2}/{:.2}; \
             while the catalog embeds ({:.0} ms, {} calls) {:.2}/{:.2}",
            calls.idle.0,
            calls.idle.1,
            calls.embed_ms,
            calls.calls_while_embedding,
            calls.embedding.0,
            calls.embedding.1
        );
    }
    let report = json!({
        "benchmark": "embed",
        "corpus": corpus.display().to_string(),
        "tools": snapshot_size(&by_server),
        "queries": texts.len(),
        "rounds": rounds,
        "models": costs.iter().map(|c| json!({
            "model": c.model, "load_ms": c.load_ms, "rss_added_mib": c.rss_added_mib,
            "catalog_ms": c.catalog_ms, "query_p50_ms": c.query_p50_ms,
            "query_p99_ms": c.query_p99_ms,
        })).collect::<Vec<_>>(),
        "agreement": agreement(&costs).map(|(mean, min)| json!({"mean_cosine": mean, "min_cosine": min})),
        "calls_during_first_embedding": calls.map(|c| json!({
            "idle_ms": {"p50": c.idle.0, "p99": c.idle.1},
            "embedding_ms": {"p50": c.embedding.0, "p99": c.embedding.1},
            "calls": c.calls_while_embedding, "embed_ms": c.embed_ms,
        })),
    });
    crate::write_report(out, &report)?;
    Ok(ExitCode::SUCCESS)
}

fn snapshot_size(by_server: &BTreeMap<String, Vec<Value>>) -> usize {
    by_server.values().map(Vec::len).sum()
}

fn measure(
    host: &Host,
    model: &Path,
    snapshot: &mcplex_catalog::Snapshot,
    texts: &[&str],
    rounds: usize,
) -> Result<ModelCost> {
    let rss_before = rss_mib();
    let started = Instant::now();
    let semantic = (host.load_model)(model)?;
    let load_ms = started.elapsed().as_secs_f64() * 1e3;
    let rss_added_mib = rss_mib() - rss_before;
    let started = Instant::now();
    semantic.embed_now(snapshot).map_err(anyhow::Error::msg)?;
    let catalog_ms = started.elapsed().as_secs_f64() * 1e3;
    let mut samples = Vec::with_capacity(texts.len() * rounds);
    let mut vectors = Vec::new();
    for _ in 0..rounds.max(1) {
        vectors.clear();
        for text in texts {
            let started = Instant::now();
            let vector = semantic.embed_query(text).map_err(anyhow::Error::msg)?;
            samples.push(started.elapsed().as_secs_f64() * 1e3);
            vectors.push(vector);
        }
    }
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    Ok(ModelCost {
        model: semantic.model().to_owned(),
        load_ms,
        rss_added_mib,
        catalog_ms,
        query_p50_ms: at(0.5),
        query_p99_ms: at(0.99),
        vectors,
    })
}

/// Mean and smallest cosine between the first two models' vectors of the same query.
fn agreement(costs: &[ModelCost]) -> Option<(f64, f64)> {
    let [first, second, ..] = costs else {
        return None;
    };
    let cosines: Vec<f64> = first
        .vectors
        .iter()
        .zip(&second.vectors)
        .map(|(a, b)| a.iter().zip(b.iter()).map(|(x, y)| f64::from(x * y)).sum())
        .collect();
    let mean = cosines.iter().sum::<f64>() / cosines.len().max(1) as f64;
    let min = cosines.iter().copied().fold(f64::INFINITY, f64::min);
    Some((mean, min))
}

fn print(costs: &[ModelCost], tools: usize, queries: usize, rounds: usize) {
    println!("sentence model costs: {tools} tools, {queries} queries × {rounds}");
    println!(
        "{:>10} | {:>10} | {:>11} | {:>13} | {:>13} | model",
        "load ms", "RSS +MiB", "catalog ms", "query p50 ms", "query p99 ms"
    );
    for cost in costs {
        println!(
            "{:>10.0} | {:>10.0} | {:>11.0} | {:>13.2} | {:>13.2} | {}",
            cost.load_ms,
            cost.rss_added_mib,
            cost.catalog_ms,
            cost.query_p50_ms,
            cost.query_p99_ms,
            cost.model
        );
    }
    if let Some((mean, min)) = agreement(costs) {
        println!("query vectors of the first two models: cosine mean {mean:.4}, min {min:.4}");
    }
}

/// Latency of simulated calls while nothing else runs, and while a fresh copy of the model
/// embeds the catalog for the first time (as a gateway does after it starts): each call is a
/// BM25 search of the catalog (what `tool_search` does before the vectors arrive), run one at a
/// time on a two-worker tokio runtime, the shape of the gateway's.
struct CallsDuringEmbedding {
    idle: (f64, f64),
    embedding: (f64, f64),
    calls_while_embedding: usize,
    embed_ms: f64,
}

fn calls_during_embedding(
    host: &Host,
    model: &Path,
    fresh_snapshot: &dyn Fn() -> mcplex_catalog::Snapshot,
    texts: &[&str],
) -> Result<CallsDuringEmbedding> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the calls' runtime")?;
    let snapshot = Arc::new(fresh_snapshot());
    let call = |round: usize| {
        let snapshot = Arc::clone(&snapshot);
        let query = texts[round % texts.len()].to_owned();
        let started = Instant::now();
        let total = runtime.block_on(async move {
            tokio::spawn(async move { snapshot.search(&query, None, None, 15, |_| true).total })
                .await
                .unwrap_or_default()
        });
        std::hint::black_box(total);
        started.elapsed().as_secs_f64() * 1e3
    };
    let idle: Vec<f64> = (0..texts.len().max(200)).map(call).collect();
    let semantic = (host.load_model)(model)?;
    let catalog = fresh_snapshot();
    let started = Instant::now();
    let (samples, embedded) = std::thread::scope(|scope| {
        let worker = scope.spawn(|| semantic.embed_now(&catalog));
        let mut samples = Vec::new();
        while !worker.is_finished() {
            samples.push(call(samples.len()));
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let embedded = worker
            .join()
            .map_err(|_| anyhow::anyhow!("the embedding thread panicked"));
        (samples, embedded)
    });
    embedded?.map_err(anyhow::Error::msg)?;
    Ok(CallsDuringEmbedding {
        idle: percentiles(idle),
        calls_while_embedding: samples.len(),
        embedding: percentiles(samples),
        embed_ms: started.elapsed().as_secs_f64() * 1e3,
    })
}

/// This process's resident memory in MiB (0 where /proc is missing).
fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<f64>()
                .ok()
        })
        .map_or(0.0, |kib| kib / 1024.0)
}
