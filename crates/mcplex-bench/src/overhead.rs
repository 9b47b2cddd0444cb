//! `mcplex bench overhead`: `tools/call` through the gateway vs. directly to the same upstream.
//!
//! The bench's process hosts a fixture upstream (stateless streamable HTTP) and one client
//! (mcplex's own upstream client) that calls `echo` either at the fixture or at a gateway process
//! in front of it (`mcplex serve`). Same client, same upstream, same run; the two paths
//! alternate per round.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use mcplex_upstream::{CallOptions, Upstreams};
use serde_json::json;

use crate::Host;
use crate::rig::Rig;
use crate::stats::Stats;

const CONCURRENCY: [usize; 2] = [1, 32];
const ROUNDS: usize = 2;

pub async fn run(host: &Host, calls: usize, out: &Path) -> Result<ExitCode> {
    let rig = Rig::start(host, &[("gateway", "/mcp")]).await?;
    let client = rig.client.clone();
    // Warm both paths (connections, lazy statics) before measuring.
    for _ in 0..50 {
        call(&client, "direct", "echo")
            .await
            .context("warm-up call direct")?;
        call(&client, "gateway", "fixture__echo")
            .await
            .context("warm-up call through the gateway")?;
    }

    let mut rows = Vec::new();
    for concurrency in CONCURRENCY {
        let total = if concurrency == 1 { calls } else { calls * 4 };
        let mut direct = Vec::new();
        let mut gateway = Vec::new();
        let (mut direct_wall, mut gateway_wall) = (Duration::ZERO, Duration::ZERO);
        let (mut direct_errors, mut gateway_errors) = (0, 0);
        for _ in 0..ROUNDS {
            let (lat, err, wall) =
                measure(&client, "direct", "echo", concurrency, total / ROUNDS).await;
            direct.extend(lat);
            direct_errors += err;
            direct_wall += wall;
            let (lat, err, wall) = measure(
                &client,
                "gateway",
                "fixture__echo",
                concurrency,
                total / ROUNDS,
            )
            .await;
            gateway.extend(lat);
            gateway_errors += err;
            gateway_wall += wall;
        }
        let direct = Stats::from(direct, direct_errors, direct_wall);
        let gateway = Stats::from(gateway, gateway_errors, gateway_wall);
        rows.push((concurrency, direct, gateway));
    }

    println!(
        "tools/call overhead: mcplex gateway vs. direct (same client, same fixture upstream, streamable HTTP, loopback)"
    );
    println!(
        "{:>11} | {:>8} | {:>9} | {:>9} | {:>10} | {:>7} | {:>13}",
        "concurrency", "path", "p50 µs", "p99 µs", "calls/s", "errors", "p50 ratio"
    );
    for (concurrency, direct, gateway) in &rows {
        println!(
            "{:>11} | {:>8} | {:>9.0} | {:>9.0} | {:>10.0} | {:>7} | {:>13}",
            concurrency,
            "direct",
            direct.p50_us,
            direct.p99_us,
            direct.throughput_per_s,
            direct.errors,
            ""
        );
        let ratio = gateway.p50_us / direct.p50_us.max(1e-9);
        println!(
            "{:>11} | {:>8} | {:>9.0} | {:>9.0} | {:>10.0} | {:>7} | {:>12.2}×",
            concurrency,
            "gateway",
            gateway.p50_us,
            gateway.p99_us,
            gateway.throughput_per_s,
            gateway.errors,
            ratio
        );
    }
    let report = json!({
        "benchmark": "overhead",
        "rows": rows.iter().map(|(c, d, g)| json!({"concurrency": c, "direct": d, "gateway": g, "p50_ratio": g.p50_us / d.p50_us.max(1e-9)})).collect::<Vec<_>>(),
    });
    crate::write_report(out, &report)?;

    rig.stop().await;
    Ok(ExitCode::SUCCESS)
}

async fn call(client: &Upstreams, server: &str, tool: &str) -> Result<()> {
    let params = json!({"name": tool, "arguments": {"text": "hello"}});
    let result = client
        .call_tool(server, params, CallOptions::default())
        .await?;
    anyhow::ensure!(
        result.get("structuredContent").is_some(),
        "unexpected result: {result}"
    );
    Ok(())
}

async fn measure(
    client: &Arc<Upstreams>,
    server: &'static str,
    tool: &'static str,
    concurrency: usize,
    calls: usize,
) -> (Vec<Duration>, usize, Duration) {
    let per_task = calls.div_ceil(concurrency);
    let started = Instant::now();
    let tasks: Vec<_> = (0..concurrency)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(per_task);
                let mut errors = 0;
                for _ in 0..per_task {
                    let begun = Instant::now();
                    match call(&client, server, tool).await {
                        Ok(()) => latencies.push(begun.elapsed()),
                        Err(_) => errors += 1,
                    }
                }
                (latencies, errors)
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(calls);
    let mut errors = 0;
    for task in tasks {
        if let Ok((lat, err)) = task.await {
            latencies.extend(lat);
            errors += err;
        }
    }
    (latencies, errors, started.elapsed())
}
