//! `mcplex bench retrieval --corpus F --queries Q`: ranking quality of the gateway's own search
//! over a tool corpus with graded queries (relevance ≥ 1 counts), and in-process search latency
//! at the corpus size and on a synthetic 10,000-tool fleet built by repeating the corpus. With
//! `--model`, plain BM25F and hybrid search are measured side by side in the same run.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use mcplex_catalog::Snapshot;
use mcplex_config::HotSettings;
use mcplex_fixtures::CorpusTool;
use serde_json::{Map, Value, json};

use crate::Host;

const CUTOFFS: [usize; 3] = [1, 5, 10];
const SYNTHETIC_SIZE: usize = 10_000;

pub fn run(
    host: &Host,
    corpus: &Path,
    queries: &Path,
    model: Option<&Path>,
    rounds: usize,
    out: &Path,
) -> Result<ExitCode> {
    let corpus_text = std::fs::read_to_string(corpus)
        .with_context(|| format!("cannot read {}", corpus.display()))?;
    let tools = mcplex_fixtures::load_corpus(&corpus_text).map_err(anyhow::Error::msg)?;
    let queries_text = std::fs::read_to_string(queries)
        .with_context(|| format!("cannot read {}", queries.display()))?;
    let queries: Value = serde_json::from_str(&queries_text).context("queries file is not JSON")?;
    let queries = queries["queries"]
        .as_array()
        .context("queries file has no \"queries\" array")?;
    let texts: Vec<&str> = queries.iter().filter_map(|q| q["query"].as_str()).collect();

    let snapshot = snapshot_of(&tools, 1);
    let synthetic = snapshot_of(&tools, SYNTHETIC_SIZE.div_ceil(tools.len().max(1)));
    let mut rankers = vec![("bm25", HashMap::new())];
    let mut embedding = Value::Null;
    if let Some(dir) = model {
        let (query_vectors, report) = embed(host, dir, &snapshot, &synthetic, &texts)?;
        rankers.push(("hybrid", query_vectors));
        embedding = report;
    }
    let results: Vec<RankerResult> = rankers
        .iter()
        .map(|(name, vectors)| {
            let vector_of = |query: &str| vectors.get(query).map(|v: &Arc<[f32]>| &v[..]);
            let (quality, misses) = quality(&snapshot, queries, &vector_of);
            RankerResult {
                name,
                quality,
                misses,
                at_corpus: latency(&snapshot, &texts, &vector_of, rounds),
                at_synthetic: latency(&synthetic, &texts, &vector_of, rounds),
            }
        })
        .collect();

    println!(
        "retrieval quality: {} queries over {} tools ({})",
        queries.len(),
        snapshot.tools().len(),
        corpus.display()
    );
    print!("{:>10}", "metric");
    for result in &results {
        print!(" | {:>6}", result.name);
    }
    println!();
    for metric in results[0].quality.keys() {
        print!("{metric:>10}");
        for result in &results {
            print!(
                " | {:>6.3}",
                result.quality.get(metric).copied().unwrap_or(0.0)
            );
        }
        println!();
    }
    println!(
        "\nsearch latency, in process, ranking only ({} queries × {rounds})",
        texts.len()
    );
    print!("{:>7}", "tools");
    for result in &results {
        print!(" | {:>7} p50 µs | {:>7} p99 µs", result.name, result.name);
    }
    println!();
    for (size, pick) in [
        (
            snapshot.tools().len(),
            (|r: &RankerResult| r.at_corpus) as fn(&RankerResult) -> (f64, f64),
        ),
        (synthetic.tools().len(), |r: &RankerResult| r.at_synthetic),
    ] {
        print!("{size:>7}");
        for result in &results {
            let (p50, p99) = pick(result);
            print!(" | {p50:>14.1} | {p99:>14.1}");
        }
        println!();
    }
    if !embedding.is_null() {
        println!(
            "\nmodel {}: {} tools embedded in {} ms; a query embeds in {:.1} ms p50, {:.1} ms p99",
            embedding["model"].as_str().unwrap_or_default(),
            embedding["tools"],
            embedding["tools_ms"],
            embedding["query_p50_ms"].as_f64().unwrap_or_default(),
            embedding["query_p99_ms"].as_f64().unwrap_or_default(),
        );
    }
    let rankers: Map<String, Value> = results
        .iter()
        .map(|result| {
            (
                result.name.to_owned(),
                json!({
                    "quality": result.quality,
                    "latency_us": [
                        {"tools": snapshot.tools().len(), "p50": result.at_corpus.0, "p99": result.at_corpus.1},
                        {"tools": synthetic.tools().len(), "p50": result.at_synthetic.0, "p99": result.at_synthetic.1},
                    ],
                    "misses_at_5": result.misses,
                }),
            )
        })
        .collect();
    let report = json!({
        "benchmark": "retrieval",
        "corpus": corpus.display().to_string(),
        "queries": queries.len(),
        "tools": snapshot.tools().len(),
        "rankers": rankers,
        "embedding": embedding,
    });
    crate::write_report(out, &report)?;
    Ok(ExitCode::SUCCESS)
}

/// The embedding of each query, by its text.
type QueryVectors = HashMap<String, Arc<[f32]>>;

/// One ranker's figures.
struct RankerResult {
    name: &'static str,
    quality: BTreeMap<String, f64>,
    misses: Vec<Value>,
    at_corpus: (f64, f64),
    at_synthetic: (f64, f64),
}

/// Loads the model, embeds both fleets' tools (the synthetic one repeats the corpus, so its
/// passages are cached) and every query, timing the query embeddings.
fn embed(
    host: &Host,
    dir: &Path,
    snapshot: &Snapshot,
    synthetic: &Snapshot,
    texts: &[&str],
) -> Result<(QueryVectors, Value)> {
    let semantic = (host.load_model)(dir)?;
    let started = Instant::now();
    semantic.embed_now(snapshot).map_err(anyhow::Error::msg)?;
    let tools_ms = started.elapsed().as_millis() as u64;
    semantic.embed_now(synthetic).map_err(anyhow::Error::msg)?;
    let mut vectors = HashMap::new();
    let mut samples = Vec::new();
    for text in texts {
        let started = Instant::now();
        let vector = semantic.embed_query(text).map_err(anyhow::Error::msg)?;
        samples.push(started.elapsed().as_secs_f64() * 1e3);
        vectors.insert((*text).to_owned(), vector);
    }
    let (p50, p99) = percentiles(samples);
    let report = json!({
        "model": semantic.model(),
        "tools": snapshot.tools().len(),
        "tools_ms": tools_ms,
        "query_p50_ms": p50,
        "query_p99_ms": p99,
    });
    Ok((vectors, report))
}

/// Mean recall@k, MRR and nDCG@10 over the queries with a relevant tool, and the queries whose
/// first relevant tool is not in the top 5.
fn quality<'q>(
    snapshot: &Snapshot,
    queries: &[Value],
    vector_of: &impl Fn(&str) -> Option<&'q [f32]>,
) -> (BTreeMap<String, f64>, Vec<Value>) {
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
            .search(text, vector_of(text), None, 10, |_| true)
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
    let quality = sums.into_iter().map(|(k, v)| (k, v / count)).collect();
    (quality, misses)
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
    crate::corpus_snapshot(by_server, HotSettings::default(), false)
}

fn latency<'q>(
    snapshot: &Snapshot,
    queries: &[&str],
    vector_of: &impl Fn(&str) -> Option<&'q [f32]>,
    rounds: usize,
) -> (f64, f64) {
    let mut samples = Vec::with_capacity(queries.len() * rounds);
    for _ in 0..rounds.max(1) {
        for query in queries {
            let vector = vector_of(query);
            let started = Instant::now();
            let matches = snapshot.search(query, vector, None, 15, |_| true);
            std::hint::black_box(matches.total);
            samples.push(started.elapsed().as_secs_f64() * 1e6);
        }
    }
    percentiles(samples)
}

/// The median and the 99th percentile.
fn percentiles(mut samples: Vec<f64>) -> (f64, f64) {
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
