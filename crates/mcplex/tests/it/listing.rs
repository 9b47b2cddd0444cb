//! The merged direct listing, served to real clients in both eras.

use serde_json::{Value, json};

use crate::harness::{Gateway, MODES, fixture_server, names, tools};

fn fleet() -> Value {
    let tools = tools();
    json!({"mcpServers": {
        "fixture": fixture_server("fixture", &[]),
        "everything": {"command": "node", "args": [tools.everything, "stdio"]},
        "time": {"command": tools.time_server},
    }})
}

#[test]
fn merged_listing_of_real_upstreams_in_both_eras() {
    let gateway = Gateway::start(fleet());
    gateway.wait_ready();
    for mode in MODES {
        let listing = gateway.client(mode, "list", &[]);
        let names = names(&listing);
        for expected in [
            "fixture__echo",
            "fixture__add",
            "everything__get-sum",
            "time__get_current_time",
            "time__convert_time",
        ] {
            assert!(
                names.contains(&expected.to_owned()),
                "{mode}: {expected} missing from {names:?}"
            );
        }
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted, "{mode}: listing is not sorted");
        let tools = listing["tools"].as_array().expect("tools");
        let add = tools
            .iter()
            .find(|t| t["name"] == "fixture__add")
            .expect("fixture__add");
        assert_eq!(add["description"], "[fixture] Adds two numbers.");
        assert_eq!(
            add["outputSchema"]["required"],
            json!(["sum"]),
            "{mode}: outputSchema kept"
        );
        assert_eq!(add["inputSchema"]["required"], json!(["a", "b"]));
        let echo = tools
            .iter()
            .find(|t| t["name"] == "fixture__echo")
            .expect("fixture__echo");
        assert_eq!(
            echo["annotations"],
            json!({"readOnlyHint": true}),
            "{mode}: annotations kept"
        );
        let time = tools
            .iter()
            .find(|t| t["name"] == "time__get_current_time")
            .expect("time tool");
        assert!(
            time["description"]
                .as_str()
                .expect("description")
                .starts_with("[time] ")
        );
    }
}

#[test]
fn listing_is_byte_identical_across_requests_and_eras() {
    let gateway = Gateway::start(
        json!({"mcpServers": {"b": fixture_server("b", &[]), "a": fixture_server("a", &[])}}),
    );
    gateway.wait_ready();
    let first = gateway.client("legacy", "list", &[]);
    let second = gateway.client("legacy", "list", &[]);
    let modern = gateway.client("2026-07-28", "list", &[]);
    assert_eq!(first, second);
    assert_eq!(first, modern);
    assert_eq!(names(&first)[..2], ["describe_tool", "a__add"]);
}

#[test]
fn the_same_server_instance_serves_mcp_and_mcp_all() {
    let gateway =
        Gateway::start(json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}}));
    gateway.wait_ready();
    let main = gateway.client("legacy", "list", &[]);
    let all = crate::harness::python_client(
        &["--url", &format!("{}/all", gateway.url)],
        "legacy",
        "list",
        &[],
    );
    assert_eq!(main, all);
}

#[test]
fn health_and_readiness_report_each_server() {
    let gateway = Gateway::start(json!({"mcpServers": {
        "fixture": fixture_server("fixture", &[]),
        "hung": {"command": "sleep", "args": ["60"]},
    }}));
    assert_eq!(gateway.get("/healthz"), (200, "ok".to_owned()));
    let (status, body) = crate::harness::eventually(
        "fixture ready while hung still connects",
        std::time::Duration::from_secs(20),
        || {
            let (status, body) = gateway.get("/readyz");
            let parsed: Value = serde_json::from_str(&body).ok()?;
            (parsed["servers"]["fixture"]["status"] == "ready").then_some((status, body))
        },
    );
    assert_eq!(status, 503, "{body}");
    let body: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(body["servers"]["hung"]["status"], "connecting");
    // A server that never answers does not delay the others.
    let listing = gateway.client("legacy", "list", &[]);
    assert!(names(&listing).contains(&"fixture__echo".to_owned()));
}
