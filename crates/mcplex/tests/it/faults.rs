//! The fault matrix: upstreams and clients that misbehave, with real processes on loopback.
//! Each test bounds its own time; the gateway must answer correctly and keep serving.

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{
    Gateway, call_raw, eventually, fixture_server, http_fixture, http_send, names, rpc, tools,
};

fn call(gateway: &Gateway, tool: &str, args: &str) -> Value {
    gateway.client("legacy", "call", &[tool, args])
}

fn listing(gateway: &Gateway) -> Vec<String> {
    names(&gateway.client("legacy", "list", &[]))
}

#[test]
fn an_upstream_that_exits_mid_call_fails_the_call_within_a_second_and_comes_back() {
    let gateway = Gateway::start(json!({"mcpServers": {
        "fixture": fixture_server("fixture", &["--log-calls"]),
        "other": fixture_server("other", &[])
    }}));
    gateway.wait_ready();
    let pid = call(&gateway, "fixture__pid", "{}")["result"]["structuredContent"]["pid"]
        .as_u64()
        .expect("pid");
    let pid = crate::process_ids::host_pid(gateway.pid(), "fixture", pid);
    let (failed_after, other) = std::thread::scope(|scope| {
        // A raw request, so the moment its answer arrives is measured, not a client's teardown.
        let slow = scope.spawn(|| {
            let answer = call_raw(
                &gateway,
                "/mcp",
                None,
                "fixture__slow",
                json!({"ms": 20000}),
            );
            let answer: Value = serde_json::from_str(&answer).expect("json");
            (Instant::now(), answer)
        });
        eventually(
            "the slow call to reach the upstream",
            Duration::from_secs(20),
            || gateway.log().contains("call slow request-id").then_some(()),
        );
        crate::harness::signal(u32::try_from(pid).expect("pid fits"), libc::SIGKILL);
        let killed = Instant::now();
        // Other servers are unaffected meanwhile.
        let other = call(&gateway, "other__add", r#"{"a": 1, "b": 2}"#);
        let (answered, answer) = slow.join().expect("thread");
        // The upstream's fault, not the caller's: "upstream unavailable", naming the server.
        assert_eq!(answer["id"], 1, "{answer}");
        assert_eq!(answer["error"]["code"], UPSTREAM_UNAVAILABLE, "{answer}");
        assert_eq!(answer["error"]["data"]["server"], "fixture", "{answer}");
        (answered.saturating_duration_since(killed), other)
    });
    assert!(
        failed_after < Duration::from_secs(1),
        "the caller waited {failed_after:?} after the exit"
    );
    assert_eq!(other["result"]["structuredContent"]["sum"], 3.0, "{other}");
    eventually(
        "the restarted upstream to answer",
        Duration::from_secs(20),
        || {
            let answer = call(&gateway, "fixture__add", r#"{"a": 2, "b": 2}"#);
            (answer["result"]["structuredContent"]["sum"] == 4.0).then_some(())
        },
    );
    let restarts = metric(
        &gateway,
        r#"mcplex_upstream_restarts_total{server="fixture"}"#,
    );
    assert!(restarts >= 1.0, "{restarts} restarts counted");
}

/// The JSON-RPC error code of an upstream that is unreachable or broke (`errors.rs`).
const UPSTREAM_UNAVAILABLE: i64 = -32002;

/// The value of the sample `series` (name and labels, as exposed) on `/metrics`; 0 if absent.
fn metric(gateway: &Gateway, series: &str) -> f64 {
    let (status, metrics) = gateway.get("/metrics");
    assert_eq!(status, 200, "{metrics}");
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0.0)
}

/// Utime + stime of a process, from /proc.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks: u64 = fields.get(11).and_then(|f| f.parse().ok()).unwrap_or(0)
        + fields.get(12).and_then(|f| f.parse().ok()).unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    #[allow(unsafe_code)]
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_millis(ticks * 1000 / per_second)
}

#[test]
fn a_list_changed_flood_is_coalesced_and_listings_stay_consistent() {
    let gateway = Gateway::start(json!({"mcpServers": {
        "flood": fixture_server("flood", &["--flood-list-changed", "500"]),
        "calm": fixture_server("calm", &[])
    }}));
    gateway.wait_ready();
    let expected = listing(&gateway);
    assert!(
        expected.contains(&"flood__echo".to_owned()) && expected.contains(&"calm__echo".to_owned())
    );
    let cpu_before = cpu_time(gateway.pid());
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(4));
    let cpu = cpu_time(gateway.pid()) - cpu_before;
    let wall = started.elapsed();
    // ~2,000 notifications arrived; re-lists are spaced and unchanged lists rebuild nothing, so
    // the gateway (a debug build, here) stays far under a core.
    assert!(cpu < wall / 4, "gateway used {cpu:?} of CPU in {wall:?}");
    for _ in 0..3 {
        assert_eq!(
            listing(&gateway),
            expected,
            "the listing changed under a flood that changes nothing"
        );
    }
    let rebuilds = metric(&gateway, "mcplex_snapshot_rebuilds_total");
    assert!(
        rebuilds >= 1.0,
        "the first snapshot is counted ({rebuilds}): the metric is read"
    );
    assert!(
        rebuilds < 20.0,
        "{rebuilds} rebuilds for ~2,000 notifications"
    );
}

#[test]
fn huge_broken_and_strange_tool_lists_are_served_or_skipped_cleanly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let many: Vec<Value> = (0..10_000)
        .map(|i| json!({"name": format!("tool_{i:05}"), "description": format!("Synthetic tool number {i}."),
                        "inputSchema": {"type": "object", "properties": {"x": {"type": "integer"}}}}))
        .collect();
    let many_path = dir.path().join("many.json");
    std::fs::write(&many_path, Value::Array(many).to_string()).expect("write");
    // A 5 MB schema, a schema that is not an object, one that does not compile, and a normal tool.
    let big_enum: Vec<String> = (0..250_000).map(|i| format!("v{i:07}")).collect();
    let strange = json!([
        {"name": "huge", "inputSchema": {"type": "object", "properties": {"v": {"enum": big_enum}}}},
        {"name": "not_an_object", "inputSchema": "string"},
        {"name": "uncompilable", "inputSchema": {"type": "object", "properties": {"a": {"type": 12}}}},
        {"name": "fine", "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}
    ]);
    let strange_path = dir.path().join("strange.json");
    std::fs::write(&strange_path, strange.to_string()).expect("write");
    assert!(std::fs::metadata(&strange_path).expect("stat").len() > 2_500_000);
    let gateway = Gateway::start(json!({"mcpServers": {
        "many": fixture_server("many", &["--no-kit", "--raw-tools", &many_path.display().to_string()]),
        "strange": fixture_server("strange", &["--no-kit", "--raw-tools", &strange_path.display().to_string()])
    }}));
    gateway.wait_ready();
    let (_, readyz) = gateway.get("/readyz");
    let readyz: Value = serde_json::from_str(&readyz).expect("json");
    assert_eq!(readyz["servers"]["many"]["tools"], 10_000, "{readyz}");
    assert_eq!(
        readyz["servers"]["strange"]["tools"], 3,
        "the non-object schema is skipped: {readyz}"
    );
    assert!(
        gateway.log().contains("not_an_object"),
        "the skip is reported"
    );
    // Raw requests: a 10,000-tool listing is one SSE event of several MB, over the Python SDK's
    // default event size limit.
    let (status, listing) = rpc(&gateway, "/mcp", None, "tools/list", json!({}));
    assert_eq!(status, 200);
    assert!(listing.contains("many__tool_09999") && listing.contains("strange__huge"));
    let result = |tool: &str, arguments: Value| -> Value {
        let answer = call_raw(&gateway, "/mcp", None, tool, arguments);
        serde_json::from_str::<Value>(&answer).expect("json")["result"].clone()
    };
    let answer = result("many__tool_09999", json!({"x": 1}));
    assert_eq!(
        answer["structuredContent"]["arguments"],
        json!({"x": 1}),
        "{answer}"
    );
    let invalid = result("many__tool_00001", json!({"x": "one"}));
    assert_eq!(invalid["isError"], true, "{invalid}");
    let huge = result("strange__huge", json!({"v": "v0249999"}));
    assert_ne!(huge["isError"], true, "{huge}");
    assert_eq!(
        result("strange__huge", json!({"v": "nope"}))["isError"],
        true
    );
    // A schema that cannot compile fails open: the call is forwarded unvalidated.
    assert_ne!(
        result("strange__uncompilable", json!({"a": "anything"}))["isError"],
        true
    );
    assert_ne!(result("strange__fine", json!({"a": 1}))["isError"], true);
}

#[test]
fn garbage_on_stdout_is_reported_and_a_closed_stdout_restarts_the_server() {
    // `mute` is a fixture whose stdout pipe is cut after 2.5 s (the `cat` relaying it is killed)
    // while the process lives on: the gateway must notice the end of its output, terminate it
    // and start it again.
    let fixture = tools().fixture.display().to_string();
    let mute = json!({"command": "bash", "args": ["-c", format!("exec > >(timeout 2.5 cat); exec {fixture} --name mute")]});
    let gateway = Gateway::start(json!({"mcpServers": {
        "noisy": fixture_server("noisy", &["--garbage-every-ms", "100"]),
        "mute": mute
    }}));
    gateway.wait_ready();
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        call(&gateway, "noisy__add", r#"{"a": 1, "b": 1}"#)["result"]["structuredContent"]["sum"],
        2.0
    );
    let log = gateway.log();
    assert!(
        log.contains("not JSON-RPC") && log.contains("noisy"),
        "{log}"
    );
    // Reported, not flooded: dozens of garbage lines so far, one warning.
    assert!(
        log.matches("ignored output that is not JSON-RPC").count() <= 2,
        "{log}"
    );
    // The process lives on with its output cut: only the end of its output tells the gateway,
    // which counts a restart and is answered by the new process.
    eventually(
        "the mute server to be restarted and answer again",
        Duration::from_secs(30),
        || {
            let restarts = metric(&gateway, r#"mcplex_upstream_restarts_total{server="mute"}"#);
            let answer = call(&gateway, "mute__add", r#"{"a": 2, "b": 3}"#);
            (restarts >= 1.0 && answer["result"]["structuredContent"]["sum"] == 5.0).then_some(())
        },
    );
}

#[test]
fn downstream_garbage_gets_correct_errors_and_a_vanished_client_cancels_its_call() {
    let gateway =
        Gateway::start(json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}}));
    gateway.wait_ready();
    let authority = gateway.authority().to_owned();
    let modern = [("MCP-Protocol-Version", "2026-07-28")];
    let (status, body) = http_send(&authority, "POST", "/mcp", &modern, "{not json");
    assert_rpc_error(status, &body, PARSE_ERROR, "invalid JSON");
    let (status, body) = http_send(&authority, "POST", "/mcp", &modern, r#"{"hello": "world"}"#);
    assert_rpc_error(status, &body, INVALID_REQUEST, "wrong shape");
    let unknown = r#"{"jsonrpc":"2.0","id":1,"method":"no/such_method","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let (_, body) = http_send(
        &authority,
        "POST",
        "/mcp",
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "no/such_method"),
        ],
        unknown,
    );
    let answer: Value = serde_json::from_str(&data(&body)).expect("a JSON-RPC answer");
    assert_eq!(answer["id"], 1, "unknown method: {answer}");
    assert_eq!(answer["error"]["code"], -32601, "unknown method: {answer}");
    let (status, _) = http_send(
        &authority,
        "POST",
        "/mcp",
        &[("Mcp-Session-Id", "no-such-session")],
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
    );
    assert_eq!(status, 404, "unknown session");

    // A client starts a slow call and goes away: the upstream call is cancelled.
    let call_body = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fixture__slow","arguments":{"ms":20000},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let mut stream = TcpStream::connect(&authority).expect("connect");
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: fixture__slow\r\nContent-Length: {}\r\n\r\n{call_body}",
        call_body.len()
    );
    stream.write_all(request.as_bytes()).expect("send");
    std::thread::sleep(Duration::from_millis(800));
    drop(stream);
    gateway.wait_for_cancellation(0, "the upstream to see the cancellation");
    // And the gateway keeps serving.
    assert_eq!(
        call(&gateway, "fixture__add", r#"{"a": 1, "b": 1}"#)["result"]["structuredContent"]["sum"],
        2.0
    );
    assert_eq!(gateway.get("/healthz"), (200, "ok".to_owned()));
}

/// JSON-RPC's codes for a body that is not JSON, and for JSON that is not a request.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;

/// The JSON-RPC message of an answer: the `data:` of an event stream, or the body itself.
fn data(body: &str) -> String {
    body.lines()
        .find_map(|line| line.strip_prefix("data: "))
        .unwrap_or(body)
        .to_owned()
}

/// A bad request body is answered with HTTP 400 and the JSON-RPC error `code` (id null: the
/// request's id could not be read).
fn assert_rpc_error(status: u16, body: &str, code: i64, what: &str) {
    let answer: Value = serde_json::from_str(&data(body))
        .unwrap_or_else(|e| panic!("{what}: not a JSON-RPC answer ({e}): {status} {body}"));
    assert_eq!(
        (status, &answer["error"]["code"], &answer["id"]),
        (400, &json!(code), &Value::Null),
        "{what}: {answer}"
    );
}

#[test]
fn config_edits_that_break_or_delete_the_file_keep_the_running_config() {
    let config = json!({"mcpServers": {"a": fixture_server("a", &[])}});
    let gateway = Gateway::start(config.clone());
    gateway.wait_ready();
    let path = gateway.dir.path().join("config.json");
    let before = listing(&gateway);
    std::fs::write(&path, "{\"mcpServers\": {\"a\": ").expect("write");
    eventually(
        "the invalid edit to be rejected",
        Duration::from_secs(10),
        || {
            gateway
                .log()
                .contains("keeping the running config")
                .then_some(())
        },
    );
    assert_eq!(listing(&gateway), before);
    // The operator sees it where they look, with the file and the reason.
    let (_, answer) = gateway.api("GET", "/api/v1/config", "");
    let refused = answer["refused_edit"].as_str().unwrap_or_default();
    assert!(
        refused.contains("config.json") && refused.contains("the edit was refused"),
        "{answer}"
    );
    std::fs::remove_file(&path).expect("delete");
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(
        listing(&gateway),
        before,
        "a deleted config file changes nothing"
    );
    // Restored with one more server: the edit applies (the new server waits for approval).
    let mut restored = config;
    restored["mcpServers"]["b"] = fixture_server("b", &[]);
    std::fs::write(&path, restored.to_string()).expect("restore");
    gateway.approve_server("b");
    eventually(
        "the restored config to apply",
        Duration::from_secs(20),
        || {
            listing(&gateway)
                .contains(&"b__echo".to_owned())
                .then_some(())
        },
    );
    // A valid edit clears it.
    let (_, answer) = gateway.api("GET", "/api/v1/config", "");
    assert_eq!(answer["refused_edit"], Value::Null, "{answer}");
}

/// An HTTP upstream whose 500 page never ends: the gateway reads only its start, reports the
/// status with the page's first line, and does not wait for the rest (it used to read the whole
/// body, so a server like this one kept the connection attempt hanging until its timeout).
#[test]
fn an_error_page_that_never_ends_is_cut_short_and_reported() {
    let (_upstream, port) = http_fixture(&["--endless-error"]);
    let gateway = Gateway::start(json!({"mcpServers": {
        "endless": {"url": format!("http://127.0.0.1:{port}/mcp")}
    }}));
    let status = eventually(
        "the server to fail with the upstream's status",
        Duration::from_secs(10),
        || {
            let (_, body) = gateway.api("GET", "/api/v1/servers", "");
            let status = body["servers"][0]["status"].as_str()?.to_owned();
            status.starts_with("unhealthy").then_some(status)
        },
    );
    assert!(
        status.contains("500") && status.contains("internal error, line 0"),
        "{status}"
    );
    assert!(status.chars().count() < 1000, "the page is cut: {status}");
}
