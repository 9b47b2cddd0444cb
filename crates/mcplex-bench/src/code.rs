//! `mcplex bench code`: a workflow of 10 dependent tool calls (each `add` takes the previous
//! sum) done as 10 direct calls on `/mcp/all` vs. one `code_execution` run on `/mcp/code`: the
//! tokens the client exchanges (cl100k, call requests and results) and the wall time, side by
//! side in one run. Then the engine's own per-run cost (each run is a worker process): with a
//! warm pool, and with none (every run starts its process).

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use mcplex_code::{Engine, EngineOptions, Limits, Run, ToolHost, WorkerCommand};
use mcplex_upstream::{CallOptions, Upstreams};
use serde_json::{Value, json};

use crate::Host;
use crate::rig::Rig;
use crate::stats::Stats;

const STEPS: u64 = 10;
const SCRIPT: &str = "let total = 0;\nfor (let i = 1; i <= 10; i++) total = call_tool('fixture__add', {a: total, b: i}).sum;\nreturn total;";
/// 1 + 2 + … + 10.
const EXPECTED: u64 = 55;

struct Tally {
    tokens: usize,
    turns: usize,
}

pub async fn run(host: &Host, repeats: usize, out: &Path) -> Result<ExitCode> {
    let bpe = tiktoken_rs::cl100k_base().context("cannot load the cl100k_base tokenizer")?;
    let count = |value: &Value| bpe.encode_ordinary(&value.to_string()).len();
    let rig = Rig::start(host, &[("all", "/mcp/all"), ("code", "/mcp/code")]).await?;
    let client = rig.client.clone();

    let (mut direct_times, mut code_times) = (Vec::new(), Vec::new());
    let (mut direct, mut code) = (
        Tally {
            tokens: 0,
            turns: 0,
        },
        Tally {
            tokens: 0,
            turns: 0,
        },
    );
    // One warm-up round of each, then alternate so drift hits both alike.
    for round in 0..=repeats {
        let started = Instant::now();
        let mut tokens = 0;
        let mut total = 0u64;
        for i in 1..=STEPS {
            let params = json!({"name": "fixture__add", "arguments": {"a": total, "b": i}});
            let result = call(&client, "all", &params).await?;
            tokens += count(&params) + count(&result);
            total = result["structuredContent"]["sum"].as_f64().unwrap_or(0.0) as u64;
        }
        ensure!(total == EXPECTED, "direct workflow gave {total}");
        if round > 0 {
            direct_times.push(started.elapsed());
            direct = Tally {
                tokens,
                turns: STEPS as usize,
            };
        }

        let started = Instant::now();
        let params = json!({"name": "code_execution", "arguments": {"code": SCRIPT}});
        let result = call(&client, "code", &params).await?;
        let value = &result["structuredContent"]["result"];
        ensure!(value == &json!(EXPECTED), "code_execution gave {result}");
        if round > 0 {
            code_times.push(started.elapsed());
            code = Tally {
                tokens: count(&params) + count(&result),
                turns: 1,
            };
        }
    }
    let direct_stats = Stats::from(direct_times, 0, Duration::from_secs(1));
    let code_stats = Stats::from(code_times, 0, Duration::from_secs(1));
    rig.stop().await;

    println!(
        "workflow: {STEPS} dependent tool calls (fixture add chain), {repeats} runs each, loopback"
    );
    println!(
        "{:>16} | {:>12} | {:>11} | {:>12} | {:>12}",
        "path", "model turns", "tokens", "p50 ms", "p99 ms"
    );
    for (name, tally, stats) in [
        ("10 direct calls", &direct, &direct_stats),
        ("code_execution", &code, &code_stats),
    ] {
        println!(
            "{:>16} | {:>12} | {:>11} | {:>12.2} | {:>12.2}",
            name,
            tally.turns,
            tally.tokens,
            stats.p50_us / 1000.0,
            stats.p99_us / 1000.0
        );
    }
    println!(
        "code_execution: {:.1}× fewer tokens, {:.1}× faster (p50)",
        direct.tokens as f64 / code.tokens.max(1) as f64,
        direct_stats.p50_us / code_stats.p50_us.max(1e-9)
    );

    let (warm, cold) = engine_overhead(&host.code_worker, repeats.max(1) * 10).await?;
    println!();
    println!("engine per-run overhead (`return 1;`, no tool call, one worker process per run)");
    println!(
        "{:>10} | {:>8} | {:>10} | {:>10}",
        "pool", "runs", "p50 ms", "p99 ms"
    );
    println!(
        "{:>10} | {:>8} | {:>10.3} | {:>10.3}",
        "warm",
        warm.calls,
        warm.p50_us / 1000.0,
        warm.p99_us / 1000.0
    );
    println!(
        "{:>10} | {:>8} | {:>10.3} | {:>10.3}",
        "cold",
        cold.calls,
        cold.p50_us / 1000.0,
        cold.p99_us / 1000.0
    );

    let report = json!({
        "benchmark": "code",
        "tokenizer": "cl100k_base",
        "workflow_steps": STEPS,
        "direct": {"model_turns": direct.turns, "tokens": direct.tokens, "latency": direct_stats},
        "code_execution": {"model_turns": code.turns, "tokens": code.tokens, "latency": code_stats},
        "engine_overhead": {"warm": warm, "cold": cold},
    });
    crate::write_report(out, &report)?;
    Ok(ExitCode::SUCCESS)
}

async fn call(client: &Upstreams, server: &str, params: &Value) -> Result<Value> {
    let result = client
        .call_tool(server, params.clone(), CallOptions::default())
        .await?;
    ensure!(result["isError"] != json!(true), "call failed: {result}");
    Ok(result)
}

/// A host that is never called.
struct NoTools;

impl ToolHost for NoTools {
    fn call(
        &self,
        _: String,
        _: Value,
    ) -> Pin<Box<dyn Future<Output = Result<Value, Value>> + Send>> {
        Box::pin(async { Err(json!({"error": "no tools here"})) })
    }
}

/// An engine whose workers are `worker`, `warm` of them kept started.
fn engine(worker: &WorkerCommand, warm: usize) -> Engine {
    Engine::new(EngineOptions {
        worker: worker.clone(),
        concurrent_runs: 1,
        per_caller: 1,
        warm,
    })
}

/// `runs` trivial runs on an engine with a warm worker; and a tenth as many on an engine with
/// no warm worker (what a run costs without the pool: process start included).
async fn engine_overhead(worker: &WorkerCommand, runs: usize) -> Result<(Stats, Stats)> {
    let run = Run {
        caller: "bench".into(),
        code: "return 1;".into(),
        input: Value::Null,
        limits: Limits {
            timeout: Duration::from_secs(10),
            memory_bytes: 64 * 1024 * 1024,
            max_tool_calls: 1,
            parallelism: 1,
        },
    };
    let host: Arc<dyn ToolHost> = Arc::new(NoTools);
    let timed = async |engine: &Engine, count: usize| -> Result<Vec<Duration>> {
        let mut times = Vec::with_capacity(count);
        for _ in 0..count {
            // Between runs the pool starts the next worker, as it would between requests.
            tokio::time::sleep(Duration::from_millis(100)).await;
            let started = Instant::now();
            engine
                .run(run.clone(), host.clone(), Default::default())
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            times.push(started.elapsed());
        }
        Ok(times)
    };
    let warm = timed(&engine(worker, 1), runs).await?;
    let cold = timed(&engine(worker, 0), (runs / 10).max(1)).await?;
    let wall = Duration::from_secs(1);
    Ok((Stats::from(warm, 0, wall), Stats::from(cold, 0, wall)))
}
