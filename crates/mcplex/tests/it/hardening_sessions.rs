//! Sessions belong to the credential that opened them, and each credential holds a bounded
//! number (the third adversarial review's second and third defects): another token's request
//! with a session's id (a call, the GET stream, a DELETE) is answered exactly as an unknown
//! session is, and one token cannot take every session of the gateway.

use serde_json::{Value, json};

use crate::harness::{Gateway, fixture_server};
use crate::http::{Reply, Version};

const PROTOCOL: &str = "2025-06-18";

fn send(gateway: &Gateway, method: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    crate::http::exchange(
        gateway.authority(),
        Version::Http11,
        method,
        "/mcp",
        headers,
        body,
    )
}

/// `initialize` with `token`: the reply (its session id in a header when it opened one).
fn initialize(gateway: &Gateway, token: &str) -> Reply {
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL, "capabilities": {},
        "clientInfo": {"name": "sessions", "version": "0"}}});
    let bearer = format!("Bearer {token}");
    send(
        gateway,
        "POST",
        &[("Authorization", &bearer)],
        &initialize.to_string(),
    )
}

fn open(gateway: &Gateway, token: &str) -> String {
    let reply = initialize(gateway, token);
    let session = reply
        .header("mcp-session-id")
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("no session: {} {}", reply.status, reply.body));
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let done = in_session(gateway, token, &session, "POST", &initialized.to_string());
    assert!(done.status == 202 || done.status == 200, "{}", done.body);
    session
}

fn in_session(gateway: &Gateway, token: &str, session: &str, method: &str, body: &str) -> Reply {
    let bearer = format!("Bearer {token}");
    let mut headers = vec![
        ("Authorization", bearer.as_str()),
        ("Mcp-Session-Id", session),
        ("MCP-Protocol-Version", PROTOCOL),
    ];
    if method == "GET" {
        headers.push(("Accept", "text/event-stream"));
    }
    send(gateway, method, &headers, body)
}

fn tools_list() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string()
}

fn reader(gateway: &Gateway, name: &str) -> String {
    gateway.create_token(json!({"name": name, "servers": ["fixture"], "permissions": "read"}))
}

#[test]
fn a_session_answers_only_the_credential_that_opened_it() {
    let gateway =
        Gateway::start(json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}}));
    gateway.wait_ready();
    let (alice, bob) = (reader(&gateway, "alice"), reader(&gateway, "bob"));
    let key = gateway.api_key();
    let session = open(&gateway, &alice);
    let unknown = in_session(&gateway, &bob, "no-such-session", "POST", &tools_list());
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    for (method, body) in [("POST", tools_list()), ("DELETE", String::new())] {
        for stranger in [&bob, &key] {
            let reply = in_session(&gateway, stranger, &session, method, &body);
            assert_eq!(
                (reply.status, reply.body.as_str()),
                (unknown.status, unknown.body.as_str()),
                "{method} with another credential"
            );
        }
    }
    // Her GET stream too (the stranger's answer is the unknown session's, not a stream).
    let stream = in_session(&gateway, &bob, &session, "GET", "");
    assert_eq!(
        (stream.status, stream.body.as_str()),
        (404, unknown.body.as_str())
    );
    // Nothing of hers was touched: her session still answers her.
    let listed = in_session(&gateway, &alice, &session, "POST", &tools_list());
    assert_eq!(listed.status, 200, "{}", listed.body);
    let ended = in_session(&gateway, &alice, &session, "DELETE", "");
    assert_eq!(ended.status, 200, "{}", ended.body);
}

#[test]
fn one_credential_cannot_take_every_session() {
    let gateway = Gateway::start(json!({
        "max_sessions_per_caller": 3,
        "mcpServers": {"fixture": fixture_server("fixture", &[])}
    }));
    gateway.wait_ready();
    let (alice, bob) = (reader(&gateway, "alice"), reader(&gateway, "bob"));
    let held: Vec<String> = (0..3).map(|_| open(&gateway, &alice)).collect();
    let refused = initialize(&gateway, &alice);
    assert_eq!(refused.status, 429, "{}", refused.body);
    let error: Value = serde_json::from_str(&refused.body).expect("a JSON-RPC error");
    assert!(
        error["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("max_sessions_per_caller 3")),
        "{error}"
    );
    assert!(refused.header("retry-after").is_some());
    // Others are not denied by her sessions, the operator neither.
    open(&gateway, &bob);
    open(&gateway, &gateway.api_key());
    // Ending one of hers gives her a place back.
    let ended = in_session(&gateway, &alice, &held[0], "DELETE", "");
    assert_eq!(ended.status, 200, "{}", ended.body);
    open(&gateway, &alice);
}
