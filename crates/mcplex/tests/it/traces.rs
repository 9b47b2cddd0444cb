//! OpenTelemetry traces, against an OTLP receiver built on the official protocol definitions
//! (`opentelemetry-proto`): the span tree of each MCP request (request → call → validation and
//! upstream call), its attributes (never an argument value or a secret), the client's
//! `traceparent` (header or `_meta`) adopted as the parent, and the context passed on to an HTTP
//! upstream (header) and a stdio upstream that asks for it (`_meta`); and a collector that never
//! answers holding no call up.

use std::collections::HashMap;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message;
use serde_json::{Value, json};

use crate::harness::{Background, Gateway, eventually, fixture_server, http_fixture};
use crate::http::{Reply, Version, exchange};

/// A span as received, with the resource's `service.name`.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    pub(crate) span: Span,
    service: Option<String>,
}

/// An OTLP/HTTP receiver on a free loopback port: every span it is sent, in arrival order.
pub(crate) struct Receiver {
    pub(crate) url: String,
    spans: Arc<Mutex<Vec<Received>>>,
    _runtime: tokio::runtime::Runtime,
}

impl Receiver {
    pub(crate) fn start() -> Receiver {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime for the receiver");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the receiver");
        listener.set_nonblocking(true).expect("nonblocking");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let spans = Arc::new(Mutex::new(Vec::new()));
        let store = spans.clone();
        runtime.spawn(async move {
            let app = axum::Router::new().route(
                "/v1/traces",
                axum::routing::post(move |body: axum::body::Bytes| {
                    let store = store.clone();
                    async move {
                        let Ok(request) = ExportTraceServiceRequest::decode(body) else {
                            return axum::http::StatusCode::BAD_REQUEST;
                        };
                        let mut store = store.lock().expect("lock");
                        for resource_spans in request.resource_spans {
                            let service = resource_spans.resource.as_ref().and_then(|r| {
                                text(&r.attributes, "service.name").map(str::to_owned)
                            });
                            for scope in resource_spans.scope_spans {
                                for span in scope.spans {
                                    store.push(Received {
                                        span,
                                        service: service.clone(),
                                    });
                                }
                            }
                        }
                        axum::http::StatusCode::OK
                    }
                }),
            );
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            let _ = axum::serve(listener, app).await;
        });
        Receiver {
            url,
            spans,
            _runtime: runtime,
        }
    }

    /// The spans of trace `trace_id` (hex), once at least `count` of them arrived.
    pub(crate) fn trace(&self, trace_id: &str, count: usize) -> Vec<Received> {
        eventually(
            &format!("{count} spans of trace {trace_id}"),
            Duration::from_secs(20),
            || {
                let spans: Vec<Received> = self
                    .spans
                    .lock()
                    .expect("lock")
                    .iter()
                    .filter(|r| hex(&r.span.trace_id) == trace_id)
                    .cloned()
                    .collect();
                (spans.len() >= count).then_some(spans)
            },
        )
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn attribute<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a AnyValue> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

pub(crate) fn text<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a str> {
    match attribute(attributes, key) {
        Some(AnyValue::StringValue(s)) => Some(s),
        _ => None,
    }
}

/// The one span of `spans` called `name`.
pub(crate) fn named<'a>(spans: &'a [Received], name: &str) -> &'a Span {
    let found: Vec<&Span> = spans
        .iter()
        .map(|r| &r.span)
        .filter(|s| s.name == name)
        .collect();
    assert_eq!(found.len(), 1, "one span {name} in {spans:#?}");
    found[0]
}

fn every_attribute_text(spans: &[Received]) -> String {
    spans
        .iter()
        .flat_map(|r| r.span.attributes.iter())
        .map(|kv| format!("{}={:?}", kv.key, kv.value))
        .collect::<Vec<_>>()
        .join("\n")
}

pub(crate) const VERSION: (&str, &str) = ("MCP-Protocol-Version", "2025-06-18");

/// A gateway with `env` in front of two `--trace-echo` fixtures: `stdio`, which asks for the
/// context in `_meta`, and `web` over HTTP (alive as long as the returned guard); ready.
pub(crate) fn echo_fleet(env: &[(&str, &str)]) -> (Gateway, Background) {
    let (web, port) = http_fixture(&["--name", "web", "--trace-echo"]);
    let mut stdio = fixture_server("stdio", &["--trace-echo"]);
    stdio["trace_context"] = json!(true);
    let gateway = Gateway::start_with_env(
        json!({"mcpServers": {
            "stdio": stdio,
            "web": {"url": format!("http://127.0.0.1:{port}/mcp")},
        }}),
        &[],
        env,
    );
    gateway.wait_ready();
    (gateway, web)
}

/// An agent token called `name` (its secret, its `Authorization` value) and an initialized
/// session it opened.
pub(crate) struct Agent {
    token: String,
    pub(crate) bearer: String,
    pub(crate) session: String,
}

pub(crate) fn agent(gateway: &Gateway, name: &str) -> Agent {
    let token = gateway.create_token(json!({"name": name, "permissions": "read,write"}));
    let bearer = format!("Bearer {token}");
    let session = open_session(gateway, &bearer);
    Agent {
        token,
        bearer,
        session,
    }
}

/// Opens an initialized session on `/mcp/all` with `token`.
fn open_session(gateway: &Gateway, bearer: &str) -> String {
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"traces-test","version":"1"}}}"#;
    let auth = ("Authorization", bearer);
    let reply = exchange(
        gateway.authority(),
        Version::Http11,
        "POST",
        "/mcp/all",
        &[auth],
        init,
    );
    assert_eq!(reply.status, 200, "{reply:?}");
    let session = reply
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let headers = [("Mcp-Session-Id", session.as_str()), VERSION, auth];
    let reply = exchange(
        gateway.authority(),
        Version::Http11,
        "POST",
        "/mcp/all",
        &headers,
        initialized,
    );
    assert_eq!(reply.status, 202, "{reply:?}");
    session
}

/// A `tools/call` in `session` with `extra` headers and `meta` in its params.
fn call(
    gateway: &Gateway,
    session: &str,
    bearer: &str,
    extra: &[(&str, &str)],
    name: &str,
    arguments: Value,
    meta: Option<Value>,
) -> Value {
    let mut params = json!({"name": name, "arguments": arguments});
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let mut headers = vec![
        ("Mcp-Session-Id", session),
        VERSION,
        ("Authorization", bearer),
    ];
    headers.extend_from_slice(extra);
    let reply = exchange(
        gateway.authority(),
        Version::Http11,
        "POST",
        "/mcp/all",
        &headers,
        &body.to_string(),
    );
    answer(&reply)
}

/// The JSON-RPC answer of a reply, whether a JSON body or an event stream.
fn answer(reply: &Reply) -> Value {
    assert_eq!(reply.status, 200, "{reply:?}");
    if let Ok(value) = serde_json::from_str(&reply.body) {
        return value;
    }
    reply
        .body
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .find(|message| message.get("id").is_some())
        .unwrap_or_else(|| panic!("no answer in {reply:?}"))
}

/// What `trace_context` said it was sent.
fn echoed(answer: &Value) -> Value {
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .expect("a text result");
    serde_json::from_str(text).expect("JSON")
}

/// `00-<trace>-<span>-01` split into its trace and span ids.
fn ids(traceparent: &str) -> (String, String) {
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(parts.len(), 4, "{traceparent}");
    (parts[1].to_owned(), parts[2].to_owned())
}

#[test]
fn each_request_is_a_span_tree_in_the_clients_trace_and_upstreams_join_it() {
    let receiver = Receiver::start();
    let (gateway, _web) = echo_fleet(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.url),
        ("OTEL_SERVICE_NAME", "mcplex-it"),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
    ]);
    let Agent {
        token,
        bearer,
        session,
    } = agent(&gateway, "agent-7");

    // A plain call (the fast path), the client's context in the header; the stdio upstream
    // asked for the context in `_meta`.
    let (trace_1, parent_1) = ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331");
    let traceparent_1 = format!("00-{trace_1}-{parent_1}-01");
    let answer_1 = call(
        &gateway,
        &session,
        &bearer,
        &[("traceparent", &traceparent_1)],
        "stdio__trace_context",
        json!({}),
        None,
    );
    let seen_1 = echoed(&answer_1);
    let spans = receiver.trace(trace_1, 4);
    let request = named(&spans, "tools/call stdio__trace_context");
    assert_eq!(request.kind, SpanKind::Server as i32);
    assert_eq!(
        hex(&request.parent_span_id),
        parent_1,
        "the client's span is the parent"
    );
    assert_eq!(text(&request.attributes, "mcplex.route"), Some("/mcp/all"));
    assert_eq!(
        text(&request.attributes, "mcp.method.name"),
        Some("tools/call")
    );
    assert_eq!(
        text(&request.attributes, "gen_ai.tool.name"),
        Some("stdio__trace_context")
    );
    assert_eq!(text(&request.attributes, "mcplex.caller"), Some("agent-7"));
    assert_eq!(text(&request.attributes, "network.transport"), Some("tcp"));
    let gateway_call = named(&spans, "mcplex.call");
    assert_eq!(gateway_call.parent_span_id, request.span_id);
    assert_eq!(
        text(&gateway_call.attributes, "mcplex.server"),
        Some("stdio")
    );
    assert_eq!(text(&gateway_call.attributes, "mcplex.outcome"), Some("ok"));
    assert!(text(&gateway_call.attributes, "mcplex.request_id").is_some());
    let validation = named(&spans, "mcplex.validate");
    assert_eq!(validation.parent_span_id, gateway_call.span_id);
    let upstream = named(&spans, "tools/call trace_context");
    assert_eq!(upstream.kind, SpanKind::Client as i32);
    assert_eq!(upstream.parent_span_id, gateway_call.span_id);
    assert_eq!(
        text(&upstream.attributes, "network.transport"),
        Some("pipe")
    );
    assert_eq!(text(&upstream.attributes, "mcplex.server"), Some("stdio"));
    let meta = seen_1["meta_traceparent"]
        .as_str()
        .expect("the context in _meta");
    assert_eq!(ids(meta), (trace_1.to_owned(), hex(&upstream.span_id)));
    assert_eq!(
        seen_1["header_traceparent"],
        Value::Null,
        "stdio has no headers"
    );
    assert!(
        spans
            .iter()
            .all(|r| r.service.as_deref() == Some("mcplex-it"))
    );

    // A call with `_meta` (rmcp's path), the context in `_meta`, to the HTTP upstream: it gets
    // the header, and no `_meta` context (it did not ask).
    let (trace_2, parent_2) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let meta_2 = json!({"traceparent": format!("00-{trace_2}-{parent_2}-01")});
    let answer_2 = call(
        &gateway,
        &session,
        &bearer,
        &[],
        "web__trace_context",
        json!({}),
        Some(meta_2),
    );
    let seen_2 = echoed(&answer_2);
    let spans = receiver.trace(trace_2, 4);
    let request = named(&spans, "tools/call web__trace_context");
    assert_eq!(hex(&request.parent_span_id), parent_2);
    let upstream = named(&spans, "tools/call trace_context");
    assert_eq!(text(&upstream.attributes, "network.transport"), Some("tcp"));
    let header = seen_2["header_traceparent"]
        .as_str()
        .expect("the traceparent header");
    assert_eq!(ids(header), (trace_2.to_owned(), hex(&upstream.span_id)));
    assert_eq!(seen_2["meta_traceparent"], Value::Null);

    // Arguments the schema refuses: validation fails, nothing goes upstream, the call span says
    // why, and no span carries the argument's value or the token.
    let (trace_3, parent_3) = ("5bf92f3577b34da6a3ce929d0e0e4737", "10f067aa0ba902b8");
    let traceparent_3 = format!("00-{trace_3}-{parent_3}-01");
    let refused = call(
        &gateway,
        &session,
        &bearer,
        &[("traceparent", &traceparent_3)],
        "stdio__add",
        json!({"a": "secret-value-123"}),
        None,
    );
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let spans = receiver.trace(trace_3, 3);
    let gateway_call = named(&spans, "mcplex.call");
    assert_eq!(
        text(&gateway_call.attributes, "mcplex.outcome"),
        Some("invalid_arguments")
    );
    assert_eq!(
        text(&gateway_call.attributes, "error.type"),
        Some("invalid_arguments")
    );
    let status = gateway_call.status.as_ref().expect("a status");
    assert_eq!(status.code, 2, "error");
    let validation = named(&spans, "mcplex.validate");
    assert_eq!(
        attribute(&validation.attributes, "mcplex.valid"),
        Some(&AnyValue::BoolValue(false))
    );
    assert!(
        spans.iter().all(|r| r.span.kind != SpanKind::Client as i32),
        "nothing went upstream"
    );

    let everything = receiver.spans.lock().expect("lock").clone();
    let attributes = every_attribute_text(&everything);
    assert!(!attributes.contains("secret-value-123"), "{attributes}");
    assert!(!attributes.contains(&token), "the token is in a span");
    // A call without any context starts a trace of its own, still exported.
    let before = everything.len();
    call(
        &gateway,
        &session,
        &bearer,
        &[],
        "stdio__echo",
        json!({"x": 1}),
        None,
    );
    eventually(
        "the spans of a call without context",
        Duration::from_secs(20),
        || {
            let spans = receiver.spans.lock().expect("lock");
            let mut by_trace: HashMap<String, usize> = HashMap::new();
            for r in &spans[before..] {
                *by_trace.entry(hex(&r.span.trace_id)).or_default() += 1;
            }
            by_trace.values().any(|&n| n >= 4).then_some(())
        },
    );
}

#[test]
fn a_collector_that_never_answers_holds_no_call_up() {
    // Accepts connections and never reads or answers them.
    let collector = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", collector.local_addr().expect("address"));
    let accepted = Arc::new(Mutex::new(Vec::new()));
    let held = accepted.clone();
    std::thread::spawn(move || {
        for stream in collector.incoming().flatten() {
            held.lock().expect("lock").push(stream);
        }
    });
    let gateway = Gateway::start_with_env(
        json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}}),
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &url),
            ("OTEL_BSP_SCHEDULE_DELAY", "20"),
            ("OTEL_BSP_MAX_QUEUE_SIZE", "64"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "60000"),
        ],
    );
    gateway.wait_ready();
    let Agent {
        bearer, session, ..
    } = agent(&gateway, "busy");
    let started = Instant::now();
    for n in 0..300 {
        let answer = call(
            &gateway,
            &session,
            &bearer,
            &[],
            "fixture__echo",
            json!({"n": n}),
            None,
        );
        assert_eq!(answer["result"]["structuredContent"]["n"], n, "{answer}");
        if n == 0 {
            // The export is under way (and stuck) before the rest of the calls.
            eventually("the exporter to connect", Duration::from_secs(20), || {
                (!accepted.lock().expect("lock").is_empty()).then_some(())
            });
        }
    }
    // One stuck export alone would hold a blocked call for a minute.
    assert!(
        started.elapsed() < Duration::from_secs(45),
        "300 calls took {:?} with the collector stuck",
        started.elapsed()
    );
}

#[test]
fn over_stdio_the_context_comes_from_meta() {
    use std::io::{BufRead, BufReader, Write};
    let receiver = Receiver::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.json");
    let servers = json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}});
    std::fs::write(&config, servers.to_string()).expect("config");
    let mut child = std::process::Command::new(&crate::harness::tools().mcplex)
        .args(["serve", "--stdio", "--config"])
        .arg(&config)
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.url)
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .env("MCPLEX_STARTUP_WAIT", "10s")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("mcplex serve --stdio");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let (trace, parent) = ("6bf92f3577b34da6a3ce929d0e0e4738", "20f067aa0ba902b9");
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "fixture__echo", "arguments": {}, "_meta": {"traceparent": format!("00-{trace}-{parent}-01")}}}),
    ] {
        writeln!(stdin, "{message}").expect("write");
    }
    let answer = lines
        .by_ref()
        .map_while(Result::ok)
        .filter_map(|line| serde_json::from_str::<Value>(&line).ok())
        .find(|message| message["id"] == 2)
        .expect("the call's answer");
    assert_eq!(answer["result"]["structuredContent"], json!({}), "{answer}");
    let spans = receiver.trace(trace, 4);
    let request = named(&spans, "tools/call fixture__echo");
    assert_eq!(hex(&request.parent_span_id), parent);
    assert_eq!(text(&request.attributes, "mcplex.route"), Some("stdio"));
    assert_eq!(text(&request.attributes, "network.transport"), Some("pipe"));
    assert_eq!(named(&spans, "mcplex.call").parent_span_id, request.span_id);
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn with_no_exporter_no_trace_context_reaches_an_upstream() {
    let (gateway, _web) = echo_fleet(&[]);
    let Agent {
        bearer, session, ..
    } = agent(&gateway, "quiet");
    let traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    for tool in ["stdio__trace_context", "web__trace_context"] {
        let answer = call(
            &gateway,
            &session,
            &bearer,
            &[("traceparent", traceparent)],
            tool,
            json!({}),
            None,
        );
        let seen = echoed(&answer);
        assert_eq!(seen["meta_traceparent"], Value::Null, "{tool}: {seen}");
        assert_eq!(seen["header_traceparent"], Value::Null, "{tool}: {seen}");
    }
}
