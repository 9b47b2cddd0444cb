//! `mcplex bench overhead`: `tools/call` through the gateway vs. directly to the same upstream.
//!
//! One process hosts a fixture upstream (stateless streamable HTTP), a gateway in front of it,
//! and one client (mcplex's own upstream client) that calls `echo` either at the fixture or at
//! the gateway. Same client, same upstream, same run; the two paths alternate per round.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use mcplex_config::{Config, ServerConfig, Transport};
use mcplex_fixtures::{Fixture, FixtureOptions, serve_http};
use mcplex_upstream::{CallOptions, UpstreamEvent, UpstreamState, Upstreams};
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::stats::Stats;
use crate::commands::start_core;

const CONCURRENCY: [usize; 2] = [1, 32];
const ROUNDS: usize = 2;

fn http_server(name: &str, url: String) -> ServerConfig {
    let headers = Default::default();
    ServerConfig::new(
        name,
        Transport::Http {
            url,
            headers,
            fallback_to_sse: false,
        },
    )
}

fn config(servers: Vec<ServerConfig>) -> Config {
    Config::with_servers(servers)
}

pub async fn run(calls: usize, out: &Path) -> Result<ExitCode> {
    // The upstream: a fixture on stateless streamable HTTP.
    let fixture = Fixture::new(FixtureOptions {
        name: "fixture".into(),
        kit: true,
        corpus: Vec::new(),
        page_size: None,
        stuck_cursor: false,
        rug_pull: false,
    });
    let upstream_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let upstream_url = format!("http://{}/mcp", upstream_listener.local_addr()?);
    tokio::spawn(serve_http(fixture, upstream_listener));

    // The gateway in front of it.
    let core = start_core(
        config(vec![http_server("fixture", upstream_url.clone())]),
        None,
    );
    let shutdown = CancellationToken::new();
    let gateway_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let gateway_url = format!("http://{}/mcp", gateway_listener.local_addr()?);
    // The production stack: the same routes behind the same guard, as an anonymous loopback
    // caller.
    let guard = mcplex_surface::Guard {
        trusted_hosts: Arc::default(),
        require_auth: false,
        max_body_bytes: mcplex_config::DEFAULT_MAX_BODY_BYTES,
        auth: Arc::new(NoCredentials),
    };
    let app = mcplex_surface::router(mcplex_surface::Routes {
        gateway: core.gateway.clone(),
        options: mcplex_surface::SurfaceOptions::default(),
        routing_mode: mcplex_config::RoutingMode::Direct,
        profiles: Vec::new(),
        max_body_bytes: mcplex_config::DEFAULT_MAX_BODY_BYTES,
        shutdown: shutdown.clone(),
    })
    .layer(axum::middleware::from_fn_with_state(
        guard,
        mcplex_surface::guard,
    ));
    tokio::spawn(mcplex_surface::serve_http(
        gateway_listener,
        app,
        shutdown.clone(),
    ));

    // One client with both paths.
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let client = Arc::new(Upstreams::start(
        &config(vec![
            http_server("direct", upstream_url),
            http_server("gateway", gateway_url),
        ]),
        None,
        events_tx,
    ));
    wait_ready(&mut events, &["direct", "gateway"]).await?;
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
    super::write_report(out, &report)?;

    client.shutdown().await;
    shutdown.cancel();
    core.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

async fn wait_ready(
    events: &mut mpsc::UnboundedReceiver<UpstreamEvent>,
    servers: &[&str],
) -> Result<()> {
    let mut ready = std::collections::BTreeSet::new();
    tokio::time::timeout(Duration::from_secs(30), async {
        while ready.len() < servers.len() {
            match events.recv().await {
                Some(UpstreamEvent {
                    server,
                    state: UpstreamState::Ready { .. },
                }) => {
                    ready.insert(server);
                }
                Some(UpstreamEvent {
                    server,
                    state: UpstreamState::Failed { reason },
                }) => {
                    anyhow::bail!("{server} failed: {reason}");
                }
                Some(_) => {}
                None => anyhow::bail!("client stopped"),
            }
        }
        Ok(())
    })
    .await
    .context("paths not ready within 30s")?
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

/// The benchmark's gateway accepts no credentials; its client is the anonymous local user.
struct NoCredentials;

impl mcplex_surface::Authenticator for NoCredentials {
    fn agent(&self, _token: &str) -> Option<mcplex_surface::Caller> {
        None
    }

    fn is_admin(&self, _key: &str) -> bool {
        false
    }
}
