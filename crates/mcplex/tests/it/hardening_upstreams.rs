//! An upstream cannot hold the gateway with a re-list it never answers: the server's removal
//! and the gateway's SIGTERM end its process at once, and a re-list that outlasts the server's
//! `init_timeout` ends the connection with a reason the operator sees.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{Gateway, alive, eventually, fixture_server, signal};
use crate::process_ids::host_pid;

/// A gateway with one server, `stalling`, whose re-list after `list_changed` hangs; returns it
/// once that re-list is waiting, with the server's pid.
fn stalled(init_timeout: Option<&str>) -> (Gateway, u64) {
    let mut server = fixture_server("stalling", &["--stall-relist"]);
    if let Some(limit) = init_timeout {
        server["init_timeout"] = json!(limit);
    }
    let gateway = Gateway::start(json!({"mcpServers": {"stalling": server}}));
    gateway.wait_ready();
    let answer = gateway.client("legacy", "call", &["stalling__pid", "{}"]);
    let pid = answer["result"]["structuredContent"]["pid"]
        .as_u64()
        .expect("the server's pid");
    let pid = host_pid(gateway.pid(), "stalling", pid);
    eventually("the re-list to hang", Duration::from_secs(10), || {
        gateway
            .log()
            .contains("fixture stalling: stalling tools/list")
            .then_some(())
    });
    assert!(alive(pid));
    (gateway, pid)
}

#[test]
fn a_server_removed_during_a_hung_relist_is_stopped() {
    let (gateway, pid) = stalled(None);
    std::fs::write(
        gateway.dir.path().join("config.json"),
        json!({"mcpServers": {}}).to_string(),
    )
    .expect("remove the server");
    eventually(
        "the removed server's process to end",
        Duration::from_secs(5),
        || (!alive(pid)).then_some(()),
    );
}

#[test]
fn sigterm_during_a_hung_relist_ends_the_gateway() {
    let (gateway, pid) = stalled(None);
    let started = Instant::now();
    signal(gateway.pid(), libc::SIGTERM);
    eventually("the gateway to exit", Duration::from_secs(5), || {
        (!alive(u64::from(gateway.pid()))).then_some(())
    });
    eventually(
        "the server's process to end",
        Duration::from_secs(5),
        || (!alive(pid)).then_some(()),
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_relist_past_init_timeout_ends_the_connection_with_its_reason() {
    let (gateway, pid) = stalled(Some("2s"));
    let server = eventually("the connection to end", Duration::from_secs(10), || {
        let (_, answer) = gateway.api("GET", "/api/v1/servers", "");
        let server = answer["servers"][0].clone();
        let last = server["failures"]["last"].as_str().unwrap_or_default();
        last.contains("re-listing").then_some(server)
    });
    // The request's own timeout or the re-list's, whichever fires first.
    let last = server["failures"]["last"].as_str().unwrap_or_default();
    assert!(last.contains("within") && last.contains("2s"), "{server}");
    // SIGTERM, then SIGKILL after the grace: bounded, but a loaded machine takes a while.
    eventually("the hung process to end", Duration::from_secs(15), || {
        (!alive(pid)).then_some(())
    });
    assert_ne!(server["failures"], Value::Null);
}
