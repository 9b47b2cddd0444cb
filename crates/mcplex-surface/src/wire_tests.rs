//! The wire checks' tests: unit tests of each check, and differential tests that send the same
//! requests through rmcp's own `StreamableHttpService` and through ours, and want the same
//! refusal (status, content type, `Allow`, body) or, where rmcp goes on, the same era.
use super::*;
use std::sync::Arc;

use axum::http::{HeaderValue, Method, Request};
use bytes::Bytes;
use futures::StreamExt;
use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::json;

const OLD: &str = "2025-06-18";
const V25: &str = "2025-11-25";
const V26: &str = "2026-07-28";
const BOTH: &str = "application/json, text/event-stream";

fn meta26() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": V26,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    })
}

fn request(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
}

fn init(version: &str) -> Value {
    request(
        "initialize",
        json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    )
}

/// A request with the stateless `_meta` added to `params`.
fn stateless(method: &str, mut params: Value) -> Value {
    params["_meta"] = meta26();
    request(method, params)
}

fn with_meta(method: &str, meta: Value) -> Value {
    request(method, json!({"_meta": meta}))
}

fn notification(method: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": method})
}

/// What our checks, or rmcp, did with a request.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Outcome {
    /// Went on to serve it, in this era.
    Served(ProtocolEra),
    /// Refused it with this status.
    Refused(u16),
}
use Outcome::{Refused, Served};
const SESSION: Outcome = Served(ProtocolEra::Session);
const STATELESS: Outcome = Served(ProtocolEra::Stateless);

struct Case {
    name: &'static str,
    method: Method,
    headers: HeaderMap,
    body: Value,
    in_session: bool,
    expect: Outcome,
}

/// Header pairs a case sends on top of its method's defaults (`Host` and media types), the first
/// of a default's name replacing it: `STD` stands for a stateless client's version header and
/// `Mcp-Method`, `("-name", "")` leaves a default out, `SESSION_ID` names the test's open
/// session. Values are sent as bytes, so `\u{ff}` is not text.
const STD: (&str, &str) = ("std", "");
const SESSION_ID: (&str, &str) = ("session", "");
const PV: &str = "mcp-protocol-version";

fn post(name: &'static str, body: Value, sent: &[(&'static str, &str)], expect: Outcome) -> Case {
    let defaults = [("accept", BOTH), ("content-type", "application/json")];
    Case::new(name, Method::POST, body, &defaults, sent, expect)
}

fn get(name: &'static str, sent: &[(&'static str, &str)], expect: Outcome) -> Case {
    let defaults = [("accept", "text/event-stream")];
    Case::new(name, Method::GET, Value::Null, &defaults, sent, expect)
}

fn delete(name: &'static str, sent: &[(&'static str, &str)], expect: Outcome) -> Case {
    Case::new(name, Method::DELETE, Value::Null, &[], sent, expect)
}

impl Case {
    fn new(
        name: &'static str,
        method: Method,
        body: Value,
        defaults: &[(&'static str, &str)],
        sent: &[(&'static str, &str)],
        expect: Outcome,
    ) -> Case {
        let mut headers = HeaderMap::new();
        let mut in_session = false;
        let mut replaced = Vec::new();
        let is_default = |name| name == "host" || defaults.iter().any(|(d, _)| *d == name);
        let value = |v: &str| HeaderValue::from_bytes(v.as_bytes()).expect("a header value");
        for (name, v) in [("host", "localhost")].iter().chain(defaults) {
            if !sent.contains(&(&format!("-{name}"), "")) {
                headers.insert(*name, value(v));
            }
        }
        for &(name, v) in sent {
            match name {
                "std" => {
                    let method = body["method"].as_str().unwrap_or_default();
                    headers.insert(PV, value(V26));
                    headers.append("mcp-method", value(method));
                }
                "session" => in_session = true,
                _ if name.starts_with('-') => {}
                _ if is_default(name) && !replaced.contains(&name) => {
                    replaced.push(name);
                    headers.insert(name, value(v));
                }
                _ => {
                    headers.append(name, value(v));
                }
            }
        }
        Case {
            name,
            method,
            headers,
            body,
            in_session,
            expect,
        }
    }

    fn request(&self, session: &str) -> Request<axum::body::Body> {
        let mut builder = Request::builder().method(self.method.clone()).uri("/mcp");
        for (name, value) in &self.headers {
            builder = builder.header(name, value);
        }
        if self.in_session {
            builder = builder.header("mcp-session-id", session);
        }
        let body = match self.method {
            Method::POST => axum::body::Body::from(self.body.to_string()),
            _ => axum::body::Body::empty(),
        };
        builder.body(body).expect("a request")
    }
}

/// Our checks, in the order the one request path will run them.
fn ours(case: &Case) -> Result<ProtocolEra, Response> {
    let (parts, _) = case.request("s").into_parts();
    host_readable(&parts)?;
    match case.method {
        Method::POST => {
            post_media_types(&parts.headers)?;
            classify_post(&parts.headers, &case.body).map(|c| c.era)
        }
        Method::GET => {
            get_media_types(&parts.headers)?;
            get_or_delete_version(&parts.headers).map(|()| ProtocolEra::Session)
        }
        _ => get_or_delete_version(&parts.headers).map(|()| ProtocolEra::Session),
    }
}

/// A response as the tests compare it; the body is its first chunk (all of a refusal's).
#[derive(Debug)]
struct Seen {
    status: u16,
    content_type: Option<String>,
    allow: Option<String>,
    opened_session: bool,
    body: Bytes,
}

async fn seen(response: Response) -> Seen {
    let header = |name| {
        response
            .headers()
            .get(name)
            .map(|v: &HeaderValue| String::from_utf8_lossy(v.as_bytes()).into_owned())
    };
    let (status, content_type, allow) = (
        response.status().as_u16(),
        header(CONTENT_TYPE),
        header(ALLOW),
    );
    let opened_session = response.headers().contains_key("mcp-session-id");
    let mut stream = response.into_body().into_data_stream();
    let first = tokio::time::timeout(std::time::Duration::from_secs(10), stream.next()).await;
    let body = match first {
        Ok(Some(Ok(chunk))) => chunk,
        Ok(_) => Bytes::new(),
        Err(_) => panic!("no first chunk within 10 s"),
    };
    Seen {
        status,
        content_type,
        allow,
        opened_session,
        body,
    }
}

/// What rmcp did: served in which era (judged by the answer: a new session, the session
/// layer's own refusals, an SSE stream with event ids or without, a handler's error), or
/// refused.
fn rmcp_outcome(seen: &Seen, in_session: bool) -> Outcome {
    let text = String::from_utf8_lossy(&seen.body);
    let event_stream = seen.content_type.as_deref() == Some("text/event-stream");
    // The checks give -32020, -32600 and "Invalid params: …" -32602; rmcp's handler the rest.
    let error = serde_json::from_slice::<Value>(&seen.body).unwrap_or_default()["error"].take();
    let said = error["message"].as_str().unwrap_or_default();
    let handler_error = match error["code"].as_i64() {
        Some(-32602) => !said.starts_with("Invalid params:"),
        Some(code) => [-32601, -32021, -32022].contains(&code),
        None => false,
    };
    match seen.status {
        _ if seen.opened_session => SESSION,
        202 if in_session => SESSION,
        202 => STATELESS,
        400 if text == "Bad Request: Session ID is required" => SESSION,
        404 if text == "Not Found: Session not found" => SESSION,
        200 if event_stream && text.lines().any(|l| l.starts_with("id:")) => SESSION,
        200 if event_stream => STATELESS,
        _ if handler_error => STATELESS,
        status => Refused(status),
    }
}

fn body_matches(ours: &Seen, theirs: &Seen) -> bool {
    if ours.content_type.as_deref() == Some("application/json") {
        let parse = |b: &Bytes| serde_json::from_slice::<Value>(b).ok();
        parse(&ours.body).is_some() && parse(&ours.body) == parse(&theirs.body)
    } else {
        ours.body == theirs.body
    }
}

fn rmcp_service() -> StreamableHttpService<Trivial, LocalSessionManager> {
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .with_legacy_session_mode(true);
    StreamableHttpService::new(
        || Ok(Trivial),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

#[derive(Clone)]
struct Trivial;

impl rmcp::ServerHandler for Trivial {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        let capabilities = rmcp::model::ServerCapabilities::builder()
            .enable_tools()
            .enable_prompts()
            .enable_resources()
            .build();
        rmcp::model::ServerConfig::new(capabilities)
    }
}

async fn rmcp_answer(
    service: &StreamableHttpService<Trivial, LocalSessionManager>,
    request: Request<axum::body::Body>,
) -> Response {
    let response = service.handle(request).await;
    let (parts, body) = response.into_parts();
    Response::from_parts(parts, axum::body::Body::new(body))
}

/// An initialized session on `service`, for the cases that name one.
async fn open_session(service: &StreamableHttpService<Trivial, LocalSessionManager>) -> String {
    let opening = post("open", init(V25), &[], SESSION);
    let response = rmcp_answer(service, opening.request("")).await;
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session")
        .to_owned();
    let _ = seen(response).await;
    let initialized = notification("notifications/initialized");
    let initialized = post("initialized", initialized, &[SESSION_ID], SESSION);
    let answer = rmcp_answer(service, initialized.request(&session)).await;
    assert_eq!(answer.status(), 202);
    session
}

#[tokio::test]
async fn every_case_is_refused_or_served_as_rmcp_does() {
    let service = rmcp_service();
    let session = open_session(&service).await;
    let cases: Vec<Case> = [
        cases::media_and_host(),
        cases::versions(),
        cases::standard_headers(),
        cases::kinds(),
        cases::get_and_delete(),
    ]
    .into_iter()
    .flatten()
    .collect();
    assert!(cases.len() >= 30, "{} cases", cases.len());
    let mut problems = Vec::new();
    for case in &cases {
        let theirs = seen(rmcp_answer(&service, case.request(&session)).await).await;
        let rmcp = rmcp_outcome(&theirs, case.in_session);
        let (outcome, refusal) = match ours(case) {
            Ok(era) => (Served(era), None),
            Err(response) => {
                let refusal = seen(response).await;
                (Refused(refusal.status), Some(refusal))
            }
        };
        let name = case.name;
        if outcome != case.expect {
            problems.push(format!(
                "{name}: ours {outcome:?}, expected {:?}",
                case.expect
            ));
        }
        if outcome != rmcp {
            problems.push(format!(
                "{name}: ours {outcome:?}, rmcp {rmcp:?} ({theirs:?})"
            ));
            continue;
        }
        if let Some(ours) = refusal
            && (ours.content_type != theirs.content_type
                || ours.allow != theirs.allow
                || !body_matches(&ours, &theirs))
        {
            problems.push(format!("{name}:\n  ours {ours:?}\n  rmcp {theirs:?}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The differential table, by subject, one case a line (hence unformatted). Each case says
/// what it expects of ours too, so the table also reads as a specification.
#[rustfmt::skip]
mod cases {
    use super::*;

    const ACCEPT: &str = "accept";
    const METHOD: &str = "mcp-method";
    const NAME: &str = "mcp-name";
    const CAPS: &str = "io.modelcontextprotocol/clientCapabilities";
    const VERSION: &str = "io.modelcontextprotocol/protocolVersion";

    pub(super) fn media_and_host() -> Vec<Case> {
        let list = || request("tools/list", json!({}));
        let accept = |a| [(ACCEPT, a)];
        let no = |h| [(h, "")];
        vec![
            post("accept missing", list(), &no("-accept"), Refused(406)),
            post("accept json only", list(), &accept("application/json"), Refused(406)),
            post("accept sse q=0", list(), &accept("application/json, text/event-stream;q=0"), Refused(406)),
            post("accept sse q=0.000", list(), &accept("text/event-stream; q=0.000, application/json"), Refused(406)),
            post("accept weighted", list(), &accept("application/json;q=0.5, text/event-stream;q=1"), SESSION),
            post("accept malformed q", list(), &accept("application/json, text/event-stream;q=abc"), SESSION),
            post("accept wildcard", list(), &accept("*/*"), Refused(406)),
            post("accept quoted comma", list(), &accept("application/json;x=\"a,text/event-stream\""), Refused(406)),
            post("accept two headers", list(), &[(ACCEPT, "text/event-stream"), (ACCEPT, "Application/JSON")], SESSION),
            post("content-type missing", list(), &no("-content-type"), Refused(415)),
            post("content-type text", list(), &[("content-type", "text/plain")], Refused(415)),
            post("content-type charset", list(), &[("content-type", "Application/JSON; charset=utf-8")], SESSION),
            post("406 before 415", list(), &[("-accept", ""), ("-content-type", "")], Refused(406)),
            post("host missing", list(), &no("-host"), Refused(400)),
            post("host malformed", list(), &[("host", "exa mple")], Refused(400)),
            post("host not text", list(), &[("host", "h\u{ff}")], Refused(400)),
            post("host with port", list(), &[("host", "[::1]:8080")], SESSION),
        ]
    }

    pub(super) fn versions() -> Vec<Case> {
        let list = || request("tools/list", json!({}));
        let listed = || stateless("tools/list", json!({}));
        let meta = |v: &str| with_meta("tools/list", json!({VERSION: v}));
        let unknown = with_meta("tools/list", json!({VERSION: "2099-01-01", CAPS: {}}));
        let unknown_sent = [(PV, "2099-01-01"), (METHOD, "tools/list")];
        vec![
            post("init no header", init(V25), &[], SESSION),
            post("init header matches", init(V25), &[(PV, V25)], SESSION),
            post("init header differs", init(V25), &[(PV, OLD)], Refused(400)),
            post("init unknown header", init(V25), &[(PV, "1999-01-01")], Refused(400)),
            post("init 2026", init(V26), &[(PV, V26)], SESSION),
            post("init 2026 with its method", init(V26), &[STD], SESSION),
            post("init 2026 other method", init(V26), &[(PV, V26), (METHOD, "tools/list")], Refused(400)),
            post("init 2026 method twice", init(V26), &[STD, (METHOD, "initialize")], Refused(400)),
            post("list no header", list(), &[], SESSION),
            post("list old header", list(), &[(PV, OLD)], SESSION),
            post("list unknown header", list(), &[(PV, "2030-01-01")], Refused(400)),
            post("list garbage header", list(), &[(PV, "banana")], Refused(400)),
            post("list header not text", list(), &[(PV, "2025-11-25\u{ff}")], Refused(400)),
            post("list 2026 header no meta", list(), &[STD], Refused(400)),
            post("list 2026", listed(), &[STD], STATELESS),
            post("meta 2026 no header", listed(), &[], Refused(400)),
            post("meta 2026 old header", listed(), &[(PV, V25)], Refused(400)),
            post("meta 2025 with its header", meta(V25), &[(PV, V25)], SESSION),
            post("meta 2025, header 2026", meta(V25), &[STD], Refused(400)),
            post("meta unknown, its header", unknown, &unknown_sent, STATELESS),
            post("in session, 2025", list(), &[(PV, V25), SESSION_ID], SESSION),
            post("in session, unknown", list(), &[(PV, "x"), SESSION_ID], Refused(400)),
        ]
    }

    pub(super) fn standard_headers() -> Vec<Case> {
        let listed = || stateless("tools/list", json!({}));
        let call = || stateless("tools/call", json!({"name": "echo", "arguments": {}}));
        let prompt = || stateless("prompts/get", json!({"name": "greet"}));
        let read = || stateless("resources/read", json!({"uri": "file:///a b"}));
        let name = |n| [STD, (NAME, n)];
        vec![
            post("method missing", listed(), &[(PV, V26)], Refused(400)),
            post("method differs", listed(), &[(PV, V26), (METHOD, "prompts/list")], Refused(400)),
            post("method twice", listed(), &[STD, (METHOD, "tools/list")], Refused(400)),
            post("method not text", listed(), &[(PV, V26), (METHOD, "tools/list\u{ff}")], Refused(400)),
            post("call named", call(), &name("echo"), STATELESS),
            post("call name missing", call(), &[STD], Refused(400)),
            post("call name wrong", call(), &name("ECHO"), Refused(400)),
            post("call name base64", call(), &name("=?base64?ZWNobw==?="), STATELESS),
            post("call name bad base64", call(), &name("=?base64?ZWNobw?="), Refused(400)),
            post("call name base64 of other", call(), &name("=?base64?ZWNobzI=?="), Refused(400)),
            post("call name twice", call(), &[STD, (NAME, "echo"), (NAME, "echo")], Refused(400)),
            post("prompt named", prompt(), &name("greet"), STATELESS),
            post("prompt name wrong", prompt(), &name("echo"), Refused(400)),
            post("read by uri", read(), &name("file:///a b"), STATELESS),
            post("read uri missing", read(), &[STD], Refused(400)),
            post("read uri base64", read(), &name("=?base64?ZmlsZTovLy9hIGI=?="), STATELESS),
        ]
    }

    pub(super) fn kinds() -> Vec<Case> {
        let discover = || stateless("server/discover", json!({}));
        let bare_discover = request("server/discover", json!({}));
        let old_discover = with_meta("server/discover", json!({VERSION: V25}));
        let note = || notification("notifications/initialized");
        let answer = || json!({"jsonrpc": "2.0", "id": 1, "result": {}});
        let error = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "no"}});
        let custom = stateless("vendor/thing", json!({"x": 1}));
        vec![
            post("discover", discover(), &[STD], STATELESS),
            post("discover no meta", bare_discover, &[], Refused(400)),
            post("discover 2025 meta", old_discover, &[(PV, V25)], STATELESS),
            post("discover no method header", discover(), &[(PV, V26)], Refused(400)),
            post("notification", note(), &[], SESSION),
            post("notification 2026", note(), &[STD], STATELESS),
            post("notification 2026 no method", note(), &[(PV, V26)], Refused(400)),
            post("notification unknown", note(), &[(PV, "2030-01-01")], Refused(400)),
            post("answer", answer(), &[], SESSION),
            post("answer 2026", answer(), &[(PV, V26)], Refused(400)),
            post("error 2026", error, &[STD], Refused(400)),
            post("custom 2026", custom, &[STD], STATELESS),
        ]
    }

    pub(super) fn get_and_delete() -> Vec<Case> {
        vec![
            get("get", &[], SESSION),
            get("get old", &[(PV, V25)], SESSION),
            get("get 2026", &[(PV, V26)], Refused(405)),
            get("get unknown", &[(PV, "2030-01-01")], Refused(400)),
            get("get json only", &[(ACCEPT, "application/json")], Refused(406)),
            get("get sse q=0", &[(ACCEPT, "text/event-stream;q=0")], Refused(406)),
            get("get no host", &[("-host", "")], Refused(400)),
            delete("delete", &[], SESSION),
            delete("delete old", &[(PV, V25)], SESSION),
            delete("delete 2026", &[(PV, V26)], Refused(405)),
            delete("delete unknown", &[(PV, "banana")], Refused(400)),
            delete("delete not text", &[(PV, "\u{ff}")], Refused(400)),
        ]
    }
}

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(*name, HeaderValue::from_str(value).expect("a header value"));
    }
    map
}

async fn body_text(response: Response) -> String {
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await;
    String::from_utf8(bytes.expect("a body").to_vec()).expect("text")
}

#[test]
fn weights_exclude_only_a_well_formed_zero() {
    for zero in ["0", "0.", "0.0", "0.000"] {
        assert!(!weight_admits(zero), "{zero}");
    }
    for kept in [
        "1", "0.5", "0.001", "1.000", "0.0000", "abc", "", ".0", "-0", "00", "0.1.2",
    ] {
        assert!(weight_admits(kept), "{kept}");
    }
}

#[test]
fn lists_split_outside_quoted_strings_only() {
    let parts: Vec<&str> = outside_quotes(r#"a,b"c,d"e;f"#, ',').collect();
    assert_eq!(parts, [r#"a"#, r#"b"c,d"e;f"#]);
    let parts: Vec<&str> = outside_quotes(r#"a;b"c\";d"e"#, ';').collect();
    assert_eq!(parts, ["a", r#"b"c\";d"e"#]);
    let accept = headers(&[
        (
            "accept",
            r#"text/plain;q=0, application/json;p="a;q=0", text/event-stream;q=x"#,
        ),
        ("accept", "application/xml, */*;Q=0.5"),
    ]);
    let essences: Vec<&str> = accepted_essences(&accept).collect();
    assert_eq!(
        essences,
        [
            "application/json",
            "text/event-stream",
            "application/xml",
            "*/*"
        ]
    );
}

#[tokio::test]
async fn host_must_be_readable_or_in_the_uri() {
    let parts = |uri: &str, host: Option<&[u8]>| {
        let mut request = Request::builder().uri(uri);
        if let Some(host) = host {
            request = request.header("host", HeaderValue::from_bytes(host).expect("a value"));
        }
        request.body(()).expect("a request").into_parts().0
    };
    assert!(host_readable(&parts("/mcp", Some(b"example.com:443"))).is_ok());
    assert!(host_readable(&parts("http://example.com/mcp", None)).is_ok());
    for (uri, host, said) in [
        ("/mcp", None, "Bad Request: missing Host header"),
        (
            "/mcp",
            Some(&b"a b"[..]),
            "Bad Request: Invalid Host header",
        ),
        (
            "/mcp",
            Some(&b"\xff"[..]),
            "Bad Request: Invalid Host header encoding",
        ),
    ] {
        let refusal = host_readable(&parts(uri, host)).expect_err("400");
        assert_eq!(refusal.status(), StatusCode::BAD_REQUEST);
        let kind = refusal.headers().get(CONTENT_TYPE).cloned();
        assert_eq!(
            kind,
            Some(HeaderValue::from_static("text/plain; charset=utf-8"))
        );
        assert_eq!(body_text(refusal).await, said);
    }
}

#[tokio::test]
async fn classification_names_era_and_version() {
    let list = request("tools/list", json!({}));
    let got = classify_post(&headers(&[]), &list).expect("served");
    assert_eq!((got.era, got.version), (ProtocolEra::Session, None));
    let got = classify_post(&headers(&[("mcp-protocol-version", OLD)]), &list).expect("served");
    assert_eq!(got.version.as_ref().map(ProtocolVersion::as_str), Some(OLD));
    let got = classify_post(&headers(&[]), &init(V26)).expect("served");
    assert_eq!(got.era, ProtocolEra::Session, "initialize: always");
    assert_eq!(got.version.as_ref().map(ProtocolVersion::as_str), Some(V26));
    let call = stateless("tools/call", json!({"name": "echo"}));
    let sent = [
        ("mcp-protocol-version", V26),
        ("mcp-method", "tools/call"),
        ("mcp-name", "echo"),
    ];
    let got = classify_post(&headers(&sent), &call).expect("served");
    assert_eq!(got.era, ProtocolEra::Stateless);
    assert_eq!(got.version.as_ref().map(ProtocolVersion::as_str), Some(V26));
    let refusal = classify_post(&headers(&sent[..2]), &call).expect_err("no Mcp-Name");
    let body: Value = serde_json::from_str(&body_text(refusal).await).expect("json");
    assert_eq!(body["id"], 7);
    assert_eq!(body["error"]["code"], -32020);
    let said = "missing required Mcp-Name header for `tools/call`";
    assert_eq!(body["error"]["message"], said);
}
