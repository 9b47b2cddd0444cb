//! A request the gateway makes of a client for one of its calls (here an upstream's
//! `sampling/createMessage`) goes out on that call's own stream (SEP-2260), so a client that
//! never opened the GET stream is still asked, and its answer, POSTed in the session, lets the
//! call finish on the same stream.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{Gateway, tools};
use crate::request_path::{V2025, post};
use crate::request_path_sessions::Streaming;

/// A gateway serving the conformance fixture on stdio, and a session of a client that declared
/// sampling (its id).
fn sampling_client() -> (Gateway, String) {
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
    (gateway, session)
}

/// A call of the fixture's sampling tool, as request `id`.
fn sampling_call(id: u64, prompt: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "conf__test_sampling", "arguments": {"prompt": prompt}}})
}

/// The client's answer to sampling request `asked`: "pong".
fn pong(asked: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": asked["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "pong"}, "model": "test"}})
}

/// Waits for the sampling request on `stream`, answers it in `session`, and waits for the call
/// to finish with the answer on the same stream.
fn answer_sampling_on(gateway: &Gateway, session: &str, stream: &mut Streaming) {
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
    let in_session = [V2025, ("Mcp-Session-Id", session)];
    assert_eq!(post(gateway, &in_session, &pong(&asked)).status, 202);
    assert!(
        stream.read_until("LLM response: pong"),
        "the call finishes on the same stream: {:?}",
        stream.text
    );
}

#[test]
fn a_sampling_request_for_a_call_goes_out_on_the_calls_own_stream() {
    let (gateway, session) = sampling_client();
    // No GET stream is ever opened.
    let mut stream = Streaming::post(&gateway, &session, &sampling_call(7, "ping"));
    answer_sampling_on(&gateway, &session, &mut stream);
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

/// Two calls of one session in flight to one stdio server, which cannot say which call its
/// sampling requests are for: both reach the session's client (on one of its calls' streams),
/// and both calls finish. (Calls of two clients would be refused rather than guessed:
/// `mcplex-upstream`'s routing tests.)
#[test]
fn a_sessions_parallel_calls_to_a_stdio_server_both_get_their_sampling_answered() {
    let (gateway, session) = sampling_client();
    let in_session = [V2025, ("Mcp-Session-Id", session.as_str())];
    let mut streams = [
        Streaming::post(&gateway, &session, &sampling_call(7, "ping 7")),
        Streaming::post(&gateway, &session, &sampling_call(8, "ping 8")),
    ];
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut answered_requests = HashSet::new();
    // A call answered before it streamed anything is answered with plain JSON.
    let plain = |stream: &Streaming| -> Option<Value> {
        let (_, body) = stream.text.split_once("\r\n\r\n")?;
        serde_json::from_str(body).ok()
    };
    let finished = |streams: &[Streaming]| -> HashSet<u64> {
        streams
            .iter()
            .flat_map(|stream| stream.messages().into_iter().chain(plain(stream)))
            .filter(|m| m.get("result").is_some())
            .filter_map(|m| m["id"].as_u64())
            .collect()
    };
    while finished(&streams) != HashSet::from([7, 8]) {
        assert!(
            Instant::now() < deadline,
            "both calls finish: {:?} {:?}",
            streams[0].text,
            streams[1].text
        );
        for stream in &mut streams {
            stream.read_for(Duration::from_millis(200));
        }
        let asked: Vec<Value> = streams
            .iter()
            .flat_map(Streaming::messages)
            .filter(|m| m["method"] == "sampling/createMessage")
            .collect();
        for request in asked {
            if answered_requests.insert(request["id"].to_string()) {
                assert_eq!(post(&gateway, &in_session, &pong(&request)).status, 202);
            }
        }
    }
    assert_eq!(answered_requests.len(), 2, "one sampling request a call");
}

/// A session's own request beside its tool call (here a completion, which a client sends while
/// its user types, held open by the fixture) is the same client's: the tool call's sampling
/// request, which a stdio server cannot tie to its call, still reaches that client.
#[test]
fn a_sessions_completion_beside_its_tool_call_leaves_the_calls_sampling_to_it() {
    let (gateway, session) = sampling_client();
    let complete = json!({"jsonrpc": "2.0", "id": 5, "method": "completion/complete", "params": {
        "ref": {"type": "ref/prompt", "name": "conf__test_prompt_with_arguments"},
        "argument": {"name": "arg1", "value": "slow"}}});
    let mut completion = Streaming::post(&gateway, &session, &complete);
    // In flight upstream well before the call's sampling request (it takes 1.5 s).
    std::thread::sleep(Duration::from_millis(300));
    let mut stream = Streaming::post(&gateway, &session, &sampling_call(7, "ping"));
    answer_sampling_on(&gateway, &session, &mut stream);
    assert!(
        completion.read_until("\"completion\""),
        "the completion is answered too: {:?}",
        completion.text
    );
}
