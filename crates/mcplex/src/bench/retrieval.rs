//! `mcplex bench retrieval --corpus F --queries Q`: ranking quality of the gateway's own search
//! over a tool corpus with graded queries (relevance ≥ 1 counts), and in-process search latency
//! at the corpus size and on a synthetic 10,000-tool fleet built by repeating the corpus.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use mcplex_catalog::Snapshot;
use mcplex_config::HotSettings;
use mcplex_fixtures::CorpusTool;
use serde_json::{Value, json};

const CUTOFFS: [usize; 3] = [1, 5, 10];
const SYNTHETIC_SIZE: usize = 10_000;
const LATENCY_ROUNDS: usize = 20;

pub fn run(corpus: &Path, queries: &Path, out: &Path) -> Result<ExitCode> {
    let corpus_text = std::fs::read_to_string(corpus)
        .with_context(|| format!("cannot read {}", corpus.display()))?;
    let tools = mcplex_fixtures::load_corpus(&corpus_text).map_err(anyhow::Error::msg)?;
    let queries_text = std::fs::read_to_string(queries)
        .with_context(|| format!("cannot read {}", queries.display()))?;
    let queries: Value = serde_json::from_str(&queries_text).context("queries file is not JSON")?;
    let queries = queries["queries"]
        .as_array()
        .context("queries file has no \"queries\" array")?;

    let snapshot = snapshot_of(&tools, 1);
    let mut sums: BTreeMap<String, f64> = BTreeMap::new();
    let mut misses = Vec::new();
    for query in queries {
        let text = query["query"].as_str().unwrap_or_default();
        let labels: HashMap<&str, f64> = query["labels"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|l| Some((l["tool_id"].as_str()?, l["relevance"].as_f64()?)))
            .filter(|(_, relevance)| *relevance >= 1.0)
            .collect();
        if labels.is_empty() {
            continue;
        }
        let ranked: Vec<String> = snapshot
            .search(text, None, 10, |_| true)
            .tools
            .iter()
            .map(|(t, _)| t.id.to_string())
            .collect();
        for k in CUTOFFS {
            let found = ranked
                .iter()
                .take(k)
                .filter(|id| labels.contains_key(id.as_str()))
                .count();
            *sums.entry(format!("recall@{k}")).or_default() += found as f64 / labels.len() as f64;
        }
        let first = ranked
            .iter()
            .position(|id| labels.contains_key(id.as_str()));
        *sums.entry("mrr".to_owned()).or_default() += first.map_or(0.0, |p| 1.0 / (p as f64 + 1.0));
        *sums.entry("ndcg@10".to_owned()).or_default() += ndcg(&ranked, &labels);
        if first.is_none_or(|p| p >= 5) {
            misses.push(json!({"query": text, "top5": ranked.iter().take(5).collect::<Vec<_>>(), "relevant": labels.keys().collect::<Vec<_>>()}));
        }
    }
    let count = queries.len().max(1) as f64;
    let quality: BTreeMap<String, f64> = sums.into_iter().map(|(k, v)| (k, v / count)).collect();

    let texts: Vec<&str> = queries.iter().filter_map(|q| q["query"].as_str()).collect();
    let at_corpus = latency(&snapshot, &texts);
    let synthetic = snapshot_of(&tools, SYNTHETIC_SIZE.div_ceil(tools.len().max(1)));
    let at_synthetic = latency(&synthetic, &texts);

    println!(
        "retrieval quality: {} queries over {} tools ({})",
        queries.len(),
        snapshot.tools().len(),
        corpus.display()
    );
    println!("{:>10} | {:>6}", "metric", "value");
    for (metric, value) in &quality {
        println!("{metric:>10} | {value:>6.3}");
    }
    println!(
        "\nsearch latency, in process ({} queries × {LATENCY_ROUNDS})",
        texts.len()
    );
    println!("{:>7} | {:>8} | {:>8}", "tools", "p50 µs", "p99 µs");
    for (size, (p50, p99)) in [
        (snapshot.tools().len(), at_corpus),
        (synthetic.tools().len(), at_synthetic),
    ] {
        println!("{size:>7} | {p50:>8.1} | {p99:>8.1}");
    }
    let report = json!({
        "benchmark": "retrieval",
        "corpus": corpus.display().to_string(),
        "queries": queries.len(),
        "tools": snapshot.tools().len(),
        "quality": quality,
        "latency_us": [
            {"tools": snapshot.tools().len(), "p50": at_corpus.0, "p99": at_corpus.1},
            {"tools": synthetic.tools().len(), "p50": at_synthetic.0, "p99": at_synthetic.1},
        ],
        "misses_at_5": misses,
    });
    super::write_report(out, &report)?;
    Ok(ExitCode::SUCCESS)
}

/// A snapshot of the corpus, repeated `copies` times under distinct server names.
fn snapshot_of(tools: &[CorpusTool], copies: usize) -> Snapshot {
    let mut by_server: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for copy in 0..copies {
        for tool in tools {
            let server = if copy == 0 {
                tool.server.clone()
            } else {
                format!("{}-{copy}", tool.server)
            };
            by_server
                .entry(server)
                .or_default()
                .push(tool.definition.clone());
        }
    }
    super::corpus_snapshot(by_server, HotSettings::default(), false)
}

fn latency(snapshot: &Snapshot, queries: &[&str]) -> (f64, f64) {
    let mut samples = Vec::with_capacity(queries.len() * LATENCY_ROUNDS);
    for _ in 0..LATENCY_ROUNDS {
        for query in queries {
            let started = Instant::now();
            let matches = snapshot.search(query, None, 15, |_| true);
            std::hint::black_box(matches.total);
            samples.push(started.elapsed().as_secs_f64() * 1e6);
        }
    }
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| {
        samples
            .get(((samples.len() as f64 - 1.0) * q).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    (at(0.5), at(0.99))
}

fn ndcg(ranked: &[String], labels: &HashMap<&str, f64>) -> f64 {
    let gain = |relevance: f64| 2f64.powf(relevance) - 1.0;
    let dcg: f64 = ranked
        .iter()
        .take(10)
        .enumerate()
        .map(|(i, id)| {
            labels
                .get(id.as_str())
                .map_or(0.0, |r| gain(*r) / (i as f64 + 2.0).log2())
        })
        .sum();
    let mut ideal: Vec<f64> = labels.values().copied().collect();
    ideal.sort_by(|a, b| b.total_cmp(a));
    let idcg: f64 = ideal
        .iter()
        .take(10)
        .enumerate()
        .map(|(i, r)| gain(*r) / (i as f64 + 2.0).log2())
        .sum();
    if idcg == 0.0 { 0.0 } else { dcg / idcg }
}
