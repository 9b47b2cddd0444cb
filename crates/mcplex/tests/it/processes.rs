//! No process outlives the gateway: children and their children after SIGTERM, direct children
//! after SIGKILL (parent-death signal).

use std::time::Duration;

use serde_json::json;

use crate::harness::{Gateway, alive, eventually, fixture_server};

#[test]
fn sigterm_leaves_no_upstream_process_or_grandchild() {
    let gateway =
        Gateway::start(json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}}));
    gateway.wait_ready();
    let child = gateway.client("legacy", "call", &["fixture__pid", "{}"])["result"]["structuredContent"]["pid"].as_u64().expect("pid");
    let grandchild = gateway.client("legacy", "call", &["fixture__spawn_grandchild", "{}"])["result"]["structuredContent"]["pid"]
        .as_u64()
        .expect("grandchild pid");
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
    let children = [pid("a"), pid("b")];
    assert!(children.iter().all(|&p| alive(p)));
    gateway.kill_hard();
    eventually(
        "the children to exit with their parent",
        Duration::from_secs(10),
        || children.iter().all(|&p| !alive(p)).then_some(()),
    );
}
