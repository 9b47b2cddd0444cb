//! Reading a body: the plain call's shortcut agrees with the general reading, and what is
//! refused is refused with the right code.
use super::*;
use axum::http::HeaderValue;

fn code_of(message: Value) -> Option<StatusCode> {
    super::message(&message).err().map(|r| r.status())
}

#[test]
fn wrongly_shaped_params_of_a_schema_method_are_invalid_params() {
    let wrong = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": 5}});
    assert_eq!(code_of(wrong), Some(StatusCode::OK));
    let wrong = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": "x"});
    assert_eq!(code_of(wrong), Some(StatusCode::OK));
    let positional = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": ["demo__echo", {"x": 1}]});
    assert_eq!(code_of(positional), Some(StatusCode::OK));
    let fine = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "x", "arguments": {}}});
    assert_eq!(code_of(fine), None);
    let custom = json!({"jsonrpc": "2.0", "id": 3, "method": "vendor/thing", "params": {"x": 5}});
    assert_eq!(code_of(custom), None);
    let notification = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(code_of(notification), None);
    assert_eq!(
        code_of(json!({"hello": "world"})),
        Some(StatusCode::BAD_REQUEST)
    );
    assert_eq!(code_of(json!([1, 2])), Some(StatusCode::BAD_REQUEST));
}

fn headers(pairs: &[(&'static str, &'static str)]) -> axum::http::HeaderMap {
    let mut headers = axum::http::HeaderMap::new();
    for (name, value) in pairs {
        headers.append(*name, HeaderValue::from_static(value));
    }
    headers
}

/// The shortcut's promise: a plain call whose headers let it skip the era checks is one those
/// checks take as a session-era message; other headers go the whole way.
#[test]
fn headers_that_let_a_plain_call_skip_the_checks_are_ones_the_checks_take() {
    let version = "mcp-protocol-version";
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t"}});
    let cases: [(&[(&'static str, &'static str)], bool); 5] = [
        (&[], true),
        (&[(version, "2025-06-18")], true),
        (&[(version, "2026-07-28")], false),
        (&[(version, "2025-13-01")], false),
        (&[(version, "zzz")], false),
    ];
    for (pairs, skips) in cases {
        let headers = headers(pairs);
        assert_eq!(
            crate::wire::plain_session_headers(&headers),
            skips,
            "{pairs:?}"
        );
        if skips {
            let classified = crate::wire::classify_post(&headers, &call);
            assert!(classified.is_ok_and(|c| !c.era.is_stateless()), "{pairs:?}");
        }
    }
}

#[test]
fn a_plain_call_is_read_into_the_parts_the_general_reading_finds_and_nothing_else_is() {
    let read = [
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a__b","arguments":{"x":[1,{"y":null}]}}}"#,
        r#"{"params":{"arguments":{},"name":"t"},"method":"tools/call","id":"s\"1","jsonrpc":"2.0"}"#,
        r#"{"jsonrpc":"2.0","id":-9223372036854775808,"method":"tools/call","params":{"name":"t"}}"#,
    ];
    // Not plain, or plain but left to the general reading (a duplicate member, an escape).
    let not_read = [
        r#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"tools/call","params":{"name":"t"}}"#,
        r#"{"jsonrpc":"2.0","id":1.0,"method":"tools/call","params":{"name":"t"}}"#,
        r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"t"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"t"}}"#,
        r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"t"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":null}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":{}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"},"x":1}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
        r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"t"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"t"}}"#,
    ];
    let cases = read.iter().map(|body| (*body, true));
    let cases = cases.chain(not_read.iter().map(|body| (*body, false)));
    for (body, read) in cases {
        let parsed = PlainCall::read(body.as_bytes());
        assert_eq!(parsed.is_some(), read, "{body}");
        let Some(parsed) = parsed else { continue };
        let value: Value = serde_json::from_str(body).expect("json");
        let general = super::message(&value).expect("a message");
        let JsonRpcMessage::Request(general) = general else {
            panic!("{body}: not a request");
        };
        let ClientRequest::CallToolRequest(call) = general.request else {
            panic!("{body}: not a tool call");
        };
        assert_eq!(
            (parsed.id, parsed.params),
            (general.id, call.params),
            "{body}"
        );
    }
}
