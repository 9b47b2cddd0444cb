//! The front's unit tests: which messages are refused before rmcp sees them, and how.
use super::*;
use crate::in_flight::id_key;
use proptest::prelude::*;

fn any_id() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        "[0-9a-z-]{0,8}".prop_map(Value::from),
        (0u32..1000).prop_map(|n| Value::from(n.to_string())),
        (0u32..1000).prop_map(Value::from),
    ]
}

proptest! {
    /// An id is held once per session at a time, and only an id equal as JSON (same type,
    /// same value) collides; another session never collides.
    #[test]
    fn ids_collide_exactly_when_equal_in_the_same_session(a in any_id(), b in any_id()) {
        let ids = Arc::new(InFlightIds::default());
        let first = ids.hold("s1", &a, None);
        prop_assert!(first.is_some());
        let second = ids.hold("s1", &b, None);
        prop_assert_eq!(second.is_none(), a == b);
        prop_assert!(ids.hold("s2", &a, None).is_some());
        drop(second);
        drop(first);
        prop_assert!(ids.hold("s1", &a, None).is_some(), "released when the answer ends");
    }

    /// A number and a string that read alike are different ids.
    #[test]
    fn number_and_string_ids_differ(n in any::<i64>()) {
        prop_assert_ne!(id_key(&Value::from(n)), id_key(&Value::from(n.to_string())));
    }
}

fn code_of(response: Option<Response>) -> Option<StatusCode> {
    response.map(|r| r.status())
}

#[test]
fn wrongly_shaped_params_of_a_schema_method_are_invalid_params() {
    let wrong = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": 5}});
    assert_eq!(code_of(not_a_message(&wrong)), Some(StatusCode::OK));
    let wrong = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": "x"});
    assert_eq!(code_of(not_a_message(&wrong)), Some(StatusCode::OK));
    let positional = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": ["demo__echo", {"x": 1}]});
    assert_eq!(code_of(not_a_message(&positional)), Some(StatusCode::OK));
    let fine = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "x", "arguments": {}}});
    assert!(not_a_message(&fine).is_none());
    let custom = json!({"jsonrpc": "2.0", "id": 3, "method": "vendor/thing", "params": {"x": 5}});
    assert!(not_a_message(&custom).is_none());
    let notification = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert!(not_a_message(&notification).is_none());
    let junk = json!({"hello": "world"});
    assert_eq!(code_of(not_a_message(&junk)), Some(StatusCode::BAD_REQUEST));
    assert_eq!(
        code_of(not_a_message(&json!([1, 2]))),
        Some(StatusCode::BAD_REQUEST)
    );
}

/// The shortcut for plain tool calls agrees with rmcp's model: whatever it lets through
/// parses as a tools/call request, and anything else still gets the full check.
#[test]
fn plain_tool_calls_are_exactly_what_rmcp_takes_as_tool_calls() {
    let plain = [
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "s__t", "arguments": {"a": [1, {"b": null}]}}}),
        json!({"jsonrpc": "2.0", "id": "x-1", "method": "tools/call", "params": {"name": "t"}}),
        json!({"jsonrpc": "2.0", "id": -3, "method": "tools/call", "params": {"name": "", "arguments": {}}}),
    ];
    for message in plain {
        assert!(plain_tool_call(&message), "{message}");
        let parsed = serde_json::from_value::<ClientJsonRpcMessage>(message.clone());
        assert!(
            matches!(parsed, Ok(JsonRpcMessage::Request(ref r)) if matches!(r.request, ClientRequest::CallToolRequest(_))),
            "{message}: {parsed:?}"
        );
    }
    let not_plain = [
        json!({"jsonrpc": "2.0", "id": 1.5, "method": "tools/call", "params": {"name": "t"}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": 5}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "arguments": "x"}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"arguments": {}}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "_meta": {"progressToken": 1}}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"name": "t"}}),
        json!({"jsonrpc": "1.0", "id": 1, "method": "tools/call", "params": {"name": "t"}}),
        json!({"jsonrpc": "2.0", "id": null, "method": "tools/call", "params": {"name": "t"}}),
        json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "t"}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t"}, "extra": 1}),
    ];
    for message in not_plain {
        assert!(!plain_tool_call(&message), "{message}");
    }
    let wrong = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": 5}});
    assert_eq!(code_of(not_a_message(&wrong)), Some(StatusCode::OK));
}

#[test]
fn notifications_and_answers_are_not_requests() {
    assert!(
        Incoming::of(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).is_none()
    );
    assert!(Incoming::of(&json!({"jsonrpc": "2.0", "id": 1, "result": {}})).is_none());
    assert!(Incoming::of(&json!({"jsonrpc": "2.0", "id": null, "method": "ping"})).is_none());
}
