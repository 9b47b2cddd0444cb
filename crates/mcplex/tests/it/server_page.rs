//! A server's page (issue #33): `GET /api/v1/servers/{name}` (what runs, secrets replaced; the
//! history of a crash loop and of a restart), `POST .../restart` (a new process), the trends
//! narrowed to one server or one tool with the median and 95th percentile, matching `/metrics`
//! after a known sequence of calls; and the page itself in Chromium.

use std::time::Duration;

use serde_json::{Value, json};

use crate::browser::{browse, chromium};
use crate::harness::{Gateway, eventually, fixture_server, tools};

const SECRET: &str = "sk-page-secret-0077";

/// `fixture`, started through a shell that writes a line holding its secret to stderr first.
fn chatty_fixture() -> Value {
    let script = "echo \"fixture starting with $PAGE_TOKEN\" >&2; exec \"$0\" --name fixture";
    json!({
        "command": "sh",
        "args": ["-c", script, tools().fixture],
        "env": {"PAGE_TOKEN": SECRET},
    })
}

fn kinds(page: &Value) -> Vec<String> {
    page["history"]
        .as_array()
        .map(|events| {
            events
                .iter()
                .filter_map(|e| e["kind"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Crashes `fixture` `times` times, waiting after each for its history to say it was lost and
/// is ready again (its status alone may still be the ready of before the crash).
fn crash(gateway: &Gateway, times: usize) {
    let page = || gateway.api("GET", "/api/v1/servers/fixture", "").1;
    let lost = |page: &Value| kinds(page).iter().filter(|k| *k == "lost").count();
    for round in 0..times {
        let before = lost(&page());
        let _ = gateway.client("legacy", "call", &["fixture__crash", "{}"]);
        eventually(
            &format!("the fixture back after crash {round}"),
            Duration::from_secs(30),
            || {
                let now = page();
                let back = lost(&now) > before && kinds(&now).last().is_some_and(|k| k == "ready");
                back.then_some(())
            },
        );
    }
}

fn pid(gateway: &Gateway) -> Option<u64> {
    let answer = gateway.client("legacy", "call", &["fixture__pid", "{}"]);
    let inner = answer["result"]["structuredContent"]["pid"].as_u64()?;
    Some(crate::process_ids::host_pid(
        gateway.pid(),
        "fixture",
        inner,
    ))
}

#[test]
fn a_servers_page_shows_what_runs_its_history_and_a_restart() {
    let gateway = Gateway::start(json!({"mcpServers": {"fixture": chatty_fixture()}}));
    gateway.wait_ready();
    let page = || {
        let (status, page) = gateway.api("GET", "/api/v1/servers/fixture", "");
        assert_eq!(status, 200, "{page}");
        page
    };
    let first = page();
    assert_eq!(first["server"]["status"], "ready", "{first}");
    let transport = &first["config"]["transport"];
    assert_eq!(transport["type"], "stdio", "{first}");
    assert_eq!(transport["command"], "sh", "{first}");
    assert_eq!(
        transport["env"],
        json!({"PAGE_TOKEN": "[redacted]"}),
        "{first}"
    );
    assert_eq!(
        kinds(&first).get(..2),
        Some(&["connecting".to_owned(), "ready".to_owned()][..]),
        "{first}"
    );
    assert!(
        first["history"][1]["detail"]
            .as_str()
            .is_some_and(|d| d.contains(" tools, protocol ")),
        "{first}"
    );

    crash(&gateway, 2);
    let crashed = page();
    let lost: Vec<&Value> = crashed["history"]
        .as_array()
        .expect("history")
        .iter()
        .filter(|e| e["kind"] == "lost")
        .collect();
    assert_eq!(lost.len(), 2, "{crashed}");
    // How the process ended, not only that the connection went.
    assert!(
        lost.iter().all(|e| e["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("process exited (exit status: "))),
        "{crashed}"
    );
    assert_eq!(crashed["server"]["failures"]["recent"], 2, "{crashed}");

    let before = pid(&gateway).expect("pid");
    let (status, done) = gateway.api("POST", "/api/v1/servers/fixture/restart", "");
    assert_eq!(status, 200, "{done}");
    assert!(
        done["message"]
            .as_str()
            .is_some_and(|m| m.contains("restarted fixture")),
        "{done}"
    );
    let after = eventually("the restarted fixture", Duration::from_secs(30), || {
        pid(&gateway).filter(|pid| *pid != before)
    });
    assert_ne!(before, after);
    let restarted = page();
    let kinds = kinds(&restarted);
    let at = kinds
        .iter()
        .rposition(|k| k == "restarted")
        .unwrap_or_else(|| panic!("no restart in {restarted}"));
    assert_eq!(kinds[at + 1..], ["connecting", "ready"], "{restarted}");
    // The history went on: the crashes before the restart are still there.
    assert_eq!(
        kinds.iter().filter(|k| *k == "lost").count(),
        2,
        "{restarted}"
    );
    assert!(!restarted.to_string().contains(SECRET), "{restarted}");

    let (status, missing) = gateway.api("GET", "/api/v1/servers/nope", "");
    assert_eq!(status, 404, "{missing}");
    let (status, missing) = gateway.api("POST", "/api/v1/servers/nope/restart", "");
    assert_eq!(status, 404, "{missing}");
    // Operators only: a page is not for a caller without the admin key.
    let (status, _) = crate::harness::http_send(
        gateway.authority(),
        "GET",
        "/api/v1/servers/fixture",
        &[],
        "",
    );
    assert_eq!(status, 401);
}

/// The sum of `series{labels}` lines of the Prometheus text.
fn metric(text: &str, series: &str) -> f64 {
    text.lines()
        .filter(|line| line.starts_with(series))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[test]
fn trends_narrowed_to_a_server_or_a_tool_match_the_metrics() {
    let gateway = Gateway::start(json!({"mcpServers": {
        "fixture": fixture_server("fixture", &[]),
        "other": fixture_server("other", &[])
    }}));
    gateway.wait_ready();
    for i in 0..5 {
        let args = format!(r#"{{"i": {i}}}"#);
        gateway.client("legacy", "call", &["other__echo", &args]);
    }
    gateway.client("legacy", "call", &["other__add", r#"{"a": 1, "b": 2}"#]);
    gateway.client("legacy", "call", &["fixture__echo", "{}"]);
    let trend = |query: &str| {
        let (status, trend) = gateway.api("GET", &format!("/api/v1/trends?hours=1&{query}"), "");
        assert_eq!(status, 200, "{trend}");
        trend["buckets"].as_array().expect("buckets").clone()
    };
    let calls = |buckets: &[Value]| {
        buckets
            .iter()
            .filter_map(|b| b["calls"].as_u64())
            .sum::<u64>()
    };
    // The audit log is written by its own task: wait for all seven rows.
    eventually(
        "the calls in the audit log",
        Duration::from_secs(10),
        || (calls(&trend("")) == 7).then_some(()),
    );
    let (_, metrics) = gateway.get("/metrics");
    let other = trend("server=other");
    let echo = trend("tool=other:echo");
    assert_eq!(
        calls(&other) as f64,
        metric(&metrics, r#"mcplex_tool_calls_total{server="other","#),
        "{metrics}"
    );
    assert_eq!(
        calls(&echo) as f64,
        metric(
            &metrics,
            r#"mcplex_tool_calls_total{server="other",tool="echo","#
        ),
        "{metrics}"
    );
    assert_eq!((calls(&other), calls(&echo)), (6, 5));
    assert_eq!(calls(&trend("tool=other:nope")), 0);
    assert_eq!(calls(&trend("server=fixture")), 1);
    assert_eq!(
        calls(&trend("server=oth")),
        0,
        "a prefix of a name is not the server"
    );
    for bucket in other.iter().filter(|b| b["calls"].as_u64() > Some(0)) {
        let (p50, p95, max) = (&bucket["p50_us"], &bucket["p95_us"], &bucket["max_us"]);
        let (p50, p95, max) = (p50.as_u64(), p95.as_u64(), max.as_u64());
        assert!(p50 > Some(0) && p50 <= p95 && p95 <= max, "{bucket}");
    }
    // Through the gateway, no call took longer than the histogram's count says it saw.
    assert_eq!(
        metric(
            &metrics,
            r#"mcplex_tool_call_seconds_count{server="other"}"#
        ),
        6.0,
        "{metrics}"
    );
}

#[test]
fn an_operator_reads_a_crash_looping_servers_page_and_restarts_it_in_the_browser() {
    let Some(browser) = chromium() else { return };
    let gateway = Gateway::start(json!({"mcpServers": {"fixture": chatty_fixture()}}));
    gateway.wait_ready();
    for i in 0..3 {
        gateway.client(
            "legacy",
            "call",
            &["fixture__echo", &format!(r#"{{"i": {i}}}"#)],
        );
    }
    crash(&gateway, 3);
    // A config edit the gateway refuses (a misspelled key): the queue says so.
    let path = gateway.dir.path().join("config.json");
    let edit = json!({"mcpServers": {"fixture": chatty_fixture()}, "routng_mode": "direct"});
    std::fs::write(&path, edit.to_string()).expect("edit the config");
    eventually("the edit refused", Duration::from_secs(10), || {
        let (_, config) = gateway.api("GET", "/api/v1/config", "");
        config["refused_edit"].is_string().then_some(())
    });
    let seen = browse(&gateway, &browser, "server", "");
    let needs = seen["needs_you"].as_str().unwrap_or_default();
    assert!(
        needs.contains("Server fixture failed 3 times")
            && needs.contains("A config edit was refused"),
        "{seen}"
    );
    let refused = seen["refused_edit"].as_str().unwrap_or_default();
    assert!(
        refused.contains("config.json") && refused.contains("routng_mode"),
        "{seen}"
    );
    assert_eq!(seen["errors"], json!([]), "{seen}");
    assert_eq!(seen["refused"], json!([]), "{seen}");
    // Reached from the Overview's queue with the keyboard alone.
    assert_eq!(seen["queue_link"], "#/servers/fixture", "{seen}");
    assert_eq!(seen["url_after_queue"], "#/servers/fixture", "{seen}");
    let command = seen["command"].as_str().unwrap_or_default();
    assert!(command.starts_with("sh -c "), "{seen}");
    let text = seen.to_string();
    assert!(
        !text.contains(SECRET),
        "the secret reached the page: {seen}"
    );
    assert!(
        seen["page_text"]
            .as_str()
            .unwrap_or_default()
            .contains("PAGE_TOKEN=[redacted]"),
        "{seen}"
    );
    let timeline: Vec<String> = serde_json::from_value(seen["timeline"].clone()).expect("timeline");
    let lost = timeline.iter().filter(|e| e.contains("Lost")).count();
    assert_eq!(lost, 3, "{timeline:?}");
    // Newest first: the last event is its latest start's Ready.
    assert!(timeline[0].contains("Ready"), "{timeline:?}");
    assert_eq!(
        (&seen["trend_bars_hour"], &seen["trend_bars_day"]),
        (&json!(12), &json!(48)),
        "{seen}"
    );
    // Three echoes and three crashes in the hour; the echoes alone for the one tool.
    let hour = seen["trend_words_hour"].as_str().unwrap_or_default();
    assert!(hour.starts_with("6 calls, 3 failed"), "{seen}");
    // The median's line is drawn even when every call fell in one bucket (a line of one point
    // draws nothing).
    assert!(
        seen["trend_median_points_hour"].as_u64() >= Some(2),
        "{seen}"
    );
    assert_eq!(seen["tool_chosen"], "fixture:echo", "{seen}");
    let echo = seen["trend_words_echo"].as_str().unwrap_or_default();
    assert!(echo.starts_with("3 calls, 0 failed"), "{seen}");
    let tail = seen["stderr_tail"].as_str().unwrap_or_default();
    assert!(tail.contains("fixture starting with [redacted]"), "{seen}");
    assert_eq!(
        seen["done_after_dismiss"], 0,
        "dismissed, nothing happens: {seen}"
    );
    assert!(
        seen["restart_said"]
            .as_str()
            .unwrap_or_default()
            .contains("restarted fixture"),
        "{seen}"
    );
    assert_eq!(seen["focus_after_restart"], "server-done", "{seen}");
    let after: Vec<String> =
        serde_json::from_value(seen["timeline_after"].clone()).expect("timeline");
    assert!(after[0].contains("Ready"), "{after:?}");
    assert!(
        after.iter().any(|e| e.contains("Restarted by an operator")),
        "{after:?}"
    );
    assert_eq!(seen["phone_overflows"], false, "{seen}");
}
