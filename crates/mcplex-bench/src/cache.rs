//! `mcplex bench cache --corpus F`: a simulated 50-turn session over a real fleet in which two
//! servers join (at turns 10 and 30). Per turn and per strategy it counts the cl100k tokens of
//! the tool definitions a client would send and whether that prefix changed since the previous
//! turn (which invalidates a provider's prompt cache). Strategies: the full direct listing, the
//! deferred direct listing, retrieve-then-bind (a per-turn top-5 search, as agent frameworks do)
//! and deferral by search (every server deferred: the constant built-ins). Listings are the
//! gateway's own renderings, built through the catalog.
//!
//! The provider projection rows (`mcplex-projection`) count what enters the model's context:
//! a tool with `defer_loading: true` is sent but not loaded until a search finds it, so the
//! tokens and the prefix are those of the loaded entries (OpenAI: plus each namespace's name and
//! description, which the model sees while its functions are deferred). "joiners deferred":
//! the founding servers loaded, the joining ones deferred; "all deferred": every server.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use mcplex_catalog::{Scope, Snapshot};
use mcplex_config::{DirectToolResponseMode, HotSettings};
use mcplex_fixtures::CorpusTool;
use mcplex_projection::{Provider, SearchBy};
use serde_json::{Value, json};

const JOIN_TURNS: [usize; 2] = [10, 30];
const BIND_TOP_K: usize = 5;
const STRATEGIES: [&str; 7] = [
    "full listing",
    "deferred listing",
    "retrieve-then-bind",
    "deferral by search",
    "anthropic, joiners deferred",
    "anthropic, all deferred",
    "openai, all deferred",
];

pub fn run(corpus: &Path, turns: usize, out: &Path) -> Result<ExitCode> {
    let text = std::fs::read_to_string(corpus)
        .with_context(|| format!("cannot read {}", corpus.display()))?;
    let tools = mcplex_fixtures::load_corpus(&text).map_err(anyhow::Error::msg)?;
    let mut servers: Vec<String> = tools.iter().map(|t| t.server.clone()).collect();
    servers.sort();
    servers.dedup();
    anyhow::ensure!(
        servers.len() > JOIN_TURNS.len(),
        "the corpus needs more than {} servers",
        JOIN_TURNS.len()
    );
    // The last servers (by name) join late; the rest are there from turn 1.
    let joiners: Vec<String> = servers[servers.len() - JOIN_TURNS.len()..].to_vec();
    let bpe = tiktoken_rs::cl100k_base().context("cannot load the cl100k_base tokenizer")?;

    let mut rows: BTreeMap<&str, Vec<(usize, bool)>> = BTreeMap::new();
    let mut previous: BTreeMap<&str, String> = BTreeMap::new();
    let mut present: Vec<String> = servers
        .iter()
        .filter(|s| !joiners.contains(s))
        .cloned()
        .collect();
    let mut snapshots = Snapshots::new(&tools, &present, &joiners);
    for turn in 1..=turns {
        if let Some(index) = JOIN_TURNS.iter().position(|t| *t == turn) {
            present.push(joiners[index].clone());
            snapshots = Snapshots::new(&tools, &present, &joiners);
        }
        for strategy in STRATEGIES {
            let listing = snapshots.listing(strategy, turn);
            let text = serde_json::to_string(&listing)?;
            let tokens = bpe.encode_with_special_tokens(&text).len();
            let changed = previous.get(strategy).is_some_and(|p| *p != text);
            rows.entry(strategy).or_default().push((tokens, changed));
            previous.insert(strategy, text);
        }
    }

    println!(
        "prompt-cache simulation: {turns} turns over {} ({} tools, {} servers; {} and {} join at turns {} and {})",
        corpus.display(),
        tools.len(),
        servers.len(),
        joiners[0],
        joiners[1],
        JOIN_TURNS[0],
        JOIN_TURNS[1]
    );
    let last_turn = format!("turn {turns}");
    println!(
        "{:>28} | {:>9} | {:>10} | {:>13} | {:>15}",
        "strategy", "turn 1", last_turn, "total tokens", "prefix changes"
    );
    let mut summary = Vec::new();
    for strategy in STRATEGIES {
        let per_turn = &rows[strategy];
        let total: usize = per_turn.iter().map(|(t, _)| t).sum();
        let changes = per_turn.iter().filter(|(_, c)| *c).count();
        let (first, last) = (
            per_turn.first().map_or(0, |r| r.0),
            per_turn.last().map_or(0, |r| r.0),
        );
        println!("{strategy:>28} | {first:>9} | {last:>10} | {total:>13} | {changes:>15}");
        summary.push(json!({
            "strategy": strategy, "tokens_turn_1": first, "tokens_last_turn": last, "total_tokens": total,
            "prefix_changes": changes,
            "per_turn": per_turn.iter().map(|(t, c)| json!({"tokens": t, "prefix_changed": c})).collect::<Vec<_>>(),
        }));
    }
    crate::write_report(
        out,
        &json!({"benchmark": "cache", "turns": turns, "tokenizer": "cl100k_base", "strategies": summary}),
    )?;
    Ok(ExitCode::SUCCESS)
}

/// The snapshots one set of present servers gives, one per rendering.
struct Snapshots {
    full: Snapshot,
    deferred: Snapshot,
    all_deferred: Snapshot,
    joiners_deferred: Snapshot,
}

impl Snapshots {
    fn new(tools: &[CorpusTool], present: &[String], joiners: &[String]) -> Snapshots {
        let full = DirectToolResponseMode::Full;
        Snapshots {
            full: snapshot(tools, present, full, &|_| false),
            deferred: snapshot(tools, present, DirectToolResponseMode::Deferred, &|_| false),
            all_deferred: snapshot(tools, present, full, &|_| true),
            joiners_deferred: snapshot(tools, present, full, &|s| joiners.iter().any(|j| j == s)),
        }
    }

    fn listing(&self, strategy: &str, turn: usize) -> Vec<Value> {
        match strategy {
            "full listing" => with_builtins(false, &self.full),
            "deferred listing" => with_builtins(false, &self.deferred),
            "deferral by search" => with_builtins(true, &self.all_deferred),
            "anthropic, joiners deferred" => {
                in_context(&self.joiners_deferred, Provider::Anthropic)
            }
            "anthropic, all deferred" => in_context(&self.all_deferred, Provider::Anthropic),
            "openai, all deferred" => in_context(&self.all_deferred, Provider::OpenAi),
            _ => {
                // The turn's request: the description of one tool of the fleet (deterministic).
                let tools = self.full.tools();
                let pick = &tools[(turn * 7919) % tools.len().max(1)];
                let request = pick
                    .raw
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or(&pick.id.tool);
                self.full
                    .search(request, None, None, BIND_TOP_K, |_| true)
                    .tools
                    .iter()
                    .map(|found| json!({"name": found.tool.display_name, "description": found.tool.raw.get("description"), "inputSchema": found.tool.raw.get("inputSchema")}))
                    .collect()
            }
        }
    }
}

fn with_builtins(defers: bool, snapshot: &Snapshot) -> Vec<Value> {
    let mut listing = mcplex_surface::direct_builtins(defers);
    listing.extend(snapshot.direct_listing().iter().cloned());
    listing
}

/// The part of a provider projection the model's context holds: entries without
/// `defer_loading`, namespaces (name and description) without their deferred functions.
fn in_context(snapshot: &Snapshot, provider: Provider) -> Vec<Value> {
    let tools = mcplex_projection::tools(snapshot, &Scope::full(), provider, SearchBy::Provider);
    let loaded = |tool: &Value| tool["defer_loading"] != json!(true);
    tools
        .into_iter()
        .filter(loaded)
        .map(|mut tool| {
            if let Some(functions) = tool.get_mut("tools").and_then(Value::as_array_mut) {
                functions.retain(loaded);
            }
            tool
        })
        .collect()
}

fn snapshot(
    tools: &[CorpusTool],
    present: &[String],
    mode: DirectToolResponseMode,
    defers: &dyn Fn(&str) -> bool,
) -> Snapshot {
    let mut by_server: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for tool in tools.iter().filter(|t| present.contains(&t.server)) {
        by_server
            .entry(tool.server.clone())
            .or_default()
            .push(tool.definition.clone());
    }
    let hot = HotSettings {
        direct_tool_response_mode: mode,
        ..HotSettings::default()
    };
    crate::corpus_snapshot_deferring(by_server, hot, defers)
}
