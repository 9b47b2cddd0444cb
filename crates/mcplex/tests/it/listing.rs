//! The merged direct listing, served to real clients in both eras.

use serde_json::{Value, json};

use std::time::Duration;

use crate::harness::{Gateway, MODES, eventually, fixture_server, names, tools};
use crate::http::{Reply, Version, exchange};

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
    let authority = gateway.authority();
    // The messages as the wire carried them, each the answer to request id 1.
    let first = session_tools_list(authority, &open_session(authority, "/mcp"));
    let second = session_tools_list(authority, &open_session(authority, "/mcp"));
    let modern = gateway.raw_tools_list("/mcp");
    let again = gateway.raw_tools_list("/mcp");
    assert_eq!(first, second, "two sessions got different bytes");
    assert_eq!(modern, again, "two stateless requests got different bytes");
    // The 2026-07-28 result adds its own fields (`resultType`, `ttlMs`, `cacheScope`) before
    // the tools; the tools are the same bytes.
    assert_eq!(
        tools_bytes(&first),
        tools_bytes(&modern),
        "the eras got different bytes"
    );
    let listing: Value = serde_json::from_str(&first).expect("json");
    assert_eq!(names(&listing["result"])[..2], ["describe_tool", "a__add"]);
}

#[test]
fn the_same_server_instance_serves_mcp_and_mcp_all() {
    let gateway =
        Gateway::start(json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}}));
    gateway.wait_ready();
    let authority = gateway.authority();
    // A session is state of a server instance: one begun on `/mcp` continues on `/mcp/all` only
    // if both routes are the same instance (a second one answers 404, unknown session).
    let session = open_session(authority, "/mcp");
    let on_main = in_session(authority, "/mcp", &session, TOOLS_LIST);
    let on_all = in_session(authority, "/mcp/all", &session, TOOLS_LIST);
    assert_eq!(on_main.status, 200, "{}", on_main.body);
    assert_eq!(
        on_all.status, 200,
        "the session of /mcp is unknown on /mcp/all: {}",
        on_all.body
    );
    assert_eq!(data(&on_main), data(&on_all));
    // And one upstream process serves both.
    let pid = |path: &str| {
        let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fixture__pid","arguments":{}}}"#;
        in_session(authority, path, &session, call).json()["result"]["structuredContent"]["pid"]
            .as_u64()
            .expect("pid")
    };
    assert_eq!(pid("/mcp"), pid("/mcp/all"));
}

const TOOLS_LIST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;

/// A session-era client's session on `path`: initialize, then initialized; the session id.
fn open_session(authority: &str, path: &str) -> String {
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "listing-test", "version": "1"}}})
    .to_string();
    let answer = exchange(authority, Version::Http11, "POST", path, &[], &initialize);
    assert_eq!(answer.status, 200, "initialize: {}", answer.body);
    let session = answer
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let answer = in_session(authority, path, &session, initialized);
    assert_eq!(answer.status, 202, "initialized: {}", answer.body);
    session
}

/// A session-era request on `path` within `session`.
fn in_session(authority: &str, path: &str, session: &str, body: &str) -> Reply {
    let headers = [
        ("Mcp-Session-Id", session),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    exchange(authority, Version::Http11, "POST", path, &headers, body)
}

/// `tools/list` (id 1) within `session` on `/mcp`: the answer exactly as the wire carried it.
fn session_tools_list(authority: &str, session: &str) -> String {
    let answer = in_session(authority, "/mcp", session, TOOLS_LIST);
    assert_eq!(answer.status, 200, "{}", answer.body);
    data(&answer)
}

/// The `tools` member of a `tools/list` answer as the wire carried it: from its key to the end
/// of the result (a quote inside a string is escaped, so the first `"tools":` is the key).
fn tools_bytes(message: &str) -> &str {
    let start = message.find(r#""tools":["#).expect("a tools member");
    let end = message
        .strip_suffix("]}}")
        .expect("the tools end the result")
        .len()
        + 1;
    &message[start..end]
}

/// The JSON-RPC message of an event-stream answer, as the wire carried it.
fn data(answer: &Reply) -> String {
    answer
        .body
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim_start)
        .rfind(|data| data.starts_with('{'))
        .unwrap_or(&answer.body)
        .to_owned()
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
            let (status, body) = gateway.get("/readyz?all");
            let parsed: Value = serde_json::from_str(&body).ok()?;
            (parsed["servers"]["fixture"]["status"] == "ready").then_some((status, body))
        },
    );
    assert_eq!(status, 503, "?all waits for every server: {body}");
    let body: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(body["servers"]["hung"]["status"], "connecting");
    // Without ?all the gateway takes traffic (the startup wait is over, the store answers): a
    // load balancer must not take every replica out over one upstream. The body still says it.
    let (status, body) = gateway.get("/readyz");
    assert_eq!(status, 200, "{body}");
    let body: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(body["servers"]["hung"]["status"], "connecting");
    // A server that never answers does not delay the others.
    let listing = gateway.client("legacy", "list", &[]);
    assert!(names(&listing).contains(&"fixture__echo".to_owned()));
}

/// A server that takes `seconds` to start (as `npx` on a cold cache does), then is the fixture.
fn slow_server(name: &str, seconds: u32) -> Value {
    let fixture = tools().fixture.display().to_string();
    json!({"command": "sh", "args": ["-c", format!("sleep {seconds}; exec '{fixture}' --name {name}")]})
}

#[test]
fn the_first_listing_waits_for_a_slow_server_and_readyz_says_for_which() {
    let gateway = Gateway::start_with(
        json!({"mcpServers": {
            "fast": fixture_server("fast", &[]),
            "slow": slow_server("slow", 3),
        }}),
        &["--startup-wait", "60s"],
    );
    // While it lasts, the wait is visible: once `fast` is up, it names only `slow`.
    let readiness = eventually(
        "fast ready, slow still awaited",
        Duration::from_secs(3),
        || {
            let (status, body) = gateway.get("/readyz");
            let readiness: Value = serde_json::from_str(&body).expect("readyz JSON");
            (readiness["servers"]["fast"]["status"] == "ready").then_some((status, readiness))
        },
    );
    assert_eq!(readiness.0, 503, "{}", readiness.1);
    assert_eq!(
        readiness.1["startup_wait"]["waiting_for"],
        json!(["slow"]),
        "{}",
        readiness.1
    );
    let listing = gateway.client("legacy", "list", &[]);
    let names = names(&listing);
    for expected in ["fast__echo", "slow__echo"] {
        assert!(
            names.contains(&expected.to_owned()),
            "the first listing has {expected}: {names:?}"
        );
    }
    let (_, body) = gateway.get("/readyz");
    let readiness: Value = serde_json::from_str(&body).expect("readyz JSON");
    assert!(readiness.get("startup_wait").is_none(), "{body}");
    eventually("the end of the wait logged", Duration::from_secs(5), || {
        let log = gateway.log();
        (log.contains("still starting: fast, slow")
            && log.contains("every server started or failed"))
        .then_some(())
    });
}

#[test]
fn a_hung_server_holds_the_first_listing_only_for_startup_wait() {
    let gateway = Gateway::start_with(
        json!({"mcpServers": {
            "fast": fixture_server("fast", &[]),
            "hung": {"command": "sleep", "args": ["600"]},
        }}),
        &["--startup-wait", "2s"],
    );
    let asked = std::time::Instant::now();
    let listing = gateway.client("2026-07-28", "list", &[]);
    let waited = asked.elapsed();
    assert!(
        names(&listing).contains(&"fast__echo".to_owned()),
        "{listing}"
    );
    assert!(
        waited >= Duration::from_millis(1500),
        "the listing was held by the wait, not answered at once ({waited:?})"
    );
    eventually("the end of the wait logged", Duration::from_secs(5), || {
        let log = gateway.log();
        log.contains("startup_wait of 2s is over: listings go out without hung")
            .then_some(())
    });
}
