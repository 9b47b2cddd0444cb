//! Traces: the spans the gateway opens for OpenTelemetry, and the W3C trace context it reads from
//! clients and passes on to upstreams.
//!
//! Owns: the span vocabulary (one constructor per kind of span, with its name and attributes:
//! the MCP semantic conventions' `mcp.method.name`, `gen_ai.tool.name`, `network.transport`, and
//! ours under `mcplex.`), reading a client's `traceparent` / `tracestate` into a span's parent,
//! and writing the current span's context for an upstream. Spans are `tracing` spans of the
//! target [`TARGET`]; the binary's OpenTelemetry layer takes them (and nothing else), and the
//! log output never shows them. With no exporter installed they are disabled callsites: opening
//! one costs a relaxed load, and [`outgoing`] returns at once.
//! Must not: know an argument value, a token, a header other than the trace context's, or a
//! session id: nothing that a trace backend must not store.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing::Span;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The `tracing` target of every span here: the OpenTelemetry layer's filter takes exactly it.
pub const TARGET: &str = "mcplex::otel";

/// The W3C header (and `_meta` key) that names the trace and the parent span.
pub const TRACEPARENT: &str = "traceparent";
/// The W3C header (and `_meta` key) with vendors' trace state.
pub const TRACESTATE: &str = "tracestate";

static EXPORTING: AtomicBool = AtomicBool::new(false);

/// Called once by whoever installs the exporter: from then on trace context is passed on.
pub fn exporting() {
    EXPORTING.store(true, Ordering::Relaxed);
}

/// Whether spans are exported: a caller may skip preparing a span's attributes when not.
pub fn is_exporting() -> bool {
    EXPORTING.load(Ordering::Relaxed)
}

/// The longest text a span attribute holds: a tool name is what a client sent, and a span is
/// stored and shipped by the trace backend.
const MAX_ATTRIBUTE_CHARS: usize = 128;

/// At most [`MAX_ATTRIBUTE_CHARS`] characters of `text`, cut at a character boundary.
fn capped(text: &str) -> &str {
    match text.char_indices().nth(MAX_ATTRIBUTE_CHARS) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// A W3C trace context as text: what a client sent, or what goes to an upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    pub traceparent: String,
    pub tracestate: Option<String>,
}

/// How a request reached the gateway, or how the gateway reaches an upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Streamable HTTP or SSE.
    Http,
    /// A child process's standard input and output.
    Stdio,
}

impl Transport {
    /// The `network.transport` value of the semantic conventions.
    fn as_str(self) -> &'static str {
        match self {
            Transport::Http => "tcp",
            Transport::Stdio => "pipe",
        }
    }
}

/// What a span of one MCP request is opened with.
pub struct Request<'a> {
    /// The route (`/mcp`, `/mcp/all`, `stdio`).
    pub route: &'a str,
    /// The JSON-RPC method (`tools/call`).
    pub method: &'a str,
    /// The tool a `tools/call` names, as the client named it.
    pub tool: Option<&'a str>,
    /// The agent token's name (never the token), or the OAuth subject.
    pub caller: Option<&'a str>,
    pub transport: Transport,
}

/// The span of one MCP request the gateway serves (kind server), named as the MCP semantic
/// conventions name it (`tools/call weather`). `parent` is the trace context the client sent,
/// in `_meta` or the HTTP headers; without one the span starts a trace.
pub fn request(request: Request<'_>, parent: Option<&TraceContext>) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        "mcp.request",
        otel.name = %SpanName(request.method, request.tool),
        otel.kind = "server",
        otel.status_code = Empty,
        "mcp.method.name" = capped(request.method),
        "gen_ai.tool.name" = request.tool.map(capped),
        "gen_ai.operation.name" = request.tool.map(|_| "execute_tool"),
        "network.transport" = request.transport.as_str(),
        "mcplex.route" = capped(request.route),
        "mcplex.caller" = request.caller,
        "error.type" = Empty,
        "http.response.status_code" = Empty,
    );
    if let Some(parent) = parent {
        adopt(&span, parent);
    }
    span
}

/// The span of the gateway's part of one request to an upstream (a tool call, `prompts/get`,
/// ...): resolving it, validating it, admitting it, and the upstream call. `tool` is the name as
/// the caller sent it.
pub fn call(method: &str, tool: Option<&str>) -> Span {
    tracing::info_span!(
        target: TARGET,
        "mcplex.call",
        otel.status_code = Empty,
        "mcp.method.name" = method,
        "gen_ai.tool.name" = tool.map(capped),
        "mcplex.server" = Empty,
        "mcplex.request_id" = Empty,
        "mcplex.outcome" = Empty,
        "error.type" = Empty,
    )
}

/// A span's name as the MCP semantic conventions give it: the method, then the tool it is
/// about. Written only when the span is recorded.
struct SpanName<'a>(&'a str, Option<&'a str>);

impl std::fmt::Display for SpanName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.1 {
            Some(tool) => write!(f, "{} {}", capped(self.0), capped(tool)),
            None => f.write_str(capped(self.0)),
        }
    }
}

/// The span of one request to an upstream (kind client): the call itself, as the upstream
/// sees it. None outside a client's request.
pub fn upstream(server: &str, method: &str, tool: Option<&str>, transport: Transport) -> Span {
    // A request no client's request led to (the handshake and listings of a connection, a
    // listing after `list_changed`) would be a trace of its own: background noise.
    if !is_exporting() || Span::current().is_none() {
        return Span::none();
    }
    tracing::info_span!(
        target: TARGET,
        "mcp.upstream",
        otel.name = %SpanName(method, tool),
        otel.kind = "client",
        otel.status_code = Empty,
        "mcp.method.name" = method,
        "gen_ai.tool.name" = tool.map(capped),
        "network.transport" = transport.as_str(),
        "mcplex.server" = server,
        "mcplex.outcome" = Empty,
        "error.type" = Empty,
    )
}

/// The span of checking a call's arguments against the tool's stored schema.
pub fn validation(server: &str, tool: &str) -> Span {
    tracing::info_span!(
        target: TARGET,
        "mcplex.validate",
        "mcplex.server" = server,
        "gen_ai.tool.name" = capped(tool),
        "mcplex.valid" = Empty,
    )
}

/// The span of one catalog search (`tool_search`, `retrieve_tools`, a suggestion).
pub fn search(ranking: &str) -> Span {
    tracing::info_span!(
        target: TARGET,
        "mcplex.search",
        "mcplex.search.ranking" = ranking,
        "mcplex.search.matches" = Empty,
        "mcplex.search.hybrid" = Empty,
    )
}

/// The span of one `code_execution` run in the sandbox.
pub fn code_run() -> Span {
    tracing::info_span!(
        target: TARGET,
        "mcplex.code.run",
        "mcplex.outcome" = Empty,
        "mcplex.code.calls" = Empty,
    )
}

/// Records on a [`call`] span how it ended: the server the request was resolved to, the request
/// id the audit log and the upstream's logs know it by, and `outcome`, `ok` or a failure kind
/// (`invalid_arguments`, `timeout`, ...), which also marks the span's status an error.
pub fn finished(span: &Span, server: Option<&str>, request_id: &str, outcome: &str) {
    if span.is_disabled() {
        return;
    }
    if let Some(server) = server {
        span.record("mcplex.server", server);
    }
    span.record("mcplex.request_id", request_id);
    ended(span, outcome);
}

/// Records the HTTP status of a request's answer on its span; a server error (5xx) marks the
/// span's status an error.
pub fn answered(span: &Span, status: u16) {
    span.record("http.response.status_code", status);
    if status >= 500 {
        span.record("otel.status_code", "error");
        span.record("error.type", status.to_string());
    }
}

/// Records `outcome` on `span` (see [`finished`]).
pub fn ended(span: &Span, outcome: &str) {
    span.record("mcplex.outcome", outcome);
    // Success leaves the status unset, as the specification asks of instrumentation.
    if outcome != "ok" {
        span.record("otel.status_code", "error");
        span.record("error.type", outcome);
    }
}

/// Makes `parent` (a client's W3C trace context) the parent of `span`. A malformed context is
/// ignored: the span then starts a trace of its own.
pub fn adopt(span: &Span, parent: &TraceContext) {
    if !is_exporting() {
        return;
    }
    let mut carrier = HashMap::with_capacity(2);
    carrier.insert(TRACEPARENT.to_owned(), parent.traceparent.clone());
    if let Some(state) = &parent.tracestate {
        carrier.insert(TRACESTATE.to_owned(), state.clone());
    }
    let context = TraceContextPropagator::new().extract(&carrier);
    if context.span().span_context().is_valid() {
        let _ = span.set_parent(context);
    }
}

/// The trace context of the current span, to pass on to an upstream (the `traceparent`
/// header, or `_meta` for a stdio server that wants it); `None` when nothing is exported or no
/// span is sampled.
pub fn outgoing() -> Option<TraceContext> {
    if !is_exporting() {
        return None;
    }
    let context = Span::current().context();
    if !context.span().span_context().is_valid() {
        return None;
    }
    let mut carrier = HashMap::with_capacity(2);
    TraceContextPropagator::new().inject_context(&context, &mut carrier);
    Some(TraceContext {
        traceparent: carrier.remove(TRACEPARENT)?,
        tracestate: carrier.remove(TRACESTATE).filter(|state| !state.is_empty()),
    })
}

impl TraceContext {
    /// The context in a request's `_meta` (`traceparent`, `tracestate`), as the MCP proposal for
    /// trace context puts it there.
    pub fn from_meta(meta: &serde_json::Map<String, serde_json::Value>) -> Option<TraceContext> {
        TraceContext::read(|key| meta.get(key).and_then(serde_json::Value::as_str))
    }

    /// The context in `traceparent` / `tracestate` as `get` finds them (HTTP headers, `_meta`).
    pub fn read<'a>(get: impl Fn(&str) -> Option<&'a str>) -> Option<TraceContext> {
        if !is_exporting() {
            return None;
        }
        Some(TraceContext {
            traceparent: get(TRACEPARENT)?.to_owned(),
            tracestate: get(TRACESTATE).map(str::to_owned),
        })
    }
}

#[cfg(test)]
mod tests {
    use opentelemetry::trace::TracerProvider;
    use opentelemetry_sdk::trace::SdkTracerProvider;
    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    /// Spans of `TARGET` recorded by an SDK tracer (nothing exported), as the binary sets it up.
    fn recording() -> tracing::subscriber::DefaultGuard {
        let provider = SdkTracerProvider::builder().build();
        let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("test"));
        exporting();
        tracing::subscriber::set_default(tracing_subscriber::registry().with(layer))
    }

    const CLIENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    fn parts(traceparent: &str) -> (&str, &str) {
        let mut parts = traceparent.split('-').skip(1);
        (
            parts.next().unwrap_or_default(),
            parts.next().unwrap_or_default(),
        )
    }

    #[test]
    fn a_clients_context_is_adopted_and_passed_on_with_our_span_as_the_parent() {
        let _recording = recording();
        let parent = TraceContext {
            traceparent: CLIENT.to_owned(),
            tracestate: Some("vendor=1".to_owned()),
        };
        let span = request(
            Request {
                route: "/mcp",
                method: "tools/call",
                tool: Some("weather"),
                caller: None,
                transport: Transport::Http,
            },
            Some(&parent),
        );
        let upstream = span.in_scope(|| upstream("srv", "tools/call", Some("w"), Transport::Stdio));
        let passed = upstream.in_scope(outgoing).expect("a context to pass on");
        let (trace, span_id) = parts(&passed.traceparent);
        assert_eq!(trace, parts(CLIENT).0, "the client's trace");
        assert_ne!(span_id, parts(CLIENT).1, "our span, not the client's");
        assert_eq!(passed.tracestate.as_deref(), Some("vendor=1"));
    }

    #[test]
    fn a_malformed_context_starts_a_trace_of_its_own() {
        let _recording = recording();
        let parent = TraceContext {
            traceparent: "00-not-a-trace-01".to_owned(),
            tracestate: None,
        };
        let span = request(
            Request {
                route: "stdio",
                method: "prompts/get",
                tool: None,
                caller: None,
                transport: Transport::Stdio,
            },
            Some(&parent),
        );
        let passed = span.in_scope(outgoing).expect("a context of our own");
        assert_eq!(passed.traceparent.len(), CLIENT.len());
        assert!(!passed.traceparent.contains("not-a-trace"));
    }

    #[test]
    fn the_context_is_read_from_meta_and_from_headers_alike() {
        exporting();
        let meta = serde_json::json!({"traceparent": CLIENT, "tracestate": "a=b", "other": 1});
        let from_meta = meta.as_object().and_then(TraceContext::from_meta);
        let headers = [("traceparent", CLIENT), ("tracestate", "a=b")];
        let from_headers = TraceContext::read(|name| {
            headers
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| *value)
        });
        assert_eq!(from_meta, from_headers);
        assert_eq!(from_meta.map(|c| c.traceparent), Some(CLIENT.to_owned()));
    }
}

#[cfg(test)]
mod capped_tests {
    #[test]
    fn an_attribute_is_cut_at_a_character_boundary() {
        let long = "é".repeat(1000);
        assert_eq!(
            super::capped(&long).chars().count(),
            super::MAX_ATTRIBUTE_CHARS
        );
        assert_eq!(super::capped("weather"), "weather");
    }
}
