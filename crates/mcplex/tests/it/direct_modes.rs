//! The direct surface's two serialization modes, describe_tool, self-healing validation and the
//! hot flip, observed by real clients. Golden files pin the exact tools/list bytes over ref45.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Gateway, MODES, fixture_server, tools};

const REF45_SERVERS: [&str; 7] = [
    "fetch",
    "filesystem",
    "git",
    "memory",
    "sequential-thinking",
    "sqlite",
    "time",
];

fn ref45_fleet(mode: &str) -> Value {
    let corpus = tools()
        .repo
        .join("crates/mcplex-fixtures/data/ref45.tools.json")
        .display()
        .to_string();
    let servers: serde_json::Map<String, Value> = REF45_SERVERS
        .iter()
        .map(|s| {
            (
                s.to_string(),
                fixture_server(s, &["--no-kit", "--corpus", &corpus, "--corpus-server", s]),
            )
        })
        .collect();
    json!({"direct_tool_response_mode": mode, "mcpServers": servers})
}

#[track_caller]
fn check_golden(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).expect("write golden");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    if expected != actual {
        let at = expected
            .bytes()
            .zip(actual.bytes())
            .position(|(a, b)| a != b)
            .unwrap_or(expected.len().min(actual.len()));
        let from = at.saturating_sub(80);
        panic!(
            "{name} differs at byte {at} (rerun with UPDATE_GOLDEN=1 to accept):\n expected …{}\n   actual …{}",
            expected
                .get(from..(at + 80).min(expected.len()))
                .unwrap_or_default(),
            actual
                .get(from..(at + 80).min(actual.len()))
                .unwrap_or_default()
        );
    }
}

#[test]
fn golden_tools_list_bytes_over_ref45_in_both_modes() {
    for mode in ["full", "deferred"] {
        let gateway = Gateway::start(ref45_fleet(mode));
        gateway.wait_ready();
        let raw = gateway.raw_tools_list("/mcp");
        check_golden(&format!("ref45.direct-{mode}.json"), &raw);
        let parsed: Value = serde_json::from_str(&raw).expect("json");
        assert_eq!(
            parsed["result"]["tools"].as_array().map(Vec::len),
            Some(1 + 45)
        );
    }
}

#[test]
fn deferred_entries_match_full_entries_but_for_schema_and_description() {
    let full = Gateway::start(ref45_fleet("full"));
    let deferred = Gateway::start(ref45_fleet("deferred"));
    full.wait_ready();
    deferred.wait_ready();
    let full: Value = serde_json::from_str(&full.raw_tools_list("/mcp")).expect("json");
    let deferred: Value = serde_json::from_str(&deferred.raw_tools_list("/mcp")).expect("json");
    let (full, deferred) = (
        full["result"]["tools"].as_array().expect("tools"),
        deferred["result"]["tools"].as_array().expect("tools"),
    );
    assert_eq!(full.len(), deferred.len());
    // describe_tool keeps its real schema in both modes.
    assert_eq!(full[0], deferred[0]);
    for (f, d) in full.iter().zip(deferred).skip(1) {
        assert_eq!(f["name"], d["name"]);
        assert_eq!(f["annotations"].to_string(), d["annotations"].to_string());
        let (f_text, d_text) = (
            f["description"].as_str().expect("text"),
            d["description"].as_str().expect("text"),
        );
        let (prefix, signature) = d_text.rsplit_once('\n').expect("a signature line");
        assert_eq!(prefix, f_text);
        assert!(
            signature.contains('(') && signature.ends_with(')'),
            "{signature}"
        );
        assert_eq!(d["inputSchema"].to_string(), r#"{"type":"object"}"#);
        assert!(d.get("outputSchema").is_none());
    }
}

#[test]
fn initialize_carries_instructions_with_the_legend() {
    let gateway =
        Gateway::start(json!({"instructions": "Use the git tools for history.", "mcpServers": {}}));
    // "auto" probes server/discover (2026-07-28); "legacy" reads the initialize result.
    for mode in ["legacy", "auto"] {
        let answer = gateway.client(mode, "initialize", &[]);
        let text = answer["instructions"].as_str().unwrap_or_default();
        assert!(text.starts_with("Use the git tools for history.\n\nSome tool descriptions end with a compact signature"), "{mode}: {text}");
    }
    let default = Gateway::start(json!({"mcpServers": {}}));
    let text = default.client("legacy", "initialize", &[])["instructions"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        text.contains("describe_tool") && text.contains("~ marks collapsed/lossy details"),
        "{text}"
    );
}

#[test]
fn bad_arguments_heal_in_both_modes_and_never_reach_the_upstream() {
    for mode in ["full", "deferred"] {
        let gateway = Gateway::start(
            json!({"direct_tool_response_mode": mode, "mcpServers": {"fixture": fixture_server("fixture", &[])}}),
        );
        gateway.wait_ready();
        for era in MODES {
            let answer = gateway.client(era, "call", &["fixture__add", r#"{"a": "one"}"#]);
            let body = &answer["result"]["structuredContent"];
            assert_eq!(answer["result"]["isError"], true, "{mode}/{era}: {answer}");
            assert_eq!(
                body["error"],
                "invalid arguments for fixture__add: missing property 'b'; at /a: \"one\" is not of type \"number\""
            );
            assert_eq!(body["error_type"], "invalid_params");
            assert_eq!(body["tool"], "fixture__add");
            assert_eq!(
                body["input_schema"]["required"],
                json!(["a", "b"]),
                "the complete stored schema"
            );
            assert_eq!(
                body["hint"],
                "Fix arguments to match input_schema, then retry. For the full definition call describe_tool({tool_ids:[\"fixture__add\"]})."
            );
            let text: Value = serde_json::from_str(
                answer["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap_or_default(),
            )
            .expect("text is JSON");
            assert_eq!(&text, body);
        }
        // The canonical id is named as called.
        let answer = gateway.client("legacy", "call", &["fixture:add", "{}"]);
        assert_eq!(answer["result"]["structuredContent"]["tool"], "fixture:add");
    }
}

#[test]
fn describe_tool_definitions_checks_and_limits() {
    let gateway = Gateway::start(
        json!({"direct_tool_response_mode": "deferred", "mcpServers": {
            "fixture": fixture_server("fixture", &[]),
            "off": {"command": "x", "enabled": false},
        }}),
    );
    gateway.wait_ready();
    let answer = gateway.client(
        "legacy",
        "call",
        &[
            "describe_tool",
            r#"{"tool_ids": ["fixture__add", "fixture:echo", "ghost__x"]}"#,
        ],
    );
    let tools = answer["result"]["structuredContent"]["tools"]
        .as_array()
        .expect("tools")
        .clone();
    assert_eq!(
        tools[0]["input_schema"]["required"],
        json!(["a", "b"]),
        "the real schema, not the placeholder"
    );
    assert_eq!(tools[0]["output_schema"]["required"], json!(["sum"]));
    assert_eq!(tools[0]["description"], "[fixture] Adds two numbers.");
    assert_eq!(tools[1]["annotations"], json!({"readOnlyHint": true}));
    assert!(tools[1].get("output_schema").is_none());
    assert_eq!(
        tools[2],
        json!({"tool_id": "ghost__x", "status": "unavailable", "reason": "not_found"})
    );

    let check = gateway.client(
        "2026-07-28",
        "call",
        &[
            "describe_tool",
            r#"{"check": true, "tool_ids": ["fixture__slow", "off:thing", "nope:x"]}"#,
        ],
    );
    assert_eq!(
        check["result"]["structuredContent"]["tools"],
        json!([
            {"tool_id": "fixture__slow", "status": "ready"},
            {"tool_id": "off:thing", "status": "unavailable", "reason": "server_disabled"},
            {"tool_id": "nope:x", "status": "unavailable", "reason": "not_found"},
        ])
    );
    let six: Vec<String> = (0..6).map(|i| format!("t{i}")).collect();
    let too_many = gateway.client(
        "legacy",
        "call",
        &["describe_tool", &json!({"tool_ids": six}).to_string()],
    );
    assert_eq!(too_many["result"]["isError"], true);
    assert!(
        too_many["result"]["structuredContent"]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("at most 5"),
        "{too_many}"
    );
    let fifty_one: Vec<String> = (0..51).map(|i| format!("t{i}")).collect();
    let too_many = gateway.client(
        "legacy",
        "call",
        &[
            "describe_tool",
            &json!({"check": true, "tool_ids": fifty_one}).to_string(),
        ],
    );
    assert_eq!(too_many["result"]["isError"], true, "{too_many}");
    // Every listed tool is describable.
    let listing = gateway.client("legacy", "list", &[]);
    for name in crate::harness::names(&listing)
        .iter()
        .filter(|n| n.as_str() != "describe_tool")
    {
        let check = gateway.client(
            "legacy",
            "call",
            &[
                "describe_tool",
                &json!({"check": true, "tool_ids": [name]}).to_string(),
            ],
        );
        assert_eq!(
            check["result"]["structuredContent"]["tools"][0]["status"], "ready",
            "{name}"
        );
    }
}

#[test]
fn a_mode_flip_is_announced_and_a_no_op_edit_is_silent() {
    let server = fixture_server("fixture", &[]);
    let gateway = Gateway::start(json!({"mcpServers": {"fixture": server}}));
    gateway.wait_ready();
    let path = gateway.dir.path().join("config.json").display().to_string();
    let mut mode = "full";
    for era in MODES {
        let flipped = if mode == "full" { "deferred" } else { "full" };
        let content =
            json!({"direct_tool_response_mode": flipped, "mcpServers": {"fixture": server}})
                .to_string();
        let answer = gateway.client(era, "edit_and_wait", &[&path, &content, "15"]);
        assert_eq!(
            answer["notified"],
            true,
            "{era}: the flip to {flipped} was not announced: {answer}\n{}",
            gateway.log()
        );
        let after = &answer["after"];
        let add = after
            .as_array()
            .expect("tools")
            .iter()
            .find(|t| t["name"] == "fixture__add")
            .expect("fixture__add");
        let deferred = add["description"]
            .as_str()
            .unwrap_or_default()
            .ends_with("add(a*:num, b*:num)");
        assert_eq!(deferred, flipped == "deferred", "{era}: {add}");
        assert_eq!(
            answer["before"].as_array().map(Vec::len),
            after.as_array().map(Vec::len),
            "same tools across the flip"
        );
        mode = flipped;
    }
    // An edit that leaves the effective mode as it is: no rebuild, no notification.
    let content = json!({"direct_tool_response_mode": mode, "call_timeout": "99s", "mcpServers": {"fixture": server}}).to_string();
    let answer = gateway.client("legacy", "edit_and_wait", &[&path, &content, "2"]);
    assert_eq!(
        answer["notified"], false,
        "a no-op edit was announced: {answer}"
    );
    // An invalid edit is refused; the running config stays.
    std::fs::write(
        gateway.dir.path().join("config.json"),
        r#"{"direct_tool_response_mode": "sideways"}"#,
    )
    .expect("write");
    crate::harness::eventually("the refusal to be logged", Duration::from_secs(10), || {
        gateway
            .log()
            .contains("config edit refused, keeping the running config")
            .then_some(())
    });
    let call = gateway.client("legacy", "call", &["fixture__add", r#"{"a": 1, "b": 2}"#]);
    assert_eq!(call["result"]["structuredContent"], json!({"sum": 3.0}));
}

#[test]
fn a_stale_full_mode_client_still_validates_against_the_stored_schema() {
    let server = fixture_server("fixture", &[]);
    let gateway = Gateway::start(json!({"mcpServers": {"fixture": server}}));
    gateway.wait_ready();
    let full = gateway.client("legacy", "list", &[]);
    let schema = full["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == "fixture__add")
        .expect("add")["inputSchema"]
        .clone();
    std::fs::write(
        gateway.dir.path().join("config.json"),
        json!({"direct_tool_response_mode": "deferred", "mcpServers": {"fixture": server}})
            .to_string(),
    )
    .expect("write");
    // Flipped once the listing carries the deferred entry (a signature ends the description).
    crate::harness::eventually("the flip", Duration::from_secs(10), || {
        let listing: Value = serde_json::from_str(&gateway.raw_tools_list("/mcp")).ok()?;
        let tools = listing["result"]["tools"].as_array()?;
        let add = tools.iter().find(|t| t["name"] == "fixture__add")?;
        add["description"]
            .as_str()?
            .ends_with("add(a*:num, b*:num)")
            .then_some(())
    });
    // Arguments built from the cached full schema are valid; wrong ones are answered with that schema.
    let good = gateway.client("legacy", "call", &["fixture__add", r#"{"a": 2, "b": 3}"#]);
    assert_eq!(good["result"]["structuredContent"], json!({"sum": 5.0}));
    let bad = gateway.client("legacy", "call", &["fixture__add", r#"{"a": 2}"#]);
    assert_eq!(bad["result"]["structuredContent"]["input_schema"], schema);
}
