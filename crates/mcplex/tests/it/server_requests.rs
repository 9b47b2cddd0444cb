//! A request the gateway makes of a client for one of its calls (here an upstream's
//! `sampling/createMessage`) goes out on that call's own stream (SEP-2260), so a client that
//! never opened the GET stream is still asked, and its answer, POSTed in the session, lets the
//! call finish on the same stream.

use serde_json::json;

use crate::harness::{Gateway, tools};
use crate::request_path::{V2025, post};
use crate::request_path_sessions::Streaming;

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
