//! No process outlives the gateway: children and their children after SIGTERM, direct children
//! after SIGKILL (parent-death signal).

use std::time::Duration;

use serde_json::json;

use crate::harness::{Gateway, alive, eventually, fixture_server};
use crate::process_ids::host_pid;

#[test]
fn sigterm_leaves_no_upstream_process_or_grandchild() {
    let gateway =
        Gateway::start(json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}}));
    gateway.wait_ready();
    let child = gateway.client("legacy", "call", &["fixture__pid", "{}"])["result"]["structuredContent"]["pid"].as_u64().expect("pid");
    let grandchild = gateway.client("legacy", "call", &["fixture__spawn_grandchild", "{}"])["result"]["structuredContent"]["pid"]
        .as_u64()
        .expect("grandchild pid");
    let (child, grandchild) = (
        host_pid(gateway.pid(), "fixture", child),
        host_pid(gateway.pid(), "fixture", grandchild),
    );
    assert!(alive(child) && alive(grandchild));
    let status = gateway.terminate();
    assert!(
        status.success(),
        "gateway exit status after SIGTERM: {status}"
    );
    eventually(
        "the upstream and its child to be gone",
        Duration::from_secs(10),
        || (!alive(child) && !alive(grandchild)).then_some(()),
    );
}

#[test]
fn ctrl_c_stops_every_server_without_reporting_them_as_failed() {
    let mut gateway = Gateway::start(json!({"mcpServers": {
        "a": fixture_server("a", &[]),
        "b": fixture_server("b", &[])
    }}));
    gateway.wait_ready();
    let status = gateway.interrupt();
    assert!(status.success(), "exit status after SIGINT: {status}");
    let log = gateway.log();
    assert!(log.contains("shutting down"), "{log}");
    // Servers the gateway stops are not failures: no warning, no lost connection.
    let warnings: Vec<&str> = log
        .lines()
        .filter(|line| line.contains(" WARN ") || line.contains(" ERROR "))
        .collect();
    assert!(warnings.is_empty(), "{warnings:#?}");
}

#[test]
fn sigkill_of_the_gateway_takes_its_children_down() {
    let gateway = Gateway::start(json!({"mcpServers": {
        "a": fixture_server("a", &[]),
        "b": fixture_server("b", &[])
    }}));
    gateway.wait_ready();
    let pid = |server: &str| {
        gateway.client("legacy", "call", &[&format!("{server}__pid"), "{}"])["result"]["structuredContent"]["pid"]
            .as_u64()
            .expect("pid")
    };
    let children = [
        host_pid(gateway.pid(), "a", pid("a")),
        host_pid(gateway.pid(), "b", pid("b")),
    ];
    assert!(children.iter().all(|&p| alive(p)));
    gateway.kill_hard();
    eventually(
        "the children to exit with their parent",
        Duration::from_secs(10),
        || children.iter().all(|&p| !alive(p)).then_some(()),
    );
}
