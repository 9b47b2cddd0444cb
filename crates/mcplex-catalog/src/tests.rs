use std::collections::BTreeMap;
use std::sync::Arc;

use mcplex_config::{Overrides, parse_config};
use serde_json::{Value, json};

use crate::{ServerStatus, UpstreamTools, build_snapshot};

fn config(servers: &str) -> mcplex_config::Config {
    parse_config(
        &format!(r#"{{"mcpServers": {servers}}}"#),
        "t.json",
        &Overrides::default(),
    )
    .expect("valid")
}

fn ready(tools: Value) -> UpstreamTools {
    let Value::Array(tools) = tools else {
        panic!("array")
    };
    UpstreamTools {
        status: ServerStatus::Ready,
        tools: Arc::new(tools),
    }
}

#[test]
fn merged_listing_is_sorted_prefixed_and_keeps_every_field() {
    let config = config(r#"{"zeta": {"command": "z"}, "alpha": {"command": "a"}}"#);
    let upstreams = BTreeMap::from([
        (
            "zeta".to_owned(),
            ready(
                json!([{"name": "b", "description": "B.", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}, "x-future": 1}]),
            ),
        ),
        (
            "alpha".to_owned(),
            ready(json!([{"name": "a", "inputSchema": {"type": "object"}, "title": "A"}])),
        ),
    ]);
    let (snapshot, diagnostics) = build_snapshot(&config, &upstreams, 1);
    assert!(diagnostics.is_empty());
    let listing = serde_json::to_string(snapshot.direct_listing().as_ref()).expect("json");
    assert_eq!(
        listing,
        r#"[{"name":"alpha__a","description":"[alpha]","inputSchema":{"type":"object"},"title":"A"},{"name":"zeta__b","description":"[zeta] B.","inputSchema":{"type":"object"},"outputSchema":{"type":"object"},"annotations":{"readOnlyHint":true},"x-future":1}]"#
    );
}

#[test]
fn resolves_display_names_and_canonical_ids_but_never_splits() {
    let config = config(r#"{"my__srv": {"command": "z"}}"#);
    let upstreams = BTreeMap::from([(
        "my__srv".to_owned(),
        ready(json!([{"name": "do it", "inputSchema": {"type": "object"}}])),
    )]);
    let (snapshot, _) = build_snapshot(&config, &upstreams, 1);
    let tool = snapshot.resolve("my__srv__do_it").expect("display name");
    assert_eq!(tool.id.to_string(), "my__srv:do it");
    assert!(snapshot.resolve("my__srv:do it").is_some());
    assert!(snapshot.resolve("my:srv__do_it").is_none());
    assert!(snapshot.resolve("nope").is_none());
}

#[test]
fn bad_tools_are_skipped_with_a_diagnostic_and_the_rest_served() {
    let config = config(r#"{"s": {"command": "z"}}"#);
    let upstreams = BTreeMap::from([(
        "s".to_owned(),
        ready(json!([
            {"name": "ok", "inputSchema": {"type": "object"}},
            {"name": "no_schema"},
            {"name": "ok", "inputSchema": {"type": "object"}},
            "garbage",
            {"inputSchema": {}}
        ])),
    )]);
    let (snapshot, diagnostics) = build_snapshot(&config, &upstreams, 1);
    assert_eq!(snapshot.tools().len(), 1);
    let messages: Vec<&str> = diagnostics.iter().map(|d| d.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            "tool \"no_schema\": inputSchema is missing or not an object; skipped",
            "tool \"ok\" is listed twice; the first definition is kept",
            "tools[3] is not an object; skipped",
            "tools[4] has no name; skipped",
        ]
    );
}

#[test]
fn server_status_covers_every_configured_server() {
    let config = config(
        r#"{"a": {"command": "a"}, "b": {"command": "b", "enabled": false}, "c": {"command": "c"}}"#,
    );
    let upstreams = BTreeMap::from([("a".to_owned(), ready(json!([])))]);
    let (snapshot, _) = build_snapshot(&config, &upstreams, 1);
    let statuses: Vec<String> = snapshot
        .servers()
        .iter()
        .map(|(name, view)| format!("{name}={}", view.status))
        .collect();
    assert_eq!(statuses, ["a=ready", "b=disabled", "c=connecting"]);
}
