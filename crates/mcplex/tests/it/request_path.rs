//! What a client meets on an MCP route before its request reaches a tool: the HTTP method, the
//! media types, the protocol-version header against the body, the 2026-07-28 (stateless) checks
//! of `_meta` and the SEP-2243 headers, `server/discover`, and what a stateless notification or
//! answer gets (docs/request-path.md). They were written against rmcp 3.11.0's streamable-HTTP
//! service and passed on it before the gateway's own request path replaced it, so they pin what
//! clients met then: the statuses, JSON-RPC error codes and headers, never the texts. GET, DELETE and the session era
//! are in `request_path_sessions.rs`.
//!
//! The requests are written byte for byte here (`send`): `crate::http` always adds its own
//! `Accept` and `Content-Type`, and these tests are about exactly those headers.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Gateway, fixture_server};
use crate::http::Reply;

pub(crate) const JSON: (&str, &str) = ("Content-Type", "application/json");
pub(crate) const BOTH: (&str, &str) = ("Accept", "application/json, text/event-stream");
pub(crate) const V2025: (&str, &str) = ("MCP-Protocol-Version", "2025-06-18");
pub(crate) const V2026: (&str, &str) = ("MCP-Protocol-Version", "2026-07-28");

type Headers<'a> = &'a [(&'a str, &'a str)];

/// A ready gateway serving the fixture as server `fixture`.
pub(crate) fn gateway() -> Gateway {
    let gateway =
        Gateway::start(json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}}));
    gateway.wait_ready();
    gateway
}

/// One request on its own connection with exactly `headers` (besides `Host`, `Connection:
/// close` and `Content-Length`), read to the end.
pub(crate) fn send(gateway: &Gateway, method: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let mut request = format!(
        "{method} /mcp HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n",
        gateway.authority(),
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    let mut stream = TcpStream::connect(gateway.authority()).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    stream.write_all(request.as_bytes()).expect("send");
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let raw = String::from_utf8_lossy(&raw);
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok());
    Reply {
        status: status.unwrap_or(0),
        head: head.to_owned(),
        body: body.to_owned(),
    }
}

/// A POST of `body` with the headers every client sends plus `extra`.
pub(crate) fn post(gateway: &Gateway, extra: &[(&str, &str)], body: &Value) -> Reply {
    let mut headers = vec![JSON, BOTH];
    headers.extend_from_slice(extra);
    send(gateway, "POST", &headers, &body.to_string())
}

pub(crate) fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "request-path", "version": "0"}}})
}

/// Opens a session-era session (initialize, then `notifications/initialized`): its id.
pub(crate) fn open_session(gateway: &Gateway) -> String {
    let reply = post(gateway, &[], &initialize());
    assert_eq!(reply.status, 200, "{reply:?}");
    let session = reply.header("mcp-session-id").expect("a session id");
    let session = session.to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let done = post(
        gateway,
        &[V2025, ("Mcp-Session-Id", &session)],
        &initialized,
    );
    assert_eq!(done.status, 202, "{done:?}");
    session
}

/// A 2026-07-28 request of `method` with the `_meta` a client sends (`meta` replaces it when
/// given; `Value::Null` leaves it out).
pub(crate) fn request_2026(id: i64, method: &str, mut params: Value, meta: Option<Value>) -> Value {
    let meta = meta.unwrap_or_else(|| {
        json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {}})
    });
    if !meta.is_null() {
        params["_meta"] = meta;
    }
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The JSON-RPC error code of `reply` (a JSON body or an event stream's answer).
pub(crate) fn code(reply: &Reply) -> Option<i64> {
    reply.message()?["error"]["code"].as_i64()
}

/// `reply` is a JSON-RPC error `code` with HTTP `status`, for request `id`.
fn assert_refused(reply: &Reply, status: u16, code: i64, id: Value, what: &str) {
    assert_eq!(reply.status, status, "{what}: {reply:?}");
    assert_eq!(self::code(reply), Some(code), "{what}: {reply:?}");
    assert_eq!(reply.json()["id"], id, "{what}: {reply:?}");
}

fn echo_params() -> Value {
    json!({"name": "fixture__echo", "arguments": {"text": "hi"}})
}

#[test]
fn other_http_methods_are_405_naming_get_post_and_delete() {
    let gateway = gateway();
    for method in ["PUT", "PATCH"] {
        let reply = send(&gateway, method, &[JSON, BOTH], &initialize().to_string());
        assert_eq!(reply.status, 405, "{method}: {reply:?}");
        let allow = reply.header("allow").unwrap_or_default();
        let mut allowed: Vec<&str> = allow.split(',').map(str::trim).collect();
        allowed.sort_unstable();
        assert_eq!(allowed, ["DELETE", "GET", "POST"], "{method}: {reply:?}");
        assert!(reply.header("mcp-session-id").is_none(), "{reply:?}");
    }
}

/// A POST must accept both JSON and event streams (a q of 0 refuses one) and send JSON: 406 and
/// 415, for an `initialize` (which then opens no session), a plain `tools/call` in a session (the
/// fast path's case) and a stateless request alike; the same requests pass with the right types.
#[test]
fn a_post_must_accept_json_and_event_streams_and_send_json() {
    let gateway = gateway();
    let session = open_session(&gateway);
    let in_session = [V2025, ("Mcp-Session-Id", session.as_str())];
    let call = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": echo_params()});
    let stateless = [
        V2026,
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "fixture__echo"),
    ];
    let cases: [(&str, Headers, Value); 3] = [
        ("initialize", &[], initialize()),
        ("session call", &in_session, call),
        (
            "stateless call",
            &stateless,
            request_2026(6, "tools/call", echo_params(), None),
        ),
    ];
    for (what, extra, body) in &cases {
        let refusals = [
            (406, vec![JSON, ("Accept", "application/json")]),
            (406, vec![JSON, ("Accept", "text/event-stream")]),
            (
                406,
                vec![JSON, ("Accept", "application/json, text/event-stream;q=0")],
            ),
            (406, vec![JSON]),
            (415, vec![("Content-Type", "text/plain"), BOTH]),
        ];
        for (status, mut headers) in refusals {
            headers.extend_from_slice(extra);
            let reply = send(&gateway, "POST", &headers, &body.to_string());
            assert_eq!(reply.status, status, "{what} {headers:?}: {reply:?}");
            assert!(reply.header("mcp-session-id").is_none(), "{reply:?}");
        }
        let mut headers = vec![
            ("Content-Type", "application/json; charset=utf-8"),
            ("Accept", "text/event-stream;q=0.5, application/json"),
        ];
        headers.extend_from_slice(extra);
        let reply = send(&gateway, "POST", &headers, &body.to_string());
        assert_eq!(reply.status, 200, "{what}: {reply:?}");
        assert!(reply.json()["result"].is_object(), "{what}: {reply:?}");
    }
}

/// An unknown MCP-Protocol-Version is refused (400) on a session-era request, in a session or
/// opening one; an `initialize` whose header names another version than its params is invalid
/// (400, -32600 with its id) and opens no session.
#[test]
fn the_version_header_must_be_known_and_match_initialize() {
    let gateway = gateway();
    let session = open_session(&gateway);
    let unknown = ("MCP-Protocol-Version", "1999-01-01");
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let reply = post(&gateway, &[unknown, ("Mcp-Session-Id", &session)], &list);
    assert_eq!(reply.status, 400, "{reply:?}");
    let reply = post(&gateway, &[unknown], &initialize());
    assert_eq!(reply.status, 400, "{reply:?}");
    assert!(reply.header("mcp-session-id").is_none(), "{reply:?}");
    let other = ("MCP-Protocol-Version", "2025-03-26");
    let reply = post(&gateway, &[other], &initialize());
    assert_refused(
        &reply,
        400,
        -32600,
        json!(0),
        "header 2025-03-26, params 2025-06-18",
    );
    assert!(reply.header("mcp-session-id").is_none(), "{reply:?}");
    // The same initialize with the header agreeing opens a session; the session still answers.
    let reply = post(&gateway, &[V2025], &initialize());
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(reply.header("mcp-session-id").is_some(), "{reply:?}");
    let reply = post(&gateway, &[V2025, ("Mcp-Session-Id", &session)], &list);
    assert_eq!(reply.status, 200, "{reply:?}");
}

/// A 2026-07-28 request's `_meta` version and header must agree (-32020, HTTP 400), and a 2026
/// header needs the `_meta` keys of that version (-32602, HTTP 400).
#[test]
fn a_2026_request_needs_its_meta_and_header_to_agree() {
    let gateway = gateway();
    let list = request_2026(11, "tools/list", json!({}), None);
    let method = ("Mcp-Method", "tools/list");
    let reply = post(&gateway, &[method], &list);
    assert_refused(
        &reply,
        400,
        -32020,
        json!(11),
        "_meta version without header",
    );
    let older = ("MCP-Protocol-Version", "2025-11-25");
    let reply = post(&gateway, &[older, method], &list);
    assert_refused(
        &reply,
        400,
        -32020,
        json!(11),
        "header 2025-11-25, _meta 2026",
    );
    let discover = request_2026(12, "server/discover", json!({}), None);
    let reply = post(&gateway, &[("Mcp-Method", "server/discover")], &discover);
    assert_refused(&reply, 400, -32020, json!(12), "discover without header");
    let partial_metas = [
        ("no _meta", Value::Null),
        (
            "_meta without protocolVersion",
            json!({"io.modelcontextprotocol/clientCapabilities": {}}),
        ),
        (
            "_meta without clientCapabilities",
            json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"}),
        ),
    ];
    for (what, meta) in partial_metas {
        let body = request_2026(13, "tools/list", json!({}), Some(meta));
        let reply = post(&gateway, &[V2026, method], &body);
        assert_refused(&reply, 400, -32602, json!(13), what);
    }
    // The control: header and `_meta` agreeing are served.
    let reply = post(&gateway, &[V2026, method], &list);
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(reply.json()["result"]["tools"].is_array(), "{reply:?}");
}

/// SEP-2243: a 2026-07-28 request names its method in `Mcp-Method` and a call its tool in
/// `Mcp-Name` (-32020, HTTP 400 when missing or different); a name may come Base64-encoded as
/// `=?base64?…?=`.
#[test]
fn sep_2243_headers_must_name_the_method_and_the_tool() {
    let gateway = gateway();
    let list = request_2026(21, "tools/list", json!({}), None);
    let reply = post(&gateway, &[V2026], &list);
    assert_refused(&reply, 400, -32020, json!(21), "no Mcp-Method");
    let reply = post(&gateway, &[V2026, ("Mcp-Method", "prompts/list")], &list);
    assert_refused(
        &reply,
        400,
        -32020,
        json!(21),
        "Mcp-Method of another method",
    );
    let call = request_2026(22, "tools/call", echo_params(), None);
    let method = ("Mcp-Method", "tools/call");
    let reply = post(&gateway, &[V2026, method], &call);
    assert_refused(&reply, 400, -32020, json!(22), "no Mcp-Name");
    let reply = post(
        &gateway,
        &[V2026, method, ("Mcp-Name", "fixture__add")],
        &call,
    );
    assert_refused(&reply, 400, -32020, json!(22), "Mcp-Name of another tool");
    // "fixture__echo" in Base64, and as it is.
    for name in ["=?base64?Zml4dHVyZV9fZWNobw==?=", "fixture__echo"] {
        let reply = post(&gateway, &[V2026, method, ("Mcp-Name", name)], &call);
        assert_eq!(reply.status, 200, "{name}: {reply:?}");
        let answer = reply.json();
        assert_eq!(answer["id"], 22, "{name}: {reply:?}");
        assert_eq!(
            answer["result"]["structuredContent"],
            json!({"text": "hi"}),
            "{name}: {reply:?}"
        );
    }
}

/// `server/discover` (2026-07-28) is answered, statelessly, with the versions the gateway
/// speaks (2026-07-28 and the session-era ones), its capabilities and who it is.
#[test]
fn server_discover_names_versions_capabilities_and_server() {
    let gateway = gateway();
    let discover = request_2026(31, "server/discover", json!({}), None);
    let reply = post(
        &gateway,
        &[V2026, ("Mcp-Method", "server/discover")],
        &discover,
    );
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(reply.header("mcp-session-id").is_none(), "{reply:?}");
    let answer = reply.json();
    assert_eq!(answer["id"], 31, "{reply:?}");
    let result = &answer["result"];
    let versions = result["supportedVersions"].as_array().expect("versions");
    for version in ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"] {
        assert!(versions.contains(&json!(version)), "{version}: {result}");
    }
    for capability in ["tools", "prompts", "resources", "logging"] {
        assert!(
            result["capabilities"][capability].is_object(),
            "{capability}: {result}"
        );
    }
    assert_eq!(
        result["capabilities"]["tools"]["listChanged"], true,
        "{result}"
    );
    let server = &result["_meta"]["io.modelcontextprotocol/serverInfo"];
    assert_eq!(server["name"], "mcplex", "{result}");
    assert!(result["instructions"].is_string(), "{result}");
    assert!(result["ttlMs"].is_u64(), "{result}");
}

/// Without a session, a notification is accepted (202, empty) and a JSON-RPC answer (a result
/// or an error: there is no request of the server's to answer) is an invalid request (-32600,
/// HTTP 400).
#[test]
fn a_stateless_notification_is_accepted_and_an_answer_refused() {
    let gateway = gateway();
    let cancelled = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                           "params": {"requestId": 5, "reason": "test"}});
    let reply = post(
        &gateway,
        &[V2026, ("Mcp-Method", "notifications/cancelled")],
        &cancelled,
    );
    assert_eq!(reply.status, 202, "{reply:?}");
    assert_eq!(reply.body, "", "{reply:?}");
    let answers = [
        json!({"jsonrpc": "2.0", "id": 5, "result": {}}),
        json!({"jsonrpc": "2.0", "id": 5, "error": {"code": -32601, "message": "no"}}),
    ];
    for answer in answers {
        let reply = post(&gateway, &[V2026], &answer);
        assert_eq!(reply.status, 400, "{answer}: {reply:?}");
        assert_eq!(code(&reply), Some(-32600), "{answer}: {reply:?}");
    }
}
