//! `mcplex bench load`: a gateway process (this binary, `mcplex serve`) in front of fixture
//! upstreams, driven by N concurrent MCP sessions × M calls each. Every answer is checked
//! against what its call sent, so a lost or crossed response is counted, not just an error.
//! Reports throughput and latency, and the gateway's RSS: idle with the fleet loaded, per open
//! session, and (with `--soak`) RSS, file descriptors and threads over a long mixed run in which
//! an upstream is restarted every 30 s, then RSS and the `mcplex_sessions` gauge over rounds of
//! sessions opened and closed (`initialize` + `DELETE`): both must stay flat.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use mcplex_config::{Config, ServerConfig, Transport};
use mcplex_protocol::ServerHealth;
use mcplex_upstream::{CallOptions, UpstreamEvent, UpstreamReport, Upstreams};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::Host;
use crate::gateway::GatewayProcess;
use crate::stats::Stats;

pub struct LoadArgs {
    pub sessions: usize,
    pub calls: usize,
    pub corpus: Option<PathBuf>,
    pub soak: Option<Duration>,
    pub out: PathBuf,
}

/// The gateway under test (a separate process, so its memory is its own) in front of the
/// fixture on stdio and, with `corpus`, one fixture process per corpus server.
fn start_gateway(host: &Host, corpus: Option<&Path>, sessions: usize) -> Result<GatewayProcess> {
    let fixture = host.gateway.with_file_name("mcplex-fixture");
    ensure!(
        fixture.exists(),
        "{} not found: build it with `cargo build --release --bins --features mcplex/bench`",
        fixture.display()
    );
    let mut servers = serde_json::Map::new();
    servers.insert(
        "fixture".into(),
        json!({"command": fixture, "args": ["--name", "fixture"]}),
    );
    if let Some(corpus) = corpus {
        let text = std::fs::read_to_string(corpus)
            .with_context(|| format!("cannot read {}", corpus.display()))?;
        let tools = mcplex_fixtures::load_corpus(&text).map_err(anyhow::Error::msg)?;
        let names: std::collections::BTreeSet<&str> =
            tools.iter().map(|t| t.server.as_str()).collect();
        for server in names {
            servers.insert(
                format!("c-{server}"),
                json!({"command": fixture, "args": ["--name", server, "--no-kit", "--corpus", corpus, "--corpus-server", server]}),
            );
        }
    }
    let settings = json!({"audit_retention_days": 1, "mcpServers": servers,
                          "max_sessions": sessions + 100});
    GatewayProcess::start(
        &host.gateway,
        settings.as_object().cloned().unwrap_or_default(),
    )
}

/// `sessions` MCP sessions to the gateway's direct surface, all initialized.
async fn open_sessions(base: &str, sessions: usize) -> Result<Arc<Upstreams>> {
    let servers: Vec<ServerConfig> = (0..sessions)
        .map(|i| {
            let mut server = ServerConfig::new(
                format!("s{i}"),
                Transport::Http {
                    url: format!("{base}/mcp/all"),
                    headers: Default::default(),
                    fallback_to_sse: false,
                },
            );
            server.init_timeout = Duration::from_secs(120);
            server.call_timeout = Some(Duration::from_secs(60));
            server
        })
        .collect();
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let client = Arc::new(Upstreams::start(
        &Config::with_servers(servers),
        None,
        None,
        events_tx,
        mcplex_upstream::Isolation::unavailable(),
    ));
    let mut ready = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(180);
    while ready < sessions {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Some(UpstreamEvent {
                report: UpstreamReport::Listed { .. },
                ..
            })) => ready += 1,
            Ok(Some(UpstreamEvent {
                server,
                report: UpstreamReport::Health(ServerHealth::Unhealthy { reason }),
            })) => {
                bail!("session {server} failed: {reason}")
            }
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => bail!("only {ready} of {sessions} sessions opened"),
        }
    }
    Ok(client)
}

struct Run {
    latencies: Vec<Duration>,
    errors: usize,
    wrong: usize,
    wall: Duration,
}

/// Every session makes `calls` sequential echo calls, all sessions at once; each answer must
/// carry exactly the arguments its call sent.
async fn drive(
    client: &Arc<Upstreams>,
    tool: &str,
    sessions: usize,
    calls: usize,
    tag: u64,
) -> Run {
    let started = Instant::now();
    let tasks: Vec<_> = (0..sessions)
        .map(|i| {
            let client = client.clone();
            let tool = tool.to_owned();
            tokio::spawn(async move {
                let (mut latencies, mut errors, mut wrong) = (Vec::with_capacity(calls), 0, 0);
                for j in 0..calls {
                    let arguments = json!({"session": i, "call": j, "tag": tag});
                    let params = json!({"name": tool, "arguments": arguments});
                    let begun = Instant::now();
                    match client
                        .call_tool(&format!("s{i}"), params, CallOptions::default())
                        .await
                    {
                        Ok(result) if result["structuredContent"] == arguments => {
                            latencies.push(begun.elapsed())
                        }
                        Ok(_) => wrong += 1,
                        Err(_) => errors += 1,
                    }
                }
                (latencies, errors, wrong)
            })
        })
        .collect();
    let mut run = Run {
        latencies: Vec::new(),
        errors: 0,
        wrong: 0,
        wall: Duration::ZERO,
    };
    for task in tasks {
        match task.await {
            Ok((latencies, errors, wrong)) => {
                run.latencies.extend(latencies);
                run.errors += errors;
                run.wrong += wrong;
            }
            Err(_) => run.errors += calls,
        }
    }
    run.wall = started.elapsed();
    run
}

/// The echo tool of the gateway this bench starts (the fixture's, on `/mcp/all`).
const ECHO: &str = "fixture__echo";

/// Drives a gateway that is already running at `base` (a replica, or a load balancer in front of
/// several): `sessions` sessions × `calls` calls of `tool`, an echo whose structured content is
/// its arguments. Calls/s and latency only: the gateway's memory is not this process's to read.
pub async fn run_against(
    base: &str,
    tool: &str,
    sessions: usize,
    calls: usize,
    out: &Path,
) -> Result<ExitCode> {
    let base = base.trim_end_matches('/');
    let client = open_sessions(base, sessions).await?;
    let run = drive(&client, tool, sessions, calls, 1).await;
    let expected = sessions * calls;
    let lost = expected - run.latencies.len() - run.errors - run.wrong;
    let stats = Stats::from(run.latencies, run.errors, run.wall);
    client.shutdown().await;
    println!("load: {sessions} concurrent sessions × {calls} calls of {tool} at {base}/mcp/all");
    println!(
        "{:>9} | {:>8} | {:>9} | {:>8} | {:>8} | {:>6} | {:>5} | {:>5}",
        "sessions", "calls", "calls/s", "p50 ms", "p99 ms", "errors", "lost", "wrong"
    );
    println!(
        "{:>9} | {:>8} | {:>9.0} | {:>8.2} | {:>8.2} | {:>6} | {:>5} | {:>5}",
        sessions,
        expected,
        stats.throughput_per_s,
        stats.p50_us / 1000.0,
        stats.p99_us / 1000.0,
        run.errors,
        lost,
        run.wrong
    );
    crate::write_report(
        out,
        &json!({"benchmark": "load", "url": base, "tool": tool, "sessions": sessions,
                "calls_per_session": calls, "latency": stats, "errors": run.errors,
                "lost": lost, "wrong": run.wrong}),
    )?;
    Ok(if lost == 0 && run.wrong == 0 && run.errors == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

pub async fn run(host: &Host, args: LoadArgs) -> Result<ExitCode> {
    let limit = mcplex_upstream::raise_open_files_limit().unwrap_or(0);
    ensure!(
        limit as usize > args.sessions * 3 + 256,
        "open-file limit {limit} is too low for {} sessions",
        args.sessions
    );
    let mut gateway = start_gateway(host, args.corpus.as_deref(), args.sessions)?;
    gateway.wait_ready(Duration::from_secs(120)).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_idle = gateway.rss_kib();

    let opened = Instant::now();
    let client = open_sessions(&gateway.base, args.sessions).await?;
    let open_time = opened.elapsed();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_sessions = gateway.rss_kib();

    let run = drive(&client, ECHO, args.sessions, args.calls, 1).await;
    let expected = args.sessions * args.calls;
    let lost = expected - run.latencies.len() - run.errors - run.wrong;
    let stats = Stats::from(run.latencies, run.errors, run.wall);
    let rss_after = gateway.rss_kib();

    println!(
        "load: {} concurrent sessions × {} calls (echo through /mcp/all, fixture upstream on stdio)",
        args.sessions, args.calls
    );
    println!(
        "{:>9} | {:>8} | {:>9} | {:>8} | {:>8} | {:>8} | {:>6} | {:>5} | {:>5}",
        "sessions", "calls", "calls/s", "p50 ms", "p99 ms", "max ms", "errors", "lost", "wrong"
    );
    println!(
        "{:>9} | {:>8} | {:>9.0} | {:>8.2} | {:>8.2} | {:>8.2} | {:>6} | {:>5} | {:>5}",
        args.sessions,
        expected,
        stats.throughput_per_s,
        stats.p50_us / 1000.0,
        stats.p99_us / 1000.0,
        stats.max_us / 1000.0,
        run.errors,
        lost,
        run.wrong
    );
    let per_session = rss_sessions.saturating_sub(rss_idle) as f64 / args.sessions.max(1) as f64;
    println!();
    println!(
        "gateway RSS: {:.1} MiB idle with the fleet loaded ({}), {:.1} MiB with {} sessions open ({:.1} KiB per idle session), {:.1} MiB after the run; {} sessions opened in {:.2} s",
        rss_idle as f64 / 1024.0,
        args.corpus
            .as_deref()
            .map(|c| c.display().to_string())
            .unwrap_or_else(|| "fixture only".into()),
        rss_sessions as f64 / 1024.0,
        args.sessions,
        per_session,
        rss_after as f64 / 1024.0,
        args.sessions,
        open_time.as_secs_f64()
    );

    let soak = match args.soak {
        Some(duration) => Some(soak(&gateway, &client, args.sessions.min(50), duration).await?),
        None => None,
    };
    let open_close = match args.soak {
        Some(_) => Some(open_and_close(&gateway).await?),
        None => None,
    };
    let flat = open_close
        .as_ref()
        .is_none_or(|rounds| rounds["flat"] == true);
    client.shutdown().await;
    let report = json!({
        "benchmark": "load",
        "sessions": args.sessions, "calls_per_session": args.calls, "calls": expected,
        "latency": stats, "errors": run.errors, "lost": lost, "wrong": run.wrong,
        "rss_kib": {"idle": rss_idle, "sessions_open": rss_sessions, "after_run": rss_after, "per_idle_session": per_session},
        "corpus": args.corpus.as_ref().map(|c| c.display().to_string()),
        "sessions_open_seconds": open_time.as_secs_f64(),
        "soak": soak,
        "open_close": open_close,
    });
    crate::write_report(&args.out, &report)?;
    Ok(if lost == 0 && run.wrong == 0 && run.errors == 0 && flat {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Mixed traffic from `sessions` sessions for `duration`, restarting the upstream every 30 s,
/// sampling the gateway's RSS, open files and threads every 10 s.
async fn soak(
    gateway: &GatewayProcess,
    client: &Arc<Upstreams>,
    sessions: usize,
    duration: Duration,
) -> Result<Value> {
    let started = Instant::now();
    let mut samples = Vec::new();
    let mut last_sample = Instant::now() - Duration::from_secs(10);
    let mut last_restart = Instant::now();
    let (mut calls, mut errors) = (0usize, 0usize);
    let mut round = 2u64;
    while started.elapsed() < duration {
        if last_restart.elapsed() >= Duration::from_secs(30) {
            // Crash the upstream; the supervisor restarts it. Calls meanwhile may fail.
            let _ = client
                .call_tool(
                    "s0",
                    json!({"name": "fixture__crash", "arguments": {}}),
                    CallOptions {
                        timeout: Some(Duration::from_secs(2)),
                        ..Default::default()
                    },
                )
                .await;
            last_restart = Instant::now();
        }
        let run = drive(client, ECHO, sessions, 5, round).await;
        calls += run.latencies.len() + run.errors + run.wrong;
        errors += run.errors + run.wrong;
        round += 1;
        if last_sample.elapsed() >= Duration::from_secs(10) {
            samples.push(json!({"t_s": started.elapsed().as_secs(), "rss_kib": gateway.rss_kib(), "fds": gateway.fds(), "threads": gateway.threads()}));
            last_sample = Instant::now();
        }
    }
    let first = samples.first().cloned().unwrap_or(Value::Null);
    let last = samples.last().cloned().unwrap_or(Value::Null);
    println!();
    println!(
        "soak: {:.0} s, {calls} calls ({errors} failed around the restarts), {} samples",
        duration.as_secs_f64(),
        samples.len()
    );
    println!(
        "{:>8} | {:>10} | {:>6} | {:>8}",
        "t s", "RSS MiB", "fds", "threads"
    );
    for sample in &samples {
        println!(
            "{:>8} | {:>10.1} | {:>6} | {:>8}",
            sample["t_s"].as_u64().unwrap_or(0),
            sample["rss_kib"].as_f64().unwrap_or(0.0) / 1024.0,
            sample["fds"].as_u64().unwrap_or(0),
            sample["threads"].as_u64().unwrap_or(0)
        );
    }
    Ok(
        json!({"seconds": duration.as_secs(), "calls": calls, "failed": errors, "samples": samples, "first": first, "last": last}),
    )
}

/// Sessions opened and closed per round of [`open_and_close`].
const OPEN_CLOSE_SESSIONS: usize = 3000;
const OPEN_CLOSE_ROUNDS: usize = 4;
/// Sessions opened at once.
const OPEN_CLOSE_WORKERS: usize = 25;
/// How much RSS may grow after the first round (allocator warm-up) for the run to count as flat.
const FLAT_SLACK: f64 = 0.10;

/// Rounds of [`OPEN_CLOSE_SESSIONS`] sessions, each opened (`initialize`, `initialized`) and
/// closed (`DELETE`), [`OPEN_CLOSE_WORKERS`] at a time; after each round the gateway's RSS and its `mcplex_sessions`
/// gauge. Flat: every round after the first within [`FLAT_SLACK`] of the first, and the gauge
/// back where it was before the rounds.
async fn open_and_close(gateway: &GatewayProcess) -> Result<Value> {
    let http = reqwest::Client::builder().no_proxy().build()?;
    // The load sessions opened earlier are still open: the gauge must come back to this.
    let baseline = sessions_gauge(&http, &gateway.base).await?;
    let mut rounds = Vec::new();
    for round in 1..=OPEN_CLOSE_ROUNDS {
        let started = Instant::now();
        let workers: Vec<_> = (0..OPEN_CLOSE_WORKERS)
            .map(|_| {
                let (http, base) = (http.clone(), gateway.base.clone());
                tokio::spawn(async move {
                    let mut failed = 0usize;
                    for _ in 0..OPEN_CLOSE_SESSIONS / OPEN_CLOSE_WORKERS {
                        if open_and_close_one(&http, &base).await.is_err() {
                            failed += 1;
                        }
                    }
                    failed
                })
            })
            .collect();
        let mut failed = 0;
        for worker in workers {
            failed += worker
                .await
                .unwrap_or(OPEN_CLOSE_SESSIONS / OPEN_CLOSE_WORKERS);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let gauge = sessions_gauge(&http, &gateway.base).await?;
        rounds.push(
            json!({"round": round, "rss_kib": gateway.rss_kib(), "sessions_gauge": gauge,
                           "failed": failed, "seconds": started.elapsed().as_secs_f64()}),
        );
    }
    let rss = |r: &Value| r["rss_kib"].as_f64().unwrap_or(0.0);
    let first = rounds.first().map_or(0.0, rss);
    let flat = rounds.iter().all(|r| {
        rss(r) <= first * (1.0 + FLAT_SLACK) && r["sessions_gauge"] == baseline && r["failed"] == 0
    });
    println!();
    println!(
        "open and close: {OPEN_CLOSE_ROUNDS} rounds of {OPEN_CLOSE_SESSIONS} sessions (initialize + DELETE)"
    );
    println!(
        "{:>6} | {:>10} | {:>8} | {:>6} | {:>6}",
        "round", "RSS MiB", "sessions", "failed", "s"
    );
    for r in &rounds {
        println!(
            "{:>6} | {:>10.1} | {:>8} | {:>6} | {:>6.1}",
            r["round"].as_u64().unwrap_or(0),
            rss(r) / 1024.0,
            r["sessions_gauge"].as_i64().unwrap_or(-1),
            r["failed"].as_u64().unwrap_or(0),
            r["seconds"].as_f64().unwrap_or(0.0)
        );
    }
    println!(
        "RSS {} (every round within {:.0}% of the first); the sessions gauge {} at the {baseline} load sessions still open",
        if flat {
            "stayed flat"
        } else {
            "did NOT stay flat"
        },
        FLAT_SLACK * 100.0,
        if rounds.iter().all(|r| r["sessions_gauge"] == baseline) {
            "came back"
        } else {
            "did NOT come back"
        },
    );
    Ok(
        json!({"sessions_per_round": OPEN_CLOSE_SESSIONS, "rounds": rounds, "flat": flat,
              "sessions_gauge_before": baseline}),
    )
}

/// The gateway's `mcplex_sessions` gauge (-1 when it is not in the metrics).
async fn sessions_gauge(http: &reqwest::Client, base: &str) -> Result<i64> {
    let metrics = http
        .get(format!("{base}/metrics"))
        .send()
        .await?
        .text()
        .await?;
    Ok(metrics
        .lines()
        .find_map(|line| line.strip_prefix("mcplex_sessions "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(-1))
}

/// One session opened and closed on the direct surface.
async fn open_and_close_one(http: &reqwest::Client, base: &str) -> Result<()> {
    let url = format!("{base}/mcp/all");
    let accept = "application/json, text/event-stream";
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"}}});
    let response = http
        .post(&url)
        .header("Accept", accept)
        .json(&initialize)
        .send()
        .await?;
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .context("no session id")?;
    response.bytes().await?;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    http.post(&url)
        .header("Accept", accept)
        .header("Mcp-Session-Id", &session)
        .header("MCP-Protocol-Version", "2025-06-18")
        .json(&initialized)
        .send()
        .await?
        .bytes()
        .await?;
    let deleted = http
        .delete(&url)
        .header("Mcp-Session-Id", &session)
        .header("MCP-Protocol-Version", "2025-06-18")
        .send()
        .await?;
    ensure!(
        deleted.status().is_success(),
        "DELETE answered {}",
        deleted.status()
    );
    Ok(())
}
