//! A request the gateway makes of a client for one of its calls (here an upstream's
//! `sampling/createMessage`) goes out on that call's own stream (SEP-2260), so a client that
//! never opened the GET stream is still asked, and its answer, POSTed in the session, lets the
//! call finish on the same stream.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Gateway, tools};
use crate::request_path::{V2025, post};
use crate::request_path_sessions::read_until;

/// A POST whose answer is read as it arrives.
struct Streaming {
    connection: TcpStream,
    text: String,
}

impl Streaming {
    fn post(gateway: &Gateway, session: &str, body: &Value) -> Streaming {
        let body = body.to_string();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\nMcp-Session-Id: {session}\r\nContent-Length: {}\r\n\r\n{body}",
            gateway.authority(),
            body.len()
        );
        let mut connection = TcpStream::connect(gateway.authority()).expect("connect");
        connection.write_all(request.as_bytes()).expect("send");
        Streaming {
            connection,
            text: String::new(),
        }
    }

    /// Reads until the text holds `needle` (true) or 20 s pass or the answer ends (false).
    fn read_until(&mut self, needle: &str) -> bool {
        read_until(
            &mut self.connection,
            &mut self.text,
            needle,
            Duration::from_secs(20),
        )
    }

    /// The JSON-RPC messages of the events read so far.
    fn messages(&self) -> Vec<Value> {
        self.text
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .filter_map(|data| serde_json::from_str(data).ok())
            .collect()
    }
}

#[test]
fn a_sampling_request_for_a_call_goes_out_on_the_calls_own_stream() {
    let gateway = Gateway::start(json!({"mcpServers": {
        "conf": {"command": tools().conformance_fixture, "args": []}
    }}));
    gateway.wait_ready();
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {"sampling": {}},
        "clientInfo": {"name": "server-requests", "version": "0"}}});
    let reply = post(&gateway, &[], &initialize);
    assert_eq!(reply.status, 200, "{reply:?}");
    let session = reply
        .header("mcp-session-id")
        .expect("a session")
        .to_owned();
    let in_session = [V2025, ("Mcp-Session-Id", session.as_str())];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(&gateway, &in_session, &initialized).status, 202);
    // No GET stream is ever opened.
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "conf__test_sampling", "arguments": {"prompt": "ping"}}});
    let mut stream = Streaming::post(&gateway, &session, &call);
    assert!(
        stream.read_until("sampling/createMessage"),
        "the call's stream asks the client: {:?}",
        stream.text
    );
    let asked = stream
        .messages()
        .into_iter()
        .find(|m| m["method"] == "sampling/createMessage")
        .expect("the request");
    let answer = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "pong"}, "model": "test"}});
    assert_eq!(post(&gateway, &in_session, &answer).status, 202);
    assert!(
        stream.read_until("LLM response: pong"),
        "the call finishes on the same stream: {:?}",
        stream.text
    );
    let answered = stream
        .messages()
        .into_iter()
        .find(|m| m["id"] == 7)
        .expect("the call's answer");
    assert_eq!(
        answered["result"]["content"][0]["text"], "LLM response: pong",
        "{answered}"
    );
}
