//! Upstream lifecycle: pagination, list_changed, crash and reconnect, a dead command.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Gateway, MODES, eventually, fixture_server, names, tools};

fn corpus() -> String {
    tools()
        .repo
        .join("crates/mcplex-fixtures/data/ref45.tools.json")
        .display()
        .to_string()
}

#[test]
fn pagination_is_followed_to_the_end() {
    let corpus = corpus();
    let gateway = Gateway::start(
        json!({"mcpServers": {"paged": fixture_server("paged", &["--corpus", &corpus, "--page-size", "7"])}}),
    );
    gateway.wait_ready();
    let listing = gateway.client("legacy", "list", &[]);
    // describe_tool + 9 kit tools + 45 corpus tools, served 7 per page.
    assert_eq!(names(&listing).len(), 1 + 54);
}

#[test]
fn a_cursor_that_does_not_advance_is_cut_and_the_server_still_serves() {
    let corpus = corpus();
    let gateway = Gateway::start(
        json!({"mcpServers": {"stuck": fixture_server("stuck", &["--corpus", &corpus, "--page-size", "10", "--stuck-cursor"])}}),
    );
    gateway.wait_ready();
    let listing = gateway.client("legacy", "list", &[]);
    // Page one, then page "0" again (a repeat, which ends the listing): duplicates are dropped.
    assert_eq!(names(&listing).len(), 1 + 10);
    assert!(
        gateway.log().contains("repeats; listing stopped"),
        "{}",
        gateway.log()
    );
    let echo = gateway.client("legacy", "call", &["stuck__echo", "{}"]);
    assert!(echo["result"].is_object(), "{echo}");
}

#[test]
fn an_upstream_list_changed_reaches_clients_of_both_eras() {
    // trust: auto, so the tools the server adds are served at once (see trust.rs for the
    // default, where they wait for approval).
    let mut server = fixture_server("fixture", &[]);
    server["trust"] = json!("auto");
    let gateway = Gateway::start(json!({"mcpServers": {"fixture": server}}));
    gateway.wait_ready();
    for (mode, tool) in MODES.iter().zip(["legacy_added", "modern_added"]) {
        let args = json!({"name": tool}).to_string();
        let answer = gateway.client(mode, "list_changed", &["fixture__add_tool", &args]);
        assert_eq!(answer["notified"], true, "{mode}: {answer}");
        let listed: Vec<&str> = answer["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            listed.contains(&format!("fixture__{tool}").as_str()),
            "{mode}: {listed:?}"
        );
    }
}

#[test]
fn a_crashed_upstream_is_restarted_and_serves_again() {
    let gateway = Gateway::start(
        json!({"mcpServers": {"fixture": fixture_server("fixture", &[]), "other": fixture_server("other", &[])}}),
    );
    gateway.wait_ready();
    let before = gateway.client("legacy", "call", &["fixture__pid", "{}"]);
    let old_pid = before["result"]["structuredContent"]["pid"]
        .as_u64()
        .expect("pid");
    let old_pid = crate::process_ids::host_pid(gateway.pid(), "fixture", old_pid);
    let crashed = gateway.client("legacy", "call", &["fixture__crash", "{}"]);
    let message = crashed["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("fixture"),
        "the error names the server: {crashed}"
    );
    // Other servers are unaffected meanwhile.
    let other = gateway.client("legacy", "call", &["other__echo", r#"{"x": 1}"#]);
    assert_eq!(other["result"]["structuredContent"], json!({"x": 1}));
    let new_pid = eventually("the fixture to come back", Duration::from_secs(20), || {
        let after = gateway.client("legacy", "call", &["fixture__pid", "{}"]);
        let inner = after["result"]["structuredContent"]["pid"].as_u64()?;
        Some(crate::process_ids::host_pid(
            gateway.pid(),
            "fixture",
            inner,
        ))
    });
    assert_ne!(old_pid, new_pid);
}

/// A server that exits on every call comes back each time, so it is up between crashes; it is
/// shown as a crash loop with its failures and the last reason, never as a healthy server.
#[test]
fn a_server_that_crashes_on_every_call_is_a_crash_loop_not_ready() {
    let gateway =
        Gateway::start(json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}}));
    gateway.wait_ready();
    let server = || {
        let (_, answer) = gateway.api("GET", "/api/v1/servers", "");
        answer["servers"][0].clone()
    };
    assert_eq!(server()["failures"], Value::Null, "no failure yet");
    for round in 0..3 {
        let _ = gateway.client("legacy", "call", &["fixture__crash", "{}"]);
        eventually(
            &format!("the fixture back after crash {round}"),
            Duration::from_secs(30),
            || (server()["status"] == "ready").then_some(()),
        );
    }
    let server = server();
    assert_eq!(server["status"], "ready", "{server}");
    assert!(server["failures"]["recent"].as_u64() >= Some(3), "{server}");
    assert!(server["failures"]["last"].as_str().is_some(), "{server}");
    let listed = crate::oauth_rig::mcplex_on(&gateway, &["servers", "list"])
        .output()
        .expect("servers list");
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.contains("crash loop: "), "{listed}");
}

#[test]
fn a_command_that_does_not_exist_fails_alone() {
    let gateway = Gateway::start(json!({"mcpServers": {
        "ghost": {"command": "/nonexistent/mcp-server"},
        "fixture": fixture_server("fixture", &[]),
    }}));
    let status = eventually("ghost to be reported", Duration::from_secs(20), || {
        let (_, body) = gateway.get("/readyz");
        let body: Value = serde_json::from_str(&body).ok()?;
        let ghost = body["servers"]["ghost"]["status"].as_str()?.to_owned();
        (ghost.starts_with("unhealthy") && body["servers"]["fixture"]["status"] == "ready")
            .then_some(ghost)
    });
    assert!(status.contains("cannot start"), "{status}");
    let call = gateway.client("legacy", "call", &["fixture__echo", "{}"]);
    assert!(call["result"].is_object());
}

#[test]
fn a_2026_upstream_is_reached_with_server_discover() {
    let mut server = fixture_server("modern", &[]);
    server["lifecycle"] = json!("discover");
    let gateway = Gateway::start_with(
        json!({"mcpServers": {"modern": server}}),
        &["--log-format", "json"],
    );
    gateway.wait_ready();
    // The connection's structured record names the era it opened, whatever its message says.
    let opened_in_2026 = gateway.log_events().iter().any(|event| {
        event["fields"]["server"] == "modern" && event["fields"]["protocol"] == "2026-07-28"
    });
    assert!(opened_in_2026, "{}", gateway.log());
    for mode in MODES {
        let answer = gateway.client(mode, "call", &["modern__add", r#"{"a": 1, "b": 2}"#]);
        assert_eq!(
            answer["result"]["structuredContent"],
            json!({"sum": 3.0}),
            "{mode}: {answer}"
        );
    }
}

#[test]
fn env_secrets_are_redacted_from_upstream_stderr() {
    let mut server = fixture_server("fixture", &["--print-env", "API_TOKEN"]);
    server["env"] = json!({"API_TOKEN": "tok-0123456789"});
    let gateway = Gateway::start(json!({"mcpServers": {"fixture": server}}));
    gateway.wait_ready();
    let log = gateway.log();
    assert!(log.contains("fixture env API_TOKEN=[redacted]"), "{log}");
    assert!(!log.contains("tok-0123456789"));
}
