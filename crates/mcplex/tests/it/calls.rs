//! Calls through the one dispatch path: routing, pass-through, progress, cancellation, timeout
//! and the shape of every kind of failure.

use serde_json::{Value, json};

use crate::harness::{Gateway, MODES, everything_http, fixture_server, tools};

fn fleet() -> Value {
    json!({"mcpServers": {
        "fixture": fixture_server("fixture", &[]),
        "time": {"command": tools().time_server},
        "everything": {"command": "node", "args": [tools().everything, "stdio"]},
    }})
}

#[test]
fn calls_reach_the_right_upstream_and_results_pass_through() {
    let gateway = Gateway::start(fleet());
    gateway.wait_ready();
    for mode in MODES {
        let echo = gateway.client(
            mode,
            "call",
            &["fixture__echo", r#"{"text": "hi", "n": [1, 2]}"#],
        );
        assert_eq!(
            echo["result"]["structuredContent"],
            json!({"text": "hi", "n": [1, 2]}),
            "{mode}: {echo}"
        );
        assert_eq!(
            echo["result"]["_meta"],
            json!({"fixture/echo": true}),
            "{mode}: _meta passes through"
        );
        let time = gateway.client(
            mode,
            "call",
            &["time__get_current_time", r#"{"timezone": "UTC"}"#],
        );
        let text = time["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(text.contains("UTC"), "{mode}: {time}");
        let sum = gateway.client(
            mode,
            "call",
            &["everything__get-sum", r#"{"a": 2, "b": 40}"#],
        );
        let text = sum["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(text.contains("42"), "{mode}: {sum}");
        // The canonical id works as well as the display name.
        let canonical = gateway.client(mode, "call", &["fixture:add", r#"{"a": 1, "b": 2}"#]);
        assert_eq!(
            canonical["result"]["structuredContent"],
            json!({"sum": 3.0})
        );
    }
}

#[test]
fn structured_content_from_streamable_http_and_sse_upstreams() {
    let (_http, http_port) = everything_http("streamableHttp");
    let (_sse, sse_port) = everything_http("sse");
    let gateway = Gateway::start(json!({"mcpServers": {
        "http": {"url": format!("http://127.0.0.1:{http_port}/mcp"), "headers": {"X-Test": "secret-header-value"}},
        "sse": {"url": format!("http://127.0.0.1:{sse_port}/sse")},
    }}));
    gateway.wait_ready();
    for server in ["http", "sse"] {
        let result = gateway.client(
            "legacy",
            "call",
            &[
                &format!("{server}__get-structured-content"),
                r#"{"location": "New York"}"#,
            ],
        );
        assert!(
            result["result"]["structuredContent"].is_object(),
            "{server}: {result}"
        );
    }
    assert!(
        !gateway.log().contains("secret-header-value"),
        "a header value reached the log"
    );
}

#[test]
fn progress_is_forwarded_in_both_eras() {
    let gateway =
        Gateway::start(json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}}));
    gateway.wait_ready();
    for mode in MODES {
        let answer = gateway.client(
            mode,
            "progress",
            &["fixture__slow", r#"{"ms": 300, "steps": 3}"#],
        );
        let messages: Vec<&str> = answer["progress"]
            .as_array()
            .expect("progress")
            .iter()
            .map(|p| p["message"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(
            messages,
            ["step 1 of 3", "step 2 of 3", "step 3 of 3"],
            "{mode}: {answer}"
        );
        assert_eq!(
            answer["result"]["structuredContent"],
            json!({"slept_ms": 300})
        );
    }
}

#[test]
fn cancellation_reaches_the_upstream() {
    let gateway =
        Gateway::start(json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}}));
    gateway.wait_ready();
    for mode in MODES {
        let before = gateway.cancellations_logged();
        let answer = gateway.client(
            mode,
            "cancel",
            &["fixture__slow", r#"{"ms": 20000}"#, "0.5"],
        );
        assert_eq!(answer["cancelled"], true, "{mode}: {answer}");
        gateway.wait_for_cancellation(
            before,
            &format!("{mode}: the upstream to receive the cancellation"),
        );
    }
}

#[test]
fn an_unknown_session_is_404_not_401() {
    let gateway = Gateway::start(json!({"mcpServers": {}}));
    let authority = gateway
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp");
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let (status, _) = crate::harness::http_post(
        authority,
        "/mcp",
        &[
            ("Mcp-Session-Id", "no-such-session"),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
        body,
    );
    assert_eq!(status, 404);
}

#[test]
fn a_call_timeout_names_the_server_and_the_timeout() {
    let mut server = fixture_server("fixture", &[]);
    server["call_timeout"] = json!("700ms");
    let gateway = Gateway::start(json!({"mcpServers": {"fixture": server}}));
    gateway.wait_ready();
    let answer = gateway.client("legacy", "call", &["fixture__slow", r#"{"ms": 10000}"#]);
    assert_eq!(answer["error"]["code"], -32001, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("\"fixture\"") && message.contains("700ms"),
        "{message}"
    );
    // The upstream was told to stop.
    gateway.wait_for_cancellation(0, "the upstream to receive the cancellation");
}

#[test]
fn failures_keep_their_shape() {
    let gateway =
        Gateway::start(json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}}));
    gateway.wait_ready();
    for mode in MODES {
        let tool_error = gateway.client(mode, "call", &["fixture__fail", "{}"]);
        assert_eq!(
            tool_error["result"]["isError"], true,
            "{mode}: a tool error stays a result: {tool_error}"
        );
        let protocol = gateway.client(mode, "call", &["fixture__protocol_error", "{}"]);
        assert_eq!(protocol["error"]["code"], -32602, "{mode}: {protocol}");
        assert!(
            protocol["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("the fixture refuses"),
            "{protocol}"
        );
        let unknown = gateway.client(mode, "call", &["fixture__nope", "{}"]);
        assert_eq!(
            unknown["error"]["message"], "unknown tool: fixture__nope",
            "{mode}: {unknown}"
        );
    }
}
