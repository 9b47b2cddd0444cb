//! The official conformance suite (`@modelcontextprotocol/conformance`, npm) against the gateway:
//! every server scenario with the conformance fixture behind `/mcp/all` (`"namespace": false`),
//! compared with the same fixture tested directly; and the scenarios that need no special
//! upstream in front of ordinary servers (server-everything, mcp-server-time).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;

use crate::harness::{Gateway, conformance_fixture_http, tools};

/// One run of the suite.
struct Run {
    /// Outcome per scenario, from the summary lines (`✓ name: 1 passed, 0 failed`).
    scenarios: BTreeMap<String, bool>,
    /// Scenarios the baseline check flagged: failed or warned, and not in the baseline.
    unexpected: BTreeSet<String>,
    /// Scenarios that failed or warned as the baseline expects.
    expected: BTreeSet<String>,
    output: String,
    succeeded: bool,
}

fn run_suite(url: &str, extra: &[&str]) -> Run {
    let output = Command::new("node")
        .arg(&tools().conformance)
        .args(["server", "--url", url])
        .args(extra)
        .stdin(Stdio::null())
        .output()
        .expect("run the conformance suite (node)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let summary = text.split("=== SUMMARY ===").nth(1).unwrap_or_default();
    let mut scenarios = BTreeMap::new();
    for line in summary.lines() {
        let Some((mark, rest)) = line.split_once(' ') else {
            continue;
        };
        let Some((name, counts)) = rest.split_once(": ") else {
            continue;
        };
        if counts.contains(" passed, ") {
            scenarios.insert(
                name.to_owned(),
                mark == "✓" && counts.ends_with(" 0 failed"),
            );
        }
    }
    let unexpected = text
        .split("Unexpected failures (not in baseline):")
        .nth(1)
        .unwrap_or_default()
        .lines()
        .skip(1)
        .map_while(|line| line.trim().strip_prefix("✗ ").map(str::to_owned))
        .collect();
    let expected = text
        .split("Expected failures (in baseline):")
        .nth(1)
        .unwrap_or_default()
        .lines()
        .skip(1)
        .map_while(|line| line.trim().strip_prefix("~ ").map(str::to_owned))
        .collect();
    Run {
        scenarios,
        unexpected,
        expected,
        output: text,
        succeeded: output.status.success(),
    }
}

/// The scenarios listed in an expected-failures file (`  - name` lines).
fn baseline(path: &Path) -> BTreeSet<String> {
    std::fs::read_to_string(path)
        .expect("expected-failures file")
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .map(|name| name.trim().to_owned())
        .collect()
}

#[test]
fn every_server_scenario_passes_through_the_gateway_as_it_does_directly() {
    // Directly, against an empty baseline: every failure and warning of the fixture is flagged.
    let scratch = tempfile::tempdir().expect("temp dir");
    let empty = scratch.path().join("none.yml");
    std::fs::write(&empty, "server: []\n").expect("write baseline");
    let (_fixture, port) = conformance_fixture_http();
    let direct = run_suite(
        &format!("http://127.0.0.1:{port}/mcp"),
        &[
            "--suite",
            "all",
            "--expected-failures",
            &empty.display().to_string(),
        ],
    );
    assert!(
        direct.scenarios.len() >= 32,
        "the suite ran {} scenarios:\n{}",
        direct.scenarios.len(),
        direct.output
    );

    let gateway = Gateway::start(json!({"mcpServers": {"conformance": {
        "command": tools().conformance_fixture,
        "namespace": false
    }}}));
    gateway.wait_ready();
    let expected = tools().repo.join("tests/conformance/expected-failures.yml");
    let through = run_suite(
        &format!("{}/all", gateway.url),
        &[
            "--suite",
            "all",
            "--expected-failures",
            &expected.display().to_string(),
        ],
    );

    let mut table = String::from("| scenario | direct | through mcplex |\n|---|---|---|\n");
    let word = |run: &Run, scenario: &str| match run.scenarios.get(scenario) {
        Some(true) if run.unexpected.contains(scenario) => "pass, warning",
        Some(true) if run.expected.contains(scenario) => "pass, warning (expected)",
        Some(true) => "pass",
        Some(false) => "FAIL",
        None => "not run",
    };
    for scenario in direct.scenarios.keys() {
        table.push_str(&format!(
            "| {scenario} | {} | {} |\n",
            word(&direct, scenario),
            word(&through, scenario)
        ));
    }
    eprintln!("{table}");
    let lost: Vec<&String> = direct
        .scenarios
        .iter()
        .filter(|(scenario, passed)| **passed && through.scenarios.get(*scenario) != Some(&true))
        .map(|(scenario, _)| scenario)
        .collect();
    assert!(
        lost.is_empty(),
        "passing directly but not through mcplex: {lost:?}\n{table}\n{}",
        through.output
    );
    // Through mcplex, exactly the baseline fails or warns (the suite checks both directions)...
    assert!(through.succeeded, "{table}\n{}", through.output);
    // ...and the baseline holds only scenarios the fixture fails or warns on by itself.
    for scenario in baseline(&expected) {
        assert!(
            direct.unexpected.contains(&scenario),
            "{scenario} is an expected failure, but the fixture passes it directly\n{table}"
        );
    }
}

#[test]
fn scenarios_that_need_no_special_upstream_pass_in_front_of_ordinary_servers() {
    let gateway = Gateway::start(json!({"mcpServers": {
        "everything": {"command": "node", "args": [tools().everything, "stdio"]},
        "time": {"command": tools().time_server}
    }}));
    gateway.wait_ready();
    for scenario in [
        "server-initialize",
        "ping",
        "tools-list",
        "logging-set-level",
        "dns-rebinding-protection",
    ] {
        for path in ["/all", ""] {
            let run = run_suite(&format!("{}{path}", gateway.url), &["--scenario", scenario]);
            // One scenario prints `Passed: n/n, 0 failed, 0 warnings` rather than a summary.
            assert!(
                run.succeeded && run.output.contains(", 0 failed, 0 warnings"),
                "{scenario} at /mcp{path}:\n{}",
                run.output
            );
        }
    }
}
