//! How a session-era request is answered on the one request path: a call answered within a
//! second is one `application/json` body, a slower one an event stream (a priming event, then
//! the answer numbered in its stream). A plain `tools/call` is read straight into its parts; the
//! same call with `_meta` is read whole: both must give the same bytes, count the same in the
//! metrics and the audit log, and treat cancellation, unknown and closed sessions alike. A
//! result the upstream wrote is sent as it wrote it.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Gateway, eventually, fixture_server, mcplex, rpc};
use crate::http::{Reply, Version, exchange, exchange_within};

/// Opens an initialized session-era session on `path` and returns its id.
fn open_session(gateway: &Gateway, path: &str) -> String {
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"answers-test","version":"1"}}}"#;
    let reply = exchange(
        gateway.authority(),
        Version::Http11,
        "POST",
        path,
        &[],
        init,
    );
    assert_eq!(reply.status, 200, "{reply:?}");
    let session = reply
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let reply = exchange(
        gateway.authority(),
        Version::Http11,
        "POST",
        path,
        &[session_header(&session), VERSION],
        initialized,
    );
    assert_eq!(reply.status, 202, "{reply:?}");
    let reply = call_at(
        gateway,
        path,
        &session,
        json!(0),
        "describe_tool",
        json!({}),
        false,
    );
    assert!(is_json(&reply), "{reply:?}");
    session
}

const VERSION: (&str, &str) = ("MCP-Protocol-Version", "2025-06-18");

fn session_header(session: &str) -> (&'static str, &str) {
    ("Mcp-Session-Id", session)
}

/// A `tools/call` of `name` with `arguments` and request id `id` in `session`: plain, or
/// (`whole`) with `_meta`, which is read as a whole message.
fn call(
    gateway: &Gateway,
    session: &str,
    id: Value,
    name: &str,
    arguments: Value,
    whole: bool,
) -> Reply {
    call_at(gateway, "/mcp/all", session, id, name, arguments, whole)
}

fn call_at(
    gateway: &Gateway,
    path: &str,
    session: &str,
    id: Value,
    name: &str,
    arguments: Value,
    whole: bool,
) -> Reply {
    let mut body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                      "params": {"name": name, "arguments": arguments}});
    if whole {
        body["params"]["_meta"] = json!({});
    }
    let headers = [session_header(session), VERSION];
    exchange(
        gateway.authority(),
        Version::Http11,
        "POST",
        path,
        &headers,
        &body.to_string(),
    )
}

/// The number of the answer stream an SSE body's priming event names.
fn stream_number(reply: &Reply) -> u64 {
    reply
        .body
        .lines()
        .find_map(|line| line.strip_prefix("id: 0/"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no priming event in {reply:?}"))
}

/// Whether `reply` is one JSON body (the answer to a quick call).
fn is_json(reply: &Reply) -> bool {
    reply.header("content-type") == Some("application/json")
}

/// Headers that differ by wire (JSON body or event stream) or by moment.
const WIRE_HEADERS: [&str; 6] = [
    "date",
    "content-type",
    "content-length",
    "transfer-encoding",
    "cache-control",
    "x-accel-buffering",
];

/// The answer as the client reads it: the status, the headers that do not depend on the wire,
/// and the JSON-RPC message's bytes (a JSON body, or the data of an event stream's answer).
fn comparable(reply: &Reply) -> (u16, Vec<String>, String) {
    let head = reply
        .head
        .lines()
        .skip(1)
        .filter(|line| {
            let name = line
                .split(':')
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase();
            !WIRE_HEADERS.contains(&name.as_str())
        })
        .map(str::to_owned)
        .collect();
    let message = if is_json(reply) {
        reply.body.clone()
    } else {
        let events = dechunk(&reply.body);
        let data = events
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .filter(|data| !data.is_empty())
            .collect::<Vec<_>>();
        assert_eq!(data.len(), 1, "one answer event: {events:?}");
        data[0].to_owned()
    };
    (reply.status, head, message)
}

/// The framing of a session's event stream for one answer: a priming event, then the answer
/// event.
fn assert_sse_answer(reply: &Reply) {
    assert_eq!(
        reply.header("content-type"),
        Some("text/event-stream"),
        "{reply:?}"
    );
    let number = stream_number(reply);
    let events = dechunk(&reply.body);
    let framed = events.starts_with(&format!("data: \nid: 0/{number}\nretry: "))
        && events.ends_with(&format!("\nid: 1/{number}\n\n"));
    assert!(framed, "{events:?}");
}

/// The body of a chunked answer without its chunk framing.
fn dechunk(raw: &str) -> String {
    let mut out = String::new();
    let mut rest = raw;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            return raw.to_owned();
        };
        if size == 0 || after.len() < size {
            break;
        }
        out.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    out
}

fn metric(gateway: &Gateway, line_start: &str) -> f64 {
    let (_, metrics) = gateway.get("/metrics");
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(line_start))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0.0)
}

fn audit_rows(gateway: &Gateway, count: usize) -> Vec<Value> {
    let cli = gateway.dir.path().join("cli.json");
    std::fs::write(
        &cli,
        json!({"data_dir": gateway.dir.path().join("data"), "mcpServers": {}}).to_string(),
    )
    .expect("write");
    eventually(
        &format!("{count} audit rows"),
        Duration::from_secs(10),
        || {
            let (code, out, _) =
                mcplex(&["activity", "--config", &cli.display().to_string(), "--json"]);
            let rows: Vec<Value> = serde_json::from_str(&out).ok()?;
            (code == 0 && rows.len() == count).then_some(rows)
        },
    )
}

/// An audit row without what differs between two calls alike (ids, times).
fn audit_essence(row: &Value) -> Value {
    let mut row = row.clone();
    if let Some(row) = row.as_object_mut() {
        row.retain(|key, _| !matches!(key.as_str(), "request_id" | "at_ms" | "duration_us"));
    }
    row
}

#[test]
fn plain_and_whole_calls_are_answered_alike_in_bytes_metrics_and_audit_rows() {
    let gateway =
        Gateway::start(json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}}));
    gateway.wait_ready();
    let session = open_session(&gateway, "/mcp/all");
    let cases = [
        (
            json!(11),
            "fixture__echo",
            json!({"text": "hello", "n": [1, 2.5, null]}),
        ),
        (json!("s-12"), "fixture__echo", json!({})),
        (json!(13), "fixture__add", json!({"a": "one"})),
        (json!(14), "fixture__fail", json!({})),
        (json!(15), "fixture__protocol_error", json!({})),
        (json!(16), "nope__nothing", json!({})),
        (json!(17), "describe_tool", json!({"name": "fixture__add"})),
    ];
    for (id, name, arguments) in &cases {
        let plain = call(
            &gateway,
            &session,
            id.clone(),
            name,
            arguments.clone(),
            false,
        );
        let whole = call(
            &gateway,
            &session,
            id.clone(),
            name,
            arguments.clone(),
            true,
        );
        assert!(is_json(&plain), "{name}: {plain:?}");
        assert!(is_json(&whole), "{name}: {whole:?}");
        assert_eq!(comparable(&plain), comparable(&whole), "{name}");
        assert_eq!(plain.json()["id"], *id, "{name}: {plain:?}");
    }
    let echo_ok = r#"mcplex_tool_calls_total{server="fixture",tool="echo",status="ok"} "#;
    assert_eq!(
        metric(&gateway, echo_ok),
        4.0,
        "two echo calls of each kind"
    );
    let invalid =
        r#"mcplex_tool_calls_total{server="fixture",tool="add",status="invalid_arguments"} "#;
    assert_eq!(metric(&gateway, invalid), 2.0);
    // Each call was made once of each kind: its two rows are alike.
    let mut essences: Vec<String> = audit_rows(&gateway, 12)
        .iter()
        .map(|row| audit_essence(row).to_string())
        .collect();
    essences.sort();
    for pair in essences.chunks(2) {
        assert!(pair.len() == 2 && pair[0] == pair[1], "{essences:#?}");
    }
}

#[test]
fn a_slow_call_is_a_numbered_event_stream_with_the_same_answer() {
    let gateway =
        Gateway::start(json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}}));
    gateway.wait_ready();
    let session = open_session(&gateway, "/mcp/all");
    // Past the wait for a quick answer (one second): the answer is streamed.
    let arguments = json!({"ms": 1500});
    let plain = call(
        &gateway,
        &session,
        json!(31),
        "fixture__slow",
        arguments.clone(),
        false,
    );
    let whole = call(
        &gateway,
        &session,
        json!(31),
        "fixture__slow",
        arguments,
        true,
    );
    assert_sse_answer(&plain);
    assert_sse_answer(&whole);
    // Each answer has a stream of its own in the session.
    assert_ne!(stream_number(&plain), stream_number(&whole));
    assert_eq!(comparable(&plain), comparable(&whole));
    assert_eq!(plain.json()["id"], 31, "{plain:?}");
}

#[test]
fn unknown_and_deleted_sessions_are_404_for_plain_and_whole_calls() {
    let gateway =
        Gateway::start(json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}}));
    gateway.wait_ready();
    for whole in [false, true] {
        let reply = call(
            &gateway,
            "no-such-session",
            json!(1),
            "fixture__echo",
            json!({}),
            whole,
        );
        assert_eq!(reply.status, 404, "{reply:?}");
    }
    let session = open_session(&gateway, "/mcp/all");
    let reply = exchange(
        gateway.authority(),
        Version::Http11,
        "DELETE",
        "/mcp/all",
        &[session_header(&session), VERSION],
        "",
    );
    assert_eq!(reply.status, 200, "{reply:?}");
    for whole in [false, true] {
        let reply = call(
            &gateway,
            &session,
            json!(2),
            "fixture__echo",
            json!({}),
            whole,
        );
        assert_eq!(reply.status, 404, "deleted session: {reply:?}");
    }
    // A session of another route is unknown here.
    let other = open_session(&gateway, "/mcp/call");
    let reply = call(
        &gateway,
        &other,
        json!(3),
        "fixture__echo",
        json!({}),
        false,
    );
    assert_eq!(reply.status, 404, "{reply:?}");
}

#[test]
fn a_cancelled_call_is_cancelled_upstream_and_never_answered() {
    let gateway =
        Gateway::start(json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}}));
    gateway.wait_ready();
    let session = open_session(&gateway, "/mcp/all");
    let mut replies = Vec::new();
    for (id, whole) in [(21, false), (22, true)] {
        let before = gateway.cancellations_logged();
        let authority = gateway.authority().to_owned();
        let session_id = session.clone();
        let waiting = std::thread::spawn(move || {
            let mut body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                              "params": {"name": "fixture__slow", "arguments": {"ms": 20000}}});
            if whole {
                body["params"]["_meta"] = json!({});
            }
            let headers = [("Mcp-Session-Id", session_id.as_str()), VERSION];
            exchange_within(
                &authority,
                Version::Http11,
                "POST",
                "/mcp/all",
                &headers,
                &body.to_string(),
                Duration::from_secs(4),
            )
        });
        std::thread::sleep(Duration::from_millis(700));
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                            "params": {"requestId": id, "reason": "test"}});
        let reply = exchange(
            gateway.authority(),
            Version::Http11,
            "POST",
            "/mcp/all",
            &[session_header(&session), VERSION],
            &cancel.to_string(),
        );
        assert_eq!(reply.status, 202, "{reply:?}");
        gateway.wait_for_cancellation(before, "the upstream to see the cancellation");
        let reply = waiting.join().expect("the waiting client");
        assert_eq!(reply.status, 200, "{reply:?}");
        assert!(
            reply.message().is_none(),
            "no answer after a cancel: {reply:?}"
        );
        replies.push(reply);
    }
    // Each stream ended after its priming event, without the answer.
    for reply in &replies {
        let events = dechunk(&reply.body);
        let number = stream_number(reply);
        assert!(
            events.starts_with(&format!("data: \nid: 0/{number}\nretry: ")),
            "{events:?}"
        );
        assert!(!events.contains("\ndata: {"), "{events:?}");
    }
}

/// A ready gateway whose one server, `fixture`, serves only `tools` (raw definitions), and the
/// directory holding their file (kept while the gateway runs: a restarted fixture reads it again).
fn serving_raw_tools(tools: Value) -> (Gateway, tempfile::TempDir) {
    let scratch = tempfile::tempdir().expect("tempdir");
    let tools_path = scratch.path().join("tools.json");
    std::fs::write(&tools_path, tools.to_string()).expect("write");
    let gateway = Gateway::start(json!({"mcpServers": {"fixture": fixture_server(
        "fixture",
        &["--no-kit", "--raw-tools", &tools_path.display().to_string()]
    )}}));
    gateway.wait_ready();
    (gateway, scratch)
}

/// A result in a member order and with a member that no SDK writes: the upstream's bytes go
/// out as they are (results pass untouched), however the call was read.
#[test]
fn a_result_goes_out_as_the_upstream_wrote_it() {
    let result = r#"{"isError":false,"x-upstream":{"kept":[1,"two"]},"content":[{"type":"text","text":"as written"}]}"#;
    let (gateway, _tools) = serving_raw_tools(json!([{
        "name": "written", "description": "Answers with a result as written.",
        "inputSchema": {"type": "object"},
        "x-fixture-result": serde_json::from_str::<Value>(result).expect("json")}]));
    let session = open_session(&gateway, "/mcp/all");
    for (id, whole) in [(21, false), (22, true)] {
        let reply = call(
            &gateway,
            &session,
            json!(id),
            "fixture__written",
            json!({}),
            whole,
        );
        assert!(is_json(&reply), "{reply:?}");
        assert_eq!(
            reply.body,
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)
        );
    }
}

/// JSON that a JSON value cannot hold (a number beyond f64's range): a session-era client gets
/// the server's bytes as they are; a stateless client, whose answer the gateway
/// builds from a value, gets the server's fault, and the metrics count that call as failed.
#[test]
fn a_result_a_value_cannot_hold_passes_as_written_or_fails_and_is_counted_so() {
    let result = r#"{"content":[{"type":"text","text":"far"}],"n":1e400}"#;
    let (gateway, _tools) = serving_raw_tools(json!([{
        "name": "far", "description": "Answers with a number beyond f64.",
        "inputSchema": {"type": "object"}, "x-fixture-result-text": result}]));
    let session = open_session(&gateway, "/mcp/all");
    let plain = call(
        &gateway,
        &session,
        json!(31),
        "fixture__far",
        json!({}),
        false,
    );
    assert_eq!(
        plain.body,
        format!(r#"{{"jsonrpc":"2.0","id":31,"result":{result}}}"#)
    );
    let (status, answer) = rpc(
        &gateway,
        "/mcp/all",
        None,
        "tools/call",
        json!({"name": "fixture__far", "arguments": {}}),
    );
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("cannot read as a value"), "{answer}");
    let counted = |status: &str| {
        let line =
            format!(r#"mcplex_tool_calls_total{{server="fixture",tool="far",status="{status}"}} "#);
        metric(&gateway, &line)
    };
    assert_eq!(counted("ok"), 1.0, "the session-era call");
    assert_eq!(counted("upstream_error"), 1.0, "the stateless call");
}

/// Whether the upstream's bytes go out as they are is the caller's era's to say, not a
/// library's: a member order of its own and a carriage return between tokens are the
/// upstream's to write and go out untouched; a result without the `content` list every era
/// needs, with a 2026-07-28 `resultType` that a session-era caller does not know, or with a
/// `null` that clients' schemas refuse, is built for that caller.
#[test]
fn a_result_is_built_for_its_era_only_where_the_era_needs_it() {
    let untouched = "{\"isError\":false,\r\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}";
    let tool = |name: &str, text: &str| {
        json!({"name": name, "description": "Answers with a canned result.",
               "inputSchema": {"type": "object"}, "x-fixture-result-text": text})
    };
    let (gateway, _tools) = serving_raw_tools(json!([
        tool("untouched", untouched),
        tool(
            "typed",
            r#"{"resultType":"complete","content":[{"type":"text","text":"y"}]}"#
        ),
        tool("bare", r#"{"isError":true}"#),
        tool("nulls", r#"{"content":[],"isError":null,"_meta":null}"#),
    ]));
    let session = open_session(&gateway, "/mcp/all");
    for (id, whole) in [(41, false), (42, true)] {
        let reply = call(
            &gateway,
            &session,
            json!(id),
            "fixture__untouched",
            json!({}),
            whole,
        );
        assert_eq!(
            reply.body,
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{untouched}}}"#)
        );
    }
    let typed = call(
        &gateway,
        &session,
        json!(43),
        "fixture__typed",
        json!({}),
        false,
    );
    let typed: Value = serde_json::from_str(&typed.body).expect("json");
    assert_eq!(
        typed["result"],
        json!({"content": [{"type": "text", "text": "y"}]}),
        "{typed}"
    );
    let bare = call(
        &gateway,
        &session,
        json!(44),
        "fixture__bare",
        json!({}),
        false,
    );
    let bare: Value = serde_json::from_str(&bare.body).expect("json");
    assert_eq!(
        bare["result"],
        json!({"content": [], "isError": true}),
        "{bare}"
    );
    let nulls = call(
        &gateway,
        &session,
        json!(45),
        "fixture__nulls",
        json!({}),
        false,
    );
    let nulls: Value = serde_json::from_str(&nulls.body).expect("json");
    assert_eq!(nulls["result"], json!({"content": []}), "{nulls}");
}
