//! Issue 15, the HTTP edge: connection and read timeouts, the connection cap, sessions freed and
//! capped, credential header forms, duplicate request ids, JSON-RPC error codes, Host forms.
//! Timeouts are configured short here; every bound a test waits on is several times the
//! configured value, so a loaded machine does not make them fail.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{Gateway, eventually, fixture_server, http_get, http_send, rpc_with};
use crate::http::{Reply, Version};

const PROTOCOL: &str = "2025-06-18";

fn fixture_config(extra: Value) -> Value {
    let mut config = json!({"mcpServers": {
        "fixture": fixture_server("fixture", &["--log-calls"])
    }});
    if let (Some(config), Value::Object(extra)) = (config.as_object_mut(), extra) {
        config.extend(extra);
    }
    config
}

/// One request on its own connection (`Connection: close`), read to the end.
fn exchange(
    gateway: &Gateway,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    crate::http::exchange(
        gateway.authority(),
        Version::Http11,
        method,
        path,
        headers,
        body,
    )
}

/// Opens a session-era session on `/mcp` and sends `notifications/initialized`.
fn open_session(gateway: &Gateway) -> Result<String, Reply> {
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL, "capabilities": {},
        "clientInfo": {"name": "hardening", "version": "0"}
    }});
    let reply = exchange(gateway, "POST", "/mcp", &[], &initialize.to_string());
    let Some(session) = reply
        .header("mcp-session-id")
        .filter(|_| reply.status == 200)
        .map(str::to_owned)
    else {
        return Err(reply);
    };
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let done = in_session(gateway, &session, &initialized);
    assert!(
        done.status == 202 || done.status == 200,
        "{} {}",
        done.status,
        done.body
    );
    Ok(session)
}

fn in_session(gateway: &Gateway, session: &str, message: &Value) -> Reply {
    exchange(
        gateway,
        "POST",
        "/mcp",
        &[
            ("Mcp-Session-Id", session),
            ("MCP-Protocol-Version", PROTOCOL),
        ],
        &message.to_string(),
    )
}

fn call_in_session(gateway: &Gateway, session: &str, id: Value, tool: &str, args: Value) -> Reply {
    let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": args}});
    in_session(gateway, session, &message)
}

fn delete_session(gateway: &Gateway, session: &str) -> u16 {
    exchange(
        gateway,
        "DELETE",
        "/mcp",
        &[
            ("Mcp-Session-Id", session),
            ("MCP-Protocol-Version", PROTOCOL),
        ],
        "",
    )
    .status
}

/// The `mcplex_sessions` gauge.
fn sessions_gauge(gateway: &Gateway) -> i64 {
    let (_, metrics) = gateway.get("/metrics");
    metrics
        .lines()
        .find_map(|line| line.strip_prefix("mcplex_sessions "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(-1)
}

/// Whether the server closed `stream` within `limit` (EOF or reset), reading and discarding
/// whatever arrives.
fn closed_within(stream: &mut TcpStream, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    let mut buffer = [0u8; 4096];
    while Instant::now() < deadline {
        let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
        match stream.read(&mut buffer) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return true,
        }
    }
    false
}

fn connect(gateway: &Gateway) -> TcpStream {
    TcpStream::connect(gateway.authority()).expect("connect")
}

#[test]
fn a_slow_request_head_or_body_is_cut_and_a_silent_connection_closed() {
    let gateway = Gateway::start(fixture_config(json!({
        "http_header_read_timeout": "1s",
        "http_body_read_timeout": "1s",
    })));
    gateway.wait_ready();
    let authority = gateway.authority().to_owned();

    let mut silent = connect(&gateway);
    let mut slow_head = connect(&gateway);
    slow_head
        .write_all(format!("GET /healthz HTTP/1.1\r\nHost: {authority}\r\n").as_bytes())
        .expect("write");
    let mut slow_body = connect(&gateway);
    slow_body
        .write_all(
            format!(
                "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\""
            )
            .as_bytes(),
        )
        .expect("write");

    assert!(
        closed_within(&mut silent, Duration::from_secs(15)),
        "a connection that sends nothing is closed"
    );
    assert!(
        closed_within(&mut slow_head, Duration::from_secs(15)),
        "a request head that never ends is cut"
    );
    let mut answer = String::new();
    let _ = slow_body.set_read_timeout(Some(Duration::from_secs(15)));
    let _ = slow_body.read_to_string(&mut answer);
    assert!(
        answer.starts_with("HTTP/1.1 408"),
        "a body that never ends gets 408: {answer:?}"
    );
    // Meanwhile others are served.
    assert_eq!(gateway.get("/healthz").0, 200);
}

#[test]
fn an_idle_connection_is_closed_but_a_long_answer_is_not_cut() {
    let gateway = Gateway::start(fixture_config(json!({"http_idle_timeout": "1s"})));
    gateway.wait_ready();
    let authority = gateway.authority().to_owned();

    // A keep-alive connection that answered one request and then sits idle.
    let mut idle = connect(&gateway);
    idle.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {authority}\r\n\r\n").as_bytes())
        .expect("write");
    let mut first = [0u8; 512];
    let _ = idle.set_read_timeout(Some(Duration::from_secs(10)));
    let n = idle.read(&mut first).expect("an answer");
    assert!(String::from_utf8_lossy(&first[..n]).starts_with("HTTP/1.1 200"));

    // A session's GET stream and a tool call both outlast the idle timeout.
    let session = open_session(&gateway).unwrap_or_else(|r| panic!("{} {}", r.status, r.body));
    let mut stream = connect(&gateway);
    stream
        .write_all(
            format!(
                "GET /mcp HTTP/1.1\r\nHost: {authority}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {session}\r\nMCP-Protocol-Version: {PROTOCOL}\r\n\r\n"
            )
            .as_bytes(),
        )
        .expect("write");
    let call = call_in_session(
        &gateway,
        &session,
        json!(1),
        "fixture__slow",
        json!({"ms": 4000}),
    );
    assert_eq!(call.status, 200, "{}", call.body);
    assert_eq!(
        call.json()["result"]["structuredContent"]["slept_ms"],
        4000,
        "{}",
        call.body
    );
    assert!(
        closed_within(&mut idle, Duration::from_secs(15)),
        "the idle keep-alive connection is closed"
    );
    assert!(
        !closed_within(&mut stream, Duration::from_millis(500)),
        "the GET stream stays open past the idle timeout"
    );
}

#[test]
fn past_the_connection_cap_the_oldest_idle_connection_makes_room() {
    let gateway = Gateway::start(fixture_config(json!({
        "max_connections": 8,
        "http_header_read_timeout": "120s",
        "http_idle_timeout": "120s",
    })));
    gateway.wait_ready();
    let mut hoarded: Vec<TcpStream> = (0..20).map(|_| connect(&gateway)).collect();
    eventually(
        "a new client to be served past the cap",
        Duration::from_secs(20),
        || (gateway.get("/healthz").0 == 200).then_some(()),
    );
    let mut closed = 0;
    for stream in &mut hoarded {
        if closed_within(stream, Duration::from_millis(300)) {
            closed += 1;
        }
    }
    assert!(
        closed >= 12,
        "only {closed} of 20 idle connections were closed"
    );
}

#[test]
fn past_the_connection_cap_with_nothing_idle_a_newcomer_gets_503_at_once() {
    let gateway = Gateway::start(fixture_config(json!({"max_connections": 2})));
    gateway.wait_ready();
    std::thread::scope(|scope| {
        let calls: Vec<_> = (0..2)
            .map(|i| {
                let gateway = &gateway;
                scope.spawn(move || {
                    let session = open_session(gateway).map_err(|r| r.status)?;
                    let reply = call_in_session(
                        gateway,
                        &session,
                        json!(i),
                        "fixture__slow",
                        json!({"ms": 6000}),
                    );
                    Ok::<u16, u16>(reply.status)
                })
            })
            .collect();
        eventually(
            "both slow calls to reach the upstream",
            Duration::from_secs(20),
            || (gateway.log().matches("call slow request-id").count() >= 2).then_some(()),
        );
        let started = Instant::now();
        let (status, body) = http_get(gateway.authority(), "/healthz");
        assert_eq!(status, 503, "{body}");
        assert!(started.elapsed() < Duration::from_secs(3));
        for call in calls {
            assert_eq!(call.join().expect("thread"), Ok(200));
        }
    });
    eventually("room again", Duration::from_secs(10), || {
        (gateway.get("/healthz").0 == 200).then_some(())
    });
}

/// Open file descriptors of a process.
fn open_files(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |dir| dir.count())
}

#[test]
fn out_of_file_descriptors_the_gateway_keeps_accepting() {
    let gateway = Gateway::start(fixture_config(json!({
        "http_header_read_timeout": "120s",
        "http_idle_timeout": "120s",
    })));
    gateway.wait_ready();
    let pid = gateway.pid();
    let limit = open_files(pid) + 24;
    let status = std::process::Command::new("prlimit")
        .arg(format!("--pid={pid}"))
        .arg(format!("--nofile={limit}:{limit}"))
        .status()
        .expect("prlimit");
    assert!(status.success(), "prlimit failed");
    let _hoarded: Vec<TcpStream> = (0..80).map(|_| connect(&gateway)).collect();
    eventually(
        "a new client to be served with every descriptor taken",
        Duration::from_secs(30),
        || (gateway.get("/healthz").0 == 200).then_some(()),
    );
    let result = gateway.client("legacy", "call", &["fixture__add", r#"{"a": 1, "b": 2}"#]);
    assert_eq!(
        result["result"]["structuredContent"]["sum"], 3.0,
        "{result}"
    );
}

#[test]
fn a_deleted_session_is_freed_answers_200_and_the_gauge_stays_true() {
    let gateway = Gateway::start(fixture_config(json!({})));
    gateway.wait_ready();
    let sessions: Vec<String> = (0..30)
        .map(|_| open_session(&gateway).unwrap_or_else(|r| panic!("{} {}", r.status, r.body)))
        .collect();
    assert_eq!(sessions_gauge(&gateway), 30);
    for session in &sessions {
        assert_eq!(delete_session(&gateway, session), 200);
    }
    assert_eq!(sessions_gauge(&gateway), 0, "no session is alive");
    let after = call_in_session(
        &gateway,
        &sessions[0],
        json!(1),
        "fixture__add",
        json!({"a": 1, "b": 1}),
    );
    assert_eq!(after.status, 404, "{}", after.body);
}

#[test]
fn an_idle_session_expires_but_one_with_a_call_in_flight_does_not() {
    let gateway = Gateway::start(fixture_config(json!({"session_idle_timeout": "1s"})));
    gateway.wait_ready();
    let idle = open_session(&gateway).unwrap_or_else(|r| panic!("{} {}", r.status, r.body));
    let busy = open_session(&gateway).unwrap_or_else(|r| panic!("{} {}", r.status, r.body));
    let call = call_in_session(
        &gateway,
        &busy,
        json!("long"),
        "fixture__slow",
        json!({"ms": 4000}),
    );
    assert_eq!(
        call.json()["result"]["structuredContent"]["slept_ms"],
        4000,
        "{}",
        call.body
    );
    let after = call_in_session(
        &gateway,
        &idle,
        json!(1),
        "fixture__add",
        json!({"a": 1, "b": 1}),
    );
    assert_eq!(after.status, 404, "the idle session ended: {}", after.body);
    eventually(
        "the gauge to count no session",
        Duration::from_secs(10),
        || (sessions_gauge(&gateway) == 0).then_some(()),
    );
}

#[test]
fn past_max_sessions_initialize_is_refused_clearly() {
    let gateway = Gateway::start(fixture_config(json!({"max_sessions": 3})));
    gateway.wait_ready();
    let open: Vec<String> = (0..3)
        .map(|_| open_session(&gateway).unwrap_or_else(|r| panic!("{} {}", r.status, r.body)))
        .collect();
    let refused = open_session(&gateway).expect_err("a fourth session is refused");
    assert_eq!(refused.status, 503, "{}", refused.body);
    let answer = refused.json();
    assert!(
        answer["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("max_sessions 3")),
        "{answer}"
    );
    // Stateless (2026-07-28) requests need no session and are still served.
    let (status, _) = rpc_with(&gateway, "/mcp", None, "tools/list", json!({}), &[]);
    assert_eq!(status, 200);
    assert_eq!(delete_session(&gateway, &open[0]), 200);
    assert!(open_session(&gateway).is_ok(), "a place was freed");
}

#[test]
fn an_authorization_header_that_is_not_a_bearer_token_is_refused() {
    let gateway = Gateway::start(fixture_config(json!({})));
    gateway.wait_ready();
    let list = |authorization: Option<&str>| {
        let extra: Vec<(&str, &str)> = authorization
            .map(|value| ("Authorization", value))
            .into_iter()
            .collect();
        rpc_with(&gateway, "/mcp", None, "tools/list", json!({}), &extra).0
    };
    assert_eq!(list(None), 200, "no header: anonymous on loopback");
    for form in [
        "Basic dG9rZW4=",
        "Token abc",
        "abc",
        "Bearer: abc",
        "",
        "Bearer",
        "Bearer abc def",
        "Bearer wrong",
    ] {
        assert_eq!(list(Some(form)), 401, "Authorization: {form:?}");
    }
    let (status, _) = http_send(
        gateway.authority(),
        "GET",
        "/metrics",
        &[("Authorization", "Basic abc")],
        "",
    );
    assert_eq!(status, 401, "metrics too");
}

#[test]
fn a_request_id_already_in_flight_in_the_session_is_refused() {
    let gateway = Gateway::start(fixture_config(json!({})));
    gateway.wait_ready();
    let session = open_session(&gateway).unwrap_or_else(|r| panic!("{} {}", r.status, r.body));
    std::thread::scope(|scope| {
        let slow = scope.spawn(|| {
            call_in_session(
                &gateway,
                &session,
                json!(7),
                "fixture__slow",
                json!({"ms": 3000}),
            )
        });
        eventually(
            "the slow call to reach the upstream",
            Duration::from_secs(20),
            || gateway.log().contains("call slow request-id").then_some(()),
        );
        let twin = call_in_session(
            &gateway,
            &session,
            json!(7),
            "fixture__add",
            json!({"a": 1, "b": 2}),
        );
        assert_eq!(twin.status, 400, "{}", twin.body);
        let twin = twin.json();
        assert_eq!(twin["error"]["code"], -32600, "{twin}");
        assert_eq!(twin["id"], 7, "{twin}");
        assert!(
            twin["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("in flight")),
            "{twin}"
        );
        // "7" is another id than 7.
        let string_id = call_in_session(
            &gateway,
            &session,
            json!("7"),
            "fixture__add",
            json!({"a": 2, "b": 2}),
        )
        .json();
        assert_eq!(string_id["id"], "7", "{string_id}");
        assert_eq!(
            string_id["result"]["structuredContent"]["sum"], 4.0,
            "{string_id}"
        );
        let slow = slow.join().expect("thread").json();
        assert_eq!(slow["id"], 7, "{slow}");
        assert_eq!(
            slow["result"]["structuredContent"]["slept_ms"], 3000,
            "the first call gets its own answer: {slow}"
        );
    });
    let again = call_in_session(
        &gateway,
        &session,
        json!(7),
        "fixture__add",
        json!({"a": 3, "b": 3}),
    )
    .json();
    assert_eq!(
        again["result"]["structuredContent"]["sum"], 6.0,
        "an id is free again once its answer ended: {again}"
    );
}

#[test]
fn bodies_that_are_not_json_rpc_get_json_rpc_errors() {
    let gateway = Gateway::start(fixture_config(json!({})));
    gateway.wait_ready();
    let garbage = exchange(&gateway, "POST", "/mcp", &[], "this is not json");
    assert_eq!(garbage.status, 400, "{}", garbage.body);
    assert_eq!(garbage.json()["error"]["code"], -32700, "{}", garbage.body);

    let (_, answer) = rpc_with(
        &gateway,
        "/mcp",
        None,
        "tools/call",
        json!({"name": {"not": "a string"}, "arguments": 5}),
        &[],
    );
    let answer: Value = serde_json::from_str(&answer).unwrap_or_else(|_| json!({"raw": answer}));
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
}

#[test]
fn a_host_or_origin_with_text_after_the_brackets_is_not_loopback() {
    let gateway = Gateway::start(fixture_config(json!({})));
    gateway.wait_ready();
    let port = gateway.authority().rsplit(':').next().unwrap_or_default();
    let status = |headers: &[(&str, &str)]| {
        rpc_with(&gateway, "/mcp", None, "tools/list", json!({}), headers).0
    };
    assert_eq!(status(&[("Host", "[::1].evil.com")]), 403);
    assert_eq!(status(&[("Host", &format!("[::1].evil.com:{port}"))]), 403);
    assert_eq!(status(&[("Origin", "http://[::1].evil.com")]), 403);
    assert_eq!(status(&[("Host", &format!("[::1]:{port}"))]), 200);
    assert_eq!(status(&[("Origin", "http://[::1]:3000")]), 200);
}

#[test]
fn readyz_off_loopback_says_only_ready_without_the_api_key() {
    let gateway = Gateway::start_bound(fixture_config(json!({})), "0.0.0.0", &[]);
    eventually("every server to be ready", Duration::from_secs(60), || {
        (gateway.get("/readyz?all").0 == 200).then_some(())
    });
    let (status, body) = gateway.get("/readyz");
    assert_eq!(status, 200);
    let answer: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(answer, json!({"ready": true}), "nothing but readiness");
    let key = format!("Bearer {}", gateway.api_key());
    let (status, body) = http_send(
        gateway.authority(),
        "GET",
        "/readyz",
        &[("Authorization", &key)],
        "",
    );
    assert_eq!(status, 200);
    let answer: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(answer["servers"]["fixture"]["status"], "ready", "{answer}");
}
