//! `mcplex bench sandbox`: what the stdio sandbox adds to a server's start. `/bin/true` is
//! started and waited for, directly and through the sandbox helper in each of its forms
//! (Landlock alone, as on a kernel that refuses namespaces; the default; the default with no
//! network, which adds a network namespace; the default with the gateway's port closed, which
//! adds a Landlock rule for every other port), alternating round by round so that drift hits
//! each alike. The difference of the medians is the cost per start.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use mcplex_config::Sandbox;
use mcplex_sandbox::{Plan, Policy, Protected, Support};
use serde_json::json;

use crate::Host;
use crate::stats::Stats;

const PROGRAM: &str = "/bin/true";

pub fn run(host: &Host, starts: usize, out: &Path) -> Result<ExitCode> {
    let support = Support::probe(&host.gateway);
    let scratch = tempfile::tempdir().context("a scratch directory")?;
    let data = scratch.path().join("data");
    let temp = scratch.path().join("temp");
    for dir in [&data, &temp] {
        std::fs::create_dir_all(dir).context("scratch directories")?;
    }
    std::fs::write(data.join("api_key"), "mcplex_admin_bench").context("a key file")?;
    let protected = Protected::new([data]);
    // The gateway's port closed to the server (a listener that asks for no credential).
    let closing = protected.clone().closing([8080]);
    let plan_for = |protected: &Protected, network: bool, namespaces: bool| -> Result<Plan> {
        let sandbox = Sandbox {
            network,
            ..Sandbox::default()
        };
        let mut support = support.clone();
        if !namespaces {
            support.namespaces = Err(mcplex_sandbox::NamespacesError::NotProbed(
                "left out by the benchmark".to_owned(),
            ));
        }
        let policy = Policy {
            sandbox: &sandbox,
            quarantined: false,
            command: PROGRAM,
            args: &[],
            working_dir: None,
            home: None,
            cache_home: None,
            temp_dir: &temp,
        };
        let (plan, _) = mcplex_sandbox::plan(&policy, protected, &support)
            .map_err(|refused| anyhow::anyhow!("{refused}"))?;
        plan.context("the plan is empty")
    };
    let mut variants: Vec<(&str, Option<Plan>)> = vec![("direct", None)];
    if support.landlock_abi > 0 {
        variants.push(("landlock only", Some(plan_for(&protected, true, false)?)));
    }
    if support.namespaces.is_ok() {
        variants.push(("sandbox (default)", Some(plan_for(&protected, true, true)?)));
        variants.push((
            "sandbox, no network",
            Some(plan_for(&protected, false, true)?),
        ));
    }
    if support.landlock_abi >= 4 && support.namespaces.is_ok() {
        variants.push((
            "sandbox, port closed",
            Some(plan_for(&closing, true, true)?),
        ));
    }
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); variants.len()];
    // One warm-up round, then alternate.
    for round in 0..=starts {
        for (index, (_, plan)) in variants.iter().enumerate() {
            let elapsed = start_once(&host.gateway, plan.as_ref())?;
            if round > 0 {
                times[index].push(elapsed);
            }
        }
    }
    let stats: Vec<Stats> = times
        .into_iter()
        .map(|t| Stats::from(t, 0, Duration::from_secs(1)))
        .collect();
    let direct = stats.first().map_or(0.0, |s| s.p50_us);
    println!(
        "start and wait for {PROGRAM}, {starts} starts each; Landlock ABI {}, namespaces {}",
        support.landlock_abi,
        match &support.namespaces {
            Ok(()) => "available".to_owned(),
            Err(why) => format!("unavailable ({why})"),
        }
    );
    println!(
        "{:>20} | {:>9} | {:>9} | {:>14}",
        "start", "p50 ms", "p99 ms", "added p50 ms"
    );
    let mut rows = Vec::new();
    for ((name, _), stats) in variants.iter().zip(&stats) {
        println!(
            "{:>20} | {:>9.2} | {:>9.2} | {:>14.2}",
            name,
            stats.p50_us / 1000.0,
            stats.p99_us / 1000.0,
            (stats.p50_us - direct) / 1000.0
        );
        rows.push(
            json!({"variant": name, "latency": stats, "added_p50_us": stats.p50_us - direct}),
        );
    }
    let report = json!({
        "benchmark": "sandbox",
        "program": PROGRAM,
        "starts": starts,
        "landlock_abi": support.landlock_abi,
        "namespaces": support.namespaces.as_ref().err().map(ToString::to_string),
        "variants": rows,
    });
    crate::write_report(out, &report)?;
    Ok(ExitCode::SUCCESS)
}

/// Starts `PROGRAM` (through the helper with `plan`) and waits for it: the elapsed time.
fn start_once(helper: &PathBuf, plan: Option<&Plan>) -> Result<Duration> {
    let mut command = match plan {
        None => Command::new(PROGRAM),
        Some(plan) => {
            let mut command = Command::new(helper);
            command
                .arg(mcplex_sandbox::HELPER_ARG)
                .arg(serde_json::to_string(plan)?)
                .args(["--", PROGRAM]);
            command
        }
    };
    command
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let started = Instant::now();
    let status = command.status().context("start")?;
    let elapsed = started.elapsed();
    ensure!(status.success(), "{PROGRAM} ended with {status}");
    Ok(elapsed)
}
