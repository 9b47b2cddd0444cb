//! The span of each MCP request (`mcplex_trace::request`): opened where a request arrives (the
//! HTTP route, before anything else reads it), carried to its handler in the request's parts
//! (a handler may go on as a task of its own, where no span is current), and
//! made current around the work the handler hands to the gateway, so that the gateway's spans
//! (validation, search, the upstream call, the code run) are its children.
//!
//! A client's trace context is read from the request's `_meta` (`traceparent`, SEP-414) or else
//! its `traceparent` header. Over stdio there is no route in front of the handler: the handler
//! opens the span itself, from `_meta`.

use mcplex_trace::{Request, TraceContext, Transport};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;
use tracing::Span;

/// [`arrived`] for a message read whole: `None` unless it is a request (a method and an id)
/// and spans are exported.
pub(crate) fn arrived_message(parts: &mut http::request::Parts, message: &Value) -> Option<Span> {
    if !mcplex_trace::is_exporting() {
        return None;
    }
    let method = message.get("method")?.as_str()?;
    message.get("id").filter(|id| !id.is_null())?;
    Some(arrived(parts, method, None, Some(message)))
}

/// The span of the request, in its parts' extensions.
#[derive(Clone)]
pub(crate) struct RequestSpan(pub Span);

/// Opens the span of an MCP request that arrived over HTTP at `parts`' path, and puts it in the
/// parts for its handler. `message` is the JSON-RPC request when it was read whole (to find the
/// tool's name and `_meta`); `tool` is given when it was read straight into its parts.
pub(crate) fn arrived(
    parts: &mut http::request::Parts,
    method: &str,
    tool: Option<&str>,
    message: Option<&Value>,
) -> Span {
    // Nothing is recorded: the request's parts are not even looked at.
    if !mcplex_trace::is_exporting() {
        return Span::none();
    }
    // A client's method names the span and its attribute only if the schema has it: any other
    // would make every span as long, and every trace backend's list of operations as long, as
    // the client likes.
    let method = crate::decode::schema_method_or_other(method);
    let params = message.and_then(|message| message.get("params"));
    let tool = tool.or_else(|| {
        (method == "tools/call")
            .then(|| params.and_then(|p| p.get("name")).and_then(Value::as_str))
            .flatten()
    });
    let parent = params
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object)
        .and_then(TraceContext::from_meta)
        .or_else(|| {
            TraceContext::read(|name| parts.headers.get(name).and_then(|v| v.to_str().ok()))
        });
    let caller = parts
        .extensions
        .get::<crate::Caller>()
        .and_then(|caller| caller.token.clone());
    let span = mcplex_trace::request(
        Request {
            route: parts.uri.path(),
            method,
            tool,
            caller: caller.as_deref(),
            transport: Transport::Http,
        },
        parent.as_ref(),
    );
    if !span.is_disabled() {
        parts.extensions.insert(RequestSpan(span.clone()));
    }
    span
}

/// The span to make current around the work of the request in `context` (with
/// `tracing::Instrument`): the one its route opened, or over stdio one opened here (`method`,
/// `tool` name it).
pub(crate) fn span_of(
    context: &RequestContext<RoleServer>,
    method: &str,
    tool: Option<&str>,
) -> Span {
    if let Some(parts) = context.extensions.get::<http::request::Parts>() {
        return match parts.extensions.get::<RequestSpan>() {
            Some(RequestSpan(span)) => span.clone(),
            None => Span::none(),
        };
    }
    let parent = TraceContext::read(|name| context.meta.0.0.get(name).and_then(Value::as_str));
    mcplex_trace::request(
        Request {
            route: "stdio",
            method,
            tool,
            caller: None,
            transport: Transport::Stdio,
        },
        parent.as_ref(),
    )
}
