//! Span names a client cannot choose: a method outside the MCP schema is `_OTHER`.

use serde_json::json;

use crate::http::{Version, exchange};
use crate::traces::{Receiver, VERSION, agent, echo_fleet, named, text};

/// A method outside the MCP schema names no span: a client could otherwise make every span, and
/// the backend's list of operations, as long and as many as it likes.
#[test]
fn a_method_outside_the_schema_is_named_other() {
    let receiver = Receiver::start();
    let (gateway, _web) = echo_fleet(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.url),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
    ]);
    let agent = agent(&gateway, "agent-9");
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let traceparent = format!("00-{trace_id}-00f067aa0ba902b7-01");
    let method = format!("custom/{}", "M".repeat(10_000));
    let body = json!({"jsonrpc": "2.0", "id": 5, "method": method, "params": {}}).to_string();
    let headers = [
        ("Mcp-Session-Id", agent.session.as_str()),
        VERSION,
        ("Authorization", agent.bearer.as_str()),
        ("traceparent", traceparent.as_str()),
    ];
    let authority = gateway.authority();
    exchange(
        authority,
        Version::Http11,
        "POST",
        "/mcp/all",
        &headers,
        &body,
    );
    let spans = receiver.trace(trace_id, 1);
    let request = named(&spans, "_OTHER");
    assert_eq!(text(&request.attributes, "mcp.method.name"), Some("_OTHER"));
    assert!(spans.iter().all(|r| !r.span.name.contains("MMMM")));
}
