//! `mcplex bench control`: how long a decision written to the store takes to be in force on
//! every running gateway. Starts N gateway processes (`serve --demo`) on one store (a fresh
//! SQLite data directory, or the PostgreSQL database `--store` names),
//! then, round after round, writes to the store directly (as the CLI does when it does not go
//! through an API) and polls every replica until each enforces the write:
//!
//! - revocation: a token that every replica accepts is revoked; done when every replica answers
//!   it with 401;
//! - approval: the quarantined demo server is approved; done when every replica lists its
//!   `demo__echo`.
//!
//! Replicas poll the store every [`Host::store_poll_interval`] (100 ms): on SQLite the slowest of N
//! replicas is behind by most of one interval, plus the reload; on PostgreSQL a NOTIFY wakes
//! them at once. The poll here is every 2 ms.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use mcplex_state::{Location, Store, TokenSpec};
use mcplex_trust::{Approvals, Permissions};
use serde_json::{Value, json};

use crate::Host;
use crate::stats::Stats;

/// How long one write may take to reach every replica before the round counts as an error.
const ROUND_LIMIT: Duration = Duration::from_secs(10);

pub async fn run(
    host: &Host,
    replicas: usize,
    rounds: usize,
    postgres: Option<String>,
    out: &Path,
) -> Result<ExitCode> {
    let dir = tempfile::tempdir().context("cannot create a data directory")?;
    // Private, as a data directory should be (it holds the tokens' key).
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )?;
    let location = match &postgres {
        Some(url) => Location::Postgres(url.clone()),
        None => Location::Directory(dir.path().to_owned()),
    };
    let mut gateways = Vec::new();
    for index in 0..replicas.max(1) {
        let own = dir.path().join(format!("replica-{index}"));
        gateways.push(Replica::start(host, &own, postgres.as_deref(), dir.path())?);
    }
    let (store, _) = Store::open_at(&location)
        .with_context(|| format!("cannot open the replicas' store {location}"))?;
    // Token names are unique in a store forever: each run has its own prefix.
    let run_id = std::process::id();
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(5))
        .build()?;
    let addresses: Vec<String> = gateways.iter().map(|g| g.address.clone()).collect();
    wait_until(
        &http,
        &addresses,
        None,
        Expect::Listed(true),
        Duration::from_secs(60),
    )
    .await
    .context("the replicas did not become ready")?;

    let (mut revocations, mut revocation_errors) = (Vec::new(), 0);
    let (mut approvals, mut approval_errors) = (Vec::new(), 0);
    let started = Instant::now();
    for round in 0..rounds {
        let created = store.create_token(TokenSpec {
            name: format!("bench-{run_id}-{round}"),
            servers: None,
            permissions: Permissions::parse("read,write").unwrap_or_default(),
            profile: None,
            expires_at: None,
            limits: Default::default(),
        })?;
        let token = created.token;
        wait_until(
            &http,
            &addresses,
            Some(&token),
            Expect::Status(200),
            ROUND_LIMIT,
        )
        .await?;
        let t0 = Instant::now();
        store.revoke_token(&format!("bench-{run_id}-{round}"))?;
        match wait_until(
            &http,
            &addresses,
            Some(&token),
            Expect::Status(401),
            ROUND_LIMIT,
        )
        .await
        {
            Ok(()) => revocations.push(t0.elapsed()),
            Err(_) => revocation_errors += 1,
        }

        let mut state = store.load_approvals()?;
        store.apply(&state.quarantine_server("demo"))?;
        wait_until(&http, &addresses, None, Expect::Listed(false), ROUND_LIMIT).await?;
        let mut state: Approvals = store.load_approvals()?;
        let t0 = Instant::now();
        store.apply(&state.approve_server("demo"))?;
        match wait_until(&http, &addresses, None, Expect::Listed(true), ROUND_LIMIT).await {
            Ok(()) => approvals.push(t0.elapsed()),
            Err(_) => approval_errors += 1,
        }
    }
    let wall = started.elapsed();
    let revocation = Stats::from(revocations, revocation_errors, wall);
    let approval = Stats::from(approvals, approval_errors, wall);

    let kind = if postgres.is_some() {
        "PostgreSQL"
    } else {
        "SQLite"
    };
    println!(
        "control plane: a write to the {kind} store until all {} replicas enforce it ({rounds} rounds)",
        addresses.len()
    );
    println!(
        "{:12} {:>10} {:>10} {:>10} {:>8}",
        "write", "p50 ms", "p99 ms", "max ms", "errors"
    );
    for (name, stats) in [("revocation", &revocation), ("approval", &approval)] {
        println!(
            "{:12} {:>10.1} {:>10.1} {:>10.1} {:>8}",
            name,
            stats.p50_us / 1000.0,
            stats.p99_us / 1000.0,
            stats.max_us / 1000.0,
            stats.errors
        );
    }
    crate::write_report(
        out,
        &json!({
            "store": kind,
            "replicas": addresses.len(),
            "rounds": rounds,
            "poll_interval_ms": host.store_poll_interval.as_millis() as u64,
            "revocation": revocation,
            "approval": approval,
        }),
    )?;
    drop(gateways);
    Ok(ExitCode::SUCCESS)
}

/// What every replica must show.
#[derive(Clone, Copy)]
enum Expect {
    /// `tools/list` answers with this HTTP status.
    Status(u16),
    /// `demo__echo` is (or is not) listed.
    Listed(bool),
}

/// Polls every replica (every 2 ms) until each shows `expect`, or `limit` passes.
async fn wait_until(
    http: &reqwest::Client,
    addresses: &[String],
    token: Option<&str>,
    expect: Expect,
    limit: Duration,
) -> Result<()> {
    let deadline = Instant::now() + limit;
    let mut pending: Vec<&String> = addresses.iter().collect();
    while !pending.is_empty() {
        let mut still = Vec::new();
        for address in pending {
            if !shows(http, address, token, expect).await {
                still.push(address);
            }
        }
        pending = still;
        if pending.is_empty() {
            break;
        }
        if Instant::now() > deadline {
            bail!(
                "{} replica(s) did not follow within {limit:?}",
                pending.len()
            );
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    Ok(())
}

async fn shows(http: &reqwest::Client, address: &str, token: Option<&str>, expect: Expect) -> bool {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    }}});
    let mut request = http
        .post(format!("http://{address}/mcp/all"))
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/list")
        .header("Accept", "application/json, text/event-stream")
        .json(&body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let Ok(response) = request.send().await else {
        return false;
    };
    let status = response.status().as_u16();
    match expect {
        Expect::Status(wanted) => status == wanted,
        Expect::Listed(wanted) => {
            let text = response.text().await.unwrap_or_default();
            let data = text
                .lines()
                .find_map(|line| line.strip_prefix("data: "))
                .unwrap_or(&text);
            let listed = serde_json::from_str::<Value>(data)
                .ok()
                .and_then(|answer| {
                    answer["result"]["tools"]
                        .as_array()
                        .map(|tools| tools.iter().any(|t| t["name"] == "demo__echo"))
                })
                .unwrap_or(false);
            status == 200 && listed == wanted
        }
    }
}

/// One `mcplex serve --demo` process on the shared data directory, killed on drop.
struct Replica {
    child: Child,
    address: String,
}

impl Replica {
    /// A replica with a data directory of its own (`own`) on the PostgreSQL store `postgres`,
    /// or on the SQLite store in `shared`.
    fn start(host: &Host, own: &Path, postgres: Option<&str>, shared: &Path) -> Result<Replica> {
        let mut command = Command::new(&host.gateway);
        command.args(["serve", "--demo", "--listen", "127.0.0.1:0", "--data-dir"]);
        match postgres {
            Some(url) => {
                std::fs::create_dir_all(own)?;
                command.arg(own).arg("--store").arg(url);
            }
            None => {
                command.arg(shared);
            }
        }
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start a replica")?;
        let stdout = child.stdout.take().context("replica has no stdout")?;
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line)?;
        let address = line
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .map(str::to_owned)
            .with_context(|| format!("the replica did not say where it listens: {line:?}"))?;
        Ok(Replica { child, address })
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
