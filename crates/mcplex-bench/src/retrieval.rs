//! `mcplex bench retrieval --corpus F --queries Q [--queries Q2 …]`: ranking quality of the
//! gateway's own search over a tool corpus with graded queries (relevance ≥ 1 counts; a query
//! needing several tools scores the share of them found; where labels name the step they answer,
//! `steps@k` is the share of steps with a tool in the top k), and in-process search latency at the
//! corpus size and on a synthetic 10,000-tool fleet built by repeating the corpus under other
//! server names. Every ranking of [`crate::levers`] runs side by side on each query set: plain
//! BM25F, hybrid as it was, each lever alone, and the gateway's ranking; with `--model` also the
//! query-embedding latency of the gateway's embedding path.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use mcplex_catalog::Snapshot;
use mcplex_config::HotSettings;
use mcplex_fixtures::CorpusTool;
use mcplex_search::{Document, Index, PassageStyle, SearchResult, Semantic, Vectors};
use serde_json::{Map, Value, json};

use crate::Host;
use crate::levers::{
    GATEWAY, QueryVector, QueryVectors, Variant, embed_all, passage_vectors, variants,
};
use crate::paired::Difference;
use crate::stats::percentiles;

const CUTOFFS: [usize; 3] = [1, 5, 10];
const SYNTHETIC_SIZE: usize = 10_000;

/// What `bench retrieval` was asked to measure.
pub struct RetrievalArgs<'a> {
    pub corpus: &'a Path,
    pub queries: &'a [PathBuf],
    pub model: Option<&'a Path>,
    /// At most this many queries of each set (0: all), picked by a hash of their text.
    pub sample: usize,
    /// Only the rankings of these names (all when empty).
    pub rankers: &'a [String],
    pub rounds: usize,
    /// Also write each query's top [`RANKED_DEPTH`] by each ranking into the report.
    pub rankings: bool,
    pub out: &'a Path,
}

/// How deep a query's ranking goes in the report with `--rankings`: the candidates a second
/// stage would reorder (`scripts/study_rerank.py`).
const RANKED_DEPTH: usize = 30;

/// One graded query.
struct Query {
    text: String,
    labels: HashMap<String, f64>,
    /// The tools that answer each step of a request for several things, where the set says
    /// (labels with a `step`; equivalent tools share one): `steps@k` is the share of steps with
    /// a tool in the top k.
    steps: Vec<Vec<String>>,
}

/// One query file, perhaps sampled.
struct QuerySet {
    path: String,
    queries: Vec<Query>,
    of: usize,
}

pub fn run(host: &Host, args: &RetrievalArgs<'_>) -> Result<ExitCode> {
    let corpus_text = std::fs::read_to_string(args.corpus)
        .with_context(|| format!("cannot read {}", args.corpus.display()))?;
    let tools = mcplex_fixtures::load_corpus(&corpus_text).map_err(anyhow::Error::msg)?;
    let sets = args
        .queries
        .iter()
        .map(|path| load_set(path, args.sample))
        .collect::<Result<Vec<_>>>()?;
    let snapshot = snapshot_of(&tools, 1);
    // `--rounds 0`: quality only (the recall floors in the test suite), no latency fleet.
    let synthetic =
        (args.rounds > 0).then(|| snapshot_of(&tools, SYNTHETIC_SIZE.div_ceil(tools.len().max(1))));
    let documents = snapshot.search_documents();
    let index = Index::build(&documents);
    let columns: Vec<Variant> = variants(args.model.is_some())
        .into_iter()
        .filter(|v| args.rankers.is_empty() || args.rankers.iter().any(|r| r == v.name))
        .collect();
    let mut texts: Vec<String> = sets
        .iter()
        .flat_map(|set| set.queries.iter().map(|q| q.text.clone()))
        .collect();
    texts.sort();
    texts.dedup();
    let mut query_vectors = QueryVectors::default();
    let mut passages: HashMap<PassageStyle, Vectors> = HashMap::new();
    let mut embedding = Value::Null;
    if let Some(dir) = args.model {
        let semantic = (host.load_model)(dir)?;
        let embedder = semantic.embedder().clone();
        let started = Instant::now();
        semantic.embed_now(&snapshot).map_err(anyhow::Error::msg)?;
        let tools_ms = started.elapsed().as_millis() as u64;
        if let Some(synthetic) = &synthetic {
            semantic.embed_now(synthetic).map_err(anyhow::Error::msg)?;
        }
        for variant in &columns {
            if variant.vector != QueryVector::None && !passages.contains_key(&variant.passage) {
                let vectors = passage_vectors(embedder.as_ref(), &documents, variant.passage)?;
                passages.insert(variant.passage, vectors);
            }
        }
        let mut samples = Vec::new();
        for text in &texts {
            let started = Instant::now();
            let vector = semantic.embed_query(text).map_err(anyhow::Error::msg)?;
            samples.push(started.elapsed().as_secs_f64() * 1e3);
            query_vectors.gateway.insert(text.clone(), vector.to_vec());
        }
        if columns.iter().any(|v| v.vector == QueryVector::Raw) {
            let raw = embed_all(embedder.as_ref(), &texts)?;
            query_vectors.raw = texts.iter().cloned().zip(raw).collect();
        }
        if mcplex_search::Tuning::default().split_parts {
            // The gateway's vectors already are the request's and its parts'.
            query_vectors.parts = query_vectors.gateway.clone();
        } else if columns.iter().any(|v| v.vector == QueryVector::Parts) {
            for text in &texts {
                let vector = mcplex_search::embed_query(embedder.as_ref(), text, true)
                    .map_err(anyhow::Error::msg)?;
                query_vectors.parts.insert(text.clone(), vector);
            }
        }
        if columns.iter().any(|v| v.vector == QueryVector::Cleaned) {
            let cleaned: Vec<String> = texts
                .iter()
                .map(|text| mcplex_search::embeddable(&mcplex_search::clean_query(text)).to_owned())
                .collect();
            let vectors = embed_all(embedder.as_ref(), &cleaned)?;
            query_vectors.cleaned = texts.iter().cloned().zip(vectors).collect();
        }
        let (p50, p99) = percentiles(samples);
        embedding = json!({
            "model": semantic.model(),
            "tools": snapshot.tools().len(),
            "tools_ms": tools_ms,
            "queries": texts.len(),
            "query_p50_ms": p50,
            "query_p99_ms": p99,
        });
    }
    let mut set_reports = Vec::new();
    for set in &sets {
        let results: Vec<(&Variant, Quality)> = columns
            .iter()
            .map(|variant| {
                let vectors = passages.get(&variant.passage);
                let quality = quality(
                    &index,
                    &documents,
                    set,
                    variant,
                    vectors,
                    &query_vectors,
                    args.rankings,
                );
                (variant, quality)
            })
            .collect();
        let differences = against_gateway(&results);
        print_table(set, snapshot.tools().len(), args.corpus, &results);
        print_differences(&differences);
        set_reports.push(set_report(set, &results, &differences));
    }
    let gateway_vector = |query: &str| query_vectors.of(QueryVector::Gateway, query);
    let no_vector = |_: &str| None;
    let text_refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut latency = Vec::new();
    let fleets = synthetic
        .iter()
        .flat_map(|synthetic| [("corpus", &snapshot), ("synthetic", synthetic)]);
    for (name, snap) in fleets {
        let bm25 = timed_searches(snap, &text_refs, &no_vector, args.rounds);
        let hybrid = (args.model.is_some())
            .then(|| timed_searches(snap, &text_refs, &gateway_vector, args.rounds));
        latency.push(json!({
            "fleet": name,
            "tools": snap.tools().len(),
            "bm25_us": {"p50": bm25.0, "p99": bm25.1},
            "hybrid_us": hybrid.map(|(p50, p99)| json!({"p50": p50, "p99": p99})),
        }));
    }
    print_latency(&latency, text_refs.len(), args.rounds, &embedding);
    let report = json!({
        "benchmark": "retrieval",
        "corpus": args.corpus.display().to_string(),
        "tools": snapshot.tools().len(),
        "sets": set_reports,
        "latency": latency,
        "embedding": embedding,
    });
    crate::write_report(args.out, &report)?;
    Ok(ExitCode::SUCCESS)
}

/// A query file's graded queries (those with a relevant tool), at most `sample` of them: the
/// ones whose text hashes lowest, so a sample is the same on every run and machine.
fn load_set(path: &Path, sample: usize) -> Result<QuerySet> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let document: Value = serde_json::from_str(&text).context("queries file is not JSON")?;
    let rows = document["queries"]
        .as_array()
        .context("queries file has no \"queries\" array")?;
    let mut queries: Vec<Query> = rows
        .iter()
        .filter_map(|row| {
            let labels: HashMap<String, f64> = row["labels"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|l| Some((l["tool_id"].as_str()?.to_owned(), l["relevance"].as_f64()?)))
                .filter(|(_, relevance)| *relevance >= 1.0)
                .collect();
            let text = row["query"].as_str()?.to_owned();
            let mut steps: BTreeMap<u64, Vec<String>> = BTreeMap::new();
            for label in row["labels"].as_array().into_iter().flatten() {
                if let (Some(step), Some(id)) = (label["step"].as_u64(), label["tool_id"].as_str())
                    && labels.contains_key(id)
                {
                    steps.entry(step).or_default().push(id.to_owned());
                }
            }
            let steps = steps.into_values().collect();
            (!labels.is_empty()).then_some(Query {
                text,
                labels,
                steps,
            })
        })
        .collect();
    let of = queries.len();
    if sample > 0 && sample < queries.len() {
        queries.sort_by_key(|q| fnv1a(&q.text));
        queries.truncate(sample);
    }
    Ok(QuerySet {
        path: path.display().to_string(),
        queries,
        of,
    })
}

/// FNV-1a, 64 bits: a stable hash for sampling.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Mean metrics of one ranking over one set, and its queries whose first relevant tool is not
/// in the top 5 (and, with `--rankings`, every query's ranking).
struct Quality {
    metrics: BTreeMap<String, f64>,
    /// Each query's recall@5, in the set's order: what [`Difference`] pairs across rankings.
    recall_at_5: Vec<f64>,
    misses: Vec<Value>,
    rankings: Vec<Value>,
}

/// One query's ranking: the parts it was split into, and each hit as `[id, part or null, score]`.
fn ranking_report(query: &str, result: &SearchResult, documents: &[Document]) -> Value {
    let hits: Vec<Value> = result
        .hits
        .iter()
        .map(|hit| json!([documents[hit.doc].id, hit.part, hit.score]))
        .collect();
    json!({"query": query, "parts": result.parts, "hits": hits})
}

fn quality(
    index: &Index,
    documents: &[Document],
    set: &QuerySet,
    variant: &Variant,
    passages: Option<&Vectors>,
    query_vectors: &QueryVectors,
    keep_rankings: bool,
) -> Quality {
    let mut sums: BTreeMap<String, f64> = BTreeMap::new();
    // steps@k is the mean over the queries whose labels name steps.
    let mut with_steps = 0usize;
    let mut misses = Vec::new();
    let mut rankings = Vec::new();
    let mut recall_at_5 = Vec::with_capacity(set.queries.len());
    for query in &set.queries {
        let semantic = query_vectors
            .of(variant.vector, &query.text)
            .zip(passages)
            .map(|(query, documents)| Semantic { query, documents });
        let depth = if keep_rankings { RANKED_DEPTH } else { 10 };
        let result = index.search_tuned(&query.text, semantic, |_| true, depth, &variant.tuning);
        if keep_rankings {
            rankings.push(ranking_report(&query.text, &result, documents));
        }
        let ranked: Vec<&str> = result
            .hits
            .iter()
            .take(10)
            .map(|hit| documents[hit.doc].id.as_str())
            .collect();
        let labels: HashMap<&str, f64> = query
            .labels
            .iter()
            .map(|(id, relevance)| (id.as_str(), *relevance))
            .collect();
        for k in CUTOFFS {
            let found = ranked
                .iter()
                .take(k)
                .filter(|id| labels.contains_key(*id))
                .count();
            let recall = found as f64 / labels.len() as f64;
            if k == 5 {
                recall_at_5.push(recall);
            }
            *sums.entry(format!("recall@{k}")).or_default() += recall;
        }
        if !query.steps.is_empty() {
            with_steps += 1;
            for k in [5, 10] {
                let top = &ranked[..ranked.len().min(k)];
                let covered = query
                    .steps
                    .iter()
                    .filter(|tools| tools.iter().any(|id| top.contains(&id.as_str())))
                    .count();
                *sums.entry(format!("steps@{k}")).or_default() +=
                    covered as f64 / query.steps.len() as f64;
            }
        }
        let first = ranked.iter().position(|id| labels.contains_key(*id));
        *sums.entry("mrr".to_owned()).or_default() += first.map_or(0.0, |p| 1.0 / (p as f64 + 1.0));
        *sums.entry("ndcg@10".to_owned()).or_default() += ndcg(&ranked, &labels);
        if first.is_none_or(|p| p >= 5) {
            misses.push(json!({"query": query.text, "top5": &ranked[..ranked.len().min(5)], "relevant": labels.keys().collect::<Vec<_>>()}));
        }
    }
    let count = set.queries.len().max(1) as f64;
    let with_steps = with_steps.max(1) as f64;
    Quality {
        metrics: sums
            .into_iter()
            .map(|(k, v)| {
                let of = if k.starts_with("steps@") {
                    with_steps
                } else {
                    count
                };
                (k, v / of)
            })
            .collect(),
        recall_at_5,
        misses,
        rankings,
    }
}

/// Each ranking's recall@5 against the gateway's on the same queries (none without a gateway
/// column, and none for the gateway itself).
fn against_gateway<'v>(results: &[(&'v Variant, Quality)]) -> Vec<(&'v str, Difference)> {
    let Some((_, gateway)) = results.iter().find(|(v, _)| v.name == GATEWAY) else {
        return Vec::new();
    };
    results
        .iter()
        .filter(|(v, _)| v.name != GATEWAY)
        .filter_map(|(v, q)| {
            Some((
                v.name,
                Difference::of(&gateway.recall_at_5, &q.recall_at_5)?,
            ))
        })
        .collect()
}

fn print_table(set: &QuerySet, tools: usize, corpus: &Path, results: &[(&Variant, Quality)]) {
    let sampled = if set.queries.len() < set.of {
        format!(", sampled by hash from {}", set.of)
    } else {
        String::new()
    };
    println!(
        "\nretrieval quality: {} ({} queries{sampled}) over {tools} tools ({})",
        set.path,
        set.queries.len(),
        corpus.display()
    );
    print!("{:>10}", "metric");
    for (variant, _) in results {
        print!(" | {:>8}", variant.name);
    }
    println!();
    let Some((_, first)) = results.first() else {
        return;
    };
    for metric in first.metrics.keys() {
        print!("{metric:>10}");
        for (_, quality) in results {
            print!(
                " | {:>8.3}",
                quality.metrics.get(metric).copied().unwrap_or(0.0)
            );
        }
        println!();
    }
}

/// Under a set's table: each ranking's recall@5 against the gateway's, with its 95% interval;
/// `*` where the set tells the two apart.
fn print_differences(differences: &[(&str, Difference)]) {
    if differences.is_empty() {
        return;
    }
    let cells: Vec<String> = differences
        .iter()
        .map(|(name, d)| {
            let sure = if d.separates() { "*" } else { "" };
            format!(
                "{name} {:+.3} [{:+.3}, {:+.3}]{sure}",
                d.mean, d.low, d.high
            )
        })
        .collect();
    println!(
        "recall@5 against {GATEWAY} (paired bootstrap, 95%): {}",
        cells.join("; ")
    );
}

fn set_report(
    set: &QuerySet,
    results: &[(&Variant, Quality)],
    differences: &[(&str, Difference)],
) -> Value {
    let rankers: Map<String, Value> = results
        .iter()
        .map(|(variant, quality)| {
            (variant.name.to_owned(), {
                let mut report = json!({"quality": quality.metrics, "misses_at_5": quality.misses});
                if let Some((_, d)) = differences.iter().find(|(name, _)| *name == variant.name) {
                    report["recall@5_vs_gateway"] =
                        json!({"mean": d.mean, "low": d.low, "high": d.high});
                }
                if !quality.rankings.is_empty() {
                    report["rankings"] = Value::Array(quality.rankings.clone());
                }
                report
            })
        })
        .collect();
    json!({"queries": set.path, "count": set.queries.len(), "of": set.of, "rankers": rankers})
}

fn print_latency(latency: &[Value], queries: usize, rounds: usize, embedding: &Value) {
    println!(
        "\nsearch latency, in process, ranking only, the gateway's ranking ({queries} queries × {rounds})"
    );
    println!(
        "{:>7} | {:>12} | {:>12} | {:>14} | {:>14}",
        "tools", "bm25 p50 µs", "bm25 p99 µs", "hybrid p50 µs", "hybrid p99 µs"
    );
    for row in latency {
        let at = |path: &str, q: &str| row[path][q].as_f64().unwrap_or(f64::NAN);
        println!(
            "{:>7} | {:>12.1} | {:>12.1} | {:>14.1} | {:>14.1}",
            row["tools"],
            at("bm25_us", "p50"),
            at("bm25_us", "p99"),
            at("hybrid_us", "p50"),
            at("hybrid_us", "p99")
        );
    }
    if !embedding.is_null() {
        println!(
            "\nmodel {}: {} tools embedded in {} ms; a query (the gateway's texts: the request and its parts) embeds in {:.1} ms p50, {:.1} ms p99",
            embedding["model"].as_str().unwrap_or_default(),
            embedding["tools"],
            embedding["tools_ms"],
            embedding["query_p50_ms"].as_f64().unwrap_or_default(),
            embedding["query_p99_ms"].as_f64().unwrap_or_default(),
        );
    }
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

fn timed_searches<'q>(
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

fn ndcg(ranked: &[&str], labels: &HashMap<&str, f64>) -> f64 {
    let gain = |relevance: f64| 2f64.powf(relevance) - 1.0;
    let dcg: f64 = ranked
        .iter()
        .take(10)
        .enumerate()
        .map(|(i, id)| {
            labels
                .get(*id)
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
