//! GET streams cannot lock the operator out (the fourth adversarial review's first defect): an
//! agent holding every connection with its sessions' GET streams makes room for newcomers, as
//! idle connections and slow bodies do, since a client resumes such a stream where it left off.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::json;

use crate::harness::{Gateway, eventually, fixture_server};
use crate::http::{Version, exchange};

/// A gateway serving the fixture, with `settings` besides, ready.
fn with_fixture(mut settings: serde_json::Value) -> Gateway {
    settings["mcpServers"] = json!({"fixture": fixture_server("fixture", &[])});
    let gateway = Gateway::start(settings);
    gateway.wait_ready();
    gateway
}

/// The bearer of a new read-only agent token named `name`.
fn reader(gateway: &Gateway, name: &str) -> String {
    format!(
        "Bearer {}",
        gateway.create_token(json!({"name": name, "permissions": "read"}))
    )
}

/// Opens an initialized session on `/mcp` with `bearer`.
fn open_session(gateway: &Gateway, bearer: &str) -> String {
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"streams-test","version":"1"}}}"#;
    let reply = exchange(
        gateway.authority(),
        Version::Http11,
        "POST",
        "/mcp",
        &[("Authorization", bearer)],
        init,
    );
    assert_eq!(reply.status, 200, "{reply:?}");
    reply
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned()
}

/// A GET stream of `session`, open once its answer's head arrived.
fn get_stream(gateway: &Gateway, bearer: &str, session: &str) -> BufReader<TcpStream> {
    let mut stream = TcpStream::connect(gateway.authority()).expect("connect");
    let head = format!(
        "GET /mcp HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\nAuthorization: {bearer}\r\nMcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-06-18\r\n\r\n",
        gateway.authority()
    );
    stream.write_all(head.as_bytes()).expect("send the head");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut reader = BufReader::new(stream);
    let mut status = String::new();
    reader.read_line(&mut status).expect("the status line");
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    reader
}

#[test]
fn get_streams_held_open_leave_room_for_the_operator_and_other_agents() {
    let gateway = with_fixture(json!({"max_connections": 16}));
    gateway.api_key();
    let bearer = reader(&gateway, "hog");
    // Every place taken by GET streams: four sessions, four streams each.
    let sessions: Vec<String> = (0..4).map(|_| open_session(&gateway, &bearer)).collect();
    let held: Vec<_> = sessions
        .iter()
        .flat_map(|session| (0..4).map(|_| get_stream(&gateway, &bearer, session)))
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    // The operator, and another agent, still get in, and again.
    let other = reader(&gateway, "other");
    for _ in 0..3 {
        let (status, body) = eventually("the API to answer", Duration::from_secs(5), || {
            let (status, body) = gateway.api("GET", "/api/v1/servers", "");
            (status != 503).then_some((status, body))
        });
        assert_eq!(status, 200, "{body}");
        open_session(&gateway, &other);
    }
    drop(held);
}

/// A session whose client asked for the 2026-07-28 revision in its `initialize` is still a
/// session: `subscriptions/listen`, a stream of that revision, is not served in it (it would keep
/// the session from ever being idle, with no connection held), and the session idles out.
#[test]
fn a_session_serves_no_listen_and_idles_out() {
    let gateway = with_fixture(json!({"session_idle_timeout": "2s"}));
    let bearer = reader(&gateway, "listener");
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"streams-test","version":"1"}}}"#;
    let auth = ("Authorization", bearer.as_str());
    let reply = exchange(
        gateway.authority(),
        Version::Http11,
        "POST",
        "/mcp",
        &[auth],
        init,
    );
    let session = reply
        .header("mcp-session-id")
        .expect("a session")
        .to_owned();
    let listen = json!({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": true}}})
    .to_string();
    let in_session = [
        auth,
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let refused = exchange(
        gateway.authority(),
        Version::Http11,
        "POST",
        "/mcp",
        &in_session,
        &listen,
    );
    assert!(refused.body.contains("-32601"), "{refused:?}");
    // The session was idle all along (a ping would refresh it): gone after its idle timeout.
    std::thread::sleep(Duration::from_secs(6));
    let ping = r#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#;
    let authority = gateway.authority();
    let after = exchange(
        authority,
        Version::Http11,
        "POST",
        "/mcp",
        &in_session,
        ping,
    );
    assert_eq!(after.status, 404, "{after:?}");
}

/// Resource subscriptions are bounded: at most 256 in a session (each the first for its URI is a
/// request upstream), each URI at most 8 KiB.
#[test]
fn a_session_holds_a_bounded_number_of_subscriptions() {
    let gateway = Gateway::start(json!({
        "mcpServers": {"conf": {"command": crate::harness::tools().conformance_fixture}}
    }));
    gateway.wait_ready();
    let bearer = reader(&gateway, "subscriber");
    let session = open_session(&gateway, &bearer);
    let in_session = [
        ("Authorization", bearer.as_str()),
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    let subscribe = |id: usize, uri: &str| {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "resources/subscribe",
            "params": {"uri": uri}})
        .to_string();
        let authority = gateway.authority();
        exchange(
            authority,
            Version::Http11,
            "POST",
            "/mcp",
            &in_session,
            &body,
        )
        .body
    };
    for n in 0..256 {
        let answer = subscribe(n, &format!("mcplex://conf/test://template/{n}/data"));
        assert!(answer.contains("\"result\""), "{n}: {answer}");
    }
    let answer = subscribe(256, "mcplex://conf/test://template/256/data");
    assert!(
        answer.contains("too many resource subscriptions"),
        "{answer}"
    );
    let long = format!("mcplex://conf/test://template/{}/data", "x".repeat(9000));
    assert!(subscribe(257, &long).contains("at most 8192 bytes"));
}

/// A body of more JSON values than any MCP request holds is refused before it is parsed: a 4 MiB
/// body of small objects took 700 MB once parsed and decoded, and held the runtime for seconds.
#[test]
fn a_body_of_too_many_values_is_refused_unread() {
    let gateway = with_fixture(json!({}));
    let bearer = reader(&gateway, "flooder");
    let session = open_session(&gateway, &bearer);
    let headers = [
        ("Authorization", bearer.as_str()),
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    let objects = vec![json!({"a": 0}); 520_000];
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": objects}});
    let authority = gateway.authority();
    let refused = exchange(
        authority,
        Version::Http11,
        "POST",
        "/mcp",
        &headers,
        &body.to_string(),
    );
    assert_eq!(refused.status, 413, "{refused:?}");
    assert!(
        refused.body.contains("more than 100000 JSON values"),
        "{refused:?}"
    );
    let vm_hwm_kib = crate::hardening_code_limits::status_number(gateway.pid(), "VmHWM")
        .expect("the gateway's VmHWM");
    assert!(
        vm_hwm_kib < 400 * 1024,
        "the gateway peaked at {vm_hwm_kib} KiB"
    );
    // A request of ordinary size still goes through.
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let answer = exchange(authority, Version::Http11, "POST", "/mcp", &headers, ping);
    assert_eq!(answer.status, 200, "{answer:?}");
}

/// A revoked token's sessions end, with their GET streams, within about a second: its requests
/// were refused already, but a stream held open would go on carrying notifications to it.
#[test]
fn a_revoked_tokens_sessions_and_streams_end() {
    let gateway = with_fixture(json!({}));
    let bearer = reader(&gateway, "leaver");
    let session = open_session(&gateway, &bearer);
    let mut stream = get_stream(&gateway, &bearer, &session);
    let (status, body) = gateway.api("DELETE", "/api/v1/tokens/leaver", "");
    assert_eq!(status, 200, "{body}");
    let started = std::time::Instant::now();
    let mut line = String::new();
    loop {
        line.clear();
        // The stream's end: the last (empty) chunk of its chunked body, or the connection's.
        match stream.read_line(&mut line) {
            Ok(0) => break,
            Ok(_) if line == "0\r\n" => break,
            Ok(_) => {}
            Err(e) => panic!("the stream did not end: {e}\n{}", gateway.log()),
        }
    }
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
}
