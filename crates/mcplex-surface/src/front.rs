//! What an MCP route checks before rmcp's streamable HTTP service sees a request, answering in
//! JSON-RPC where rmcp would answer otherwise or not at all:
//!
//! - a POST body is read here (within the body limit, 413 past it; 408 when it does not arrive
//!   within the body-read timeout); a body that is not JSON is a parse error (-32700, HTTP 400)
//!   whatever its `Content-Type`;
//! - a request for a method of the MCP schema whose params have the wrong shape is invalid
//!   params (-32602); rmcp would take it for an unknown method;
//! - a request whose id is already in flight in the same session is refused (-32600, HTTP 400;
//!   `in_flight.rs`):
//!   rmcp keys a session's answers by request id, so two alike would cross. The pair (session,
//!   id) is in flight until the answer's body ends; `1` and `"1"` are different ids;
//! - an `initialize` past `max_sessions` gets 503 with a JSON-RPC error naming the cap, one past
//!   the caller's `max_sessions_per_caller` 429; a session named by a credential that did not
//!   open it is answered as an unknown session (`session_owners.rs`);
//! - `DELETE` of a session answers 200 (rmcp says 202, which clients report as a failure).
//!
//! A plain `tools/call` in an initialized session is answered by the fast path (`fast.rs`)
//! instead of rmcp's session worker; a `notifications/cancelled` for such a call cancels it here
//! (and still goes to rmcp, which knows no such request).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage};
use rmcp::transport::StreamableHttpService;
use serde_json::{Value, json};

use crate::connection::is_body_timeout;
use crate::fast::{self, PeerBook};
use crate::in_flight::{InFlightIds, holding};
use crate::plain::{PlainCall, plain_headers};
use crate::session_owners::{Owner, Owners};
use crate::sessions::{SessionBook, Sessions};
use crate::traced;

const SESSION_HEADER: &str = "mcp-session-id";

/// Methods of the MCP schema a client may call; one of them that rmcp parses as a custom request
/// had params of the wrong shape.
const SCHEMA_METHODS: &[&str] = &[
    "ping",
    "initialize",
    "server/discover",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "subscriptions/listen",
    "tools/call",
    "tools/list",
];

/// One MCP route: the checks above in front of rmcp's service. Cloned for every request, so
/// it is one shared allocation.
pub(crate) struct Front<S>(Arc<Route<S>>);

struct Route<S> {
    service: StreamableHttpService<S, Sessions>,
    /// The route's server instance, for the fast path.
    surface: S,
    sessions: Arc<Sessions>,
    book: Arc<SessionBook>,
    in_flight: Arc<InFlightIds>,
    max_body_bytes: usize,
}

impl<S> Clone for Front<S> {
    fn clone(&self) -> Self {
        Front(self.0.clone())
    }
}

impl<S: rmcp::ServerHandler + Clone + Send + Sync + 'static> Front<S> {
    pub(crate) fn new(
        service: StreamableHttpService<S, Sessions>,
        surface: S,
        sessions: Arc<Sessions>,
        book: Arc<SessionBook>,
        max_body_bytes: usize,
    ) -> Front<S> {
        Front(Arc::new(Route {
            service,
            surface,
            sessions,
            book,
            in_flight: Arc::default(),
            max_body_bytes,
        }))
    }

    pub(crate) async fn serve(self, mut request: Request<Body>) -> Response {
        request
            .extensions_mut()
            .insert(PeerBook(self.0.sessions.clone()));
        let owner: Owner = request
            .extensions()
            .get::<crate::Caller>()
            .and_then(|caller| caller.token.clone());
        // Another credential's session is answered as an unknown one.
        if let Some(session) = request.headers().get(SESSION_HEADER)
            && let Ok(session) = session.to_str()
            && !self.0.book.owners.usable_by(session, &owner)
        {
            return unknown_session();
        }
        match *request.method() {
            Method::POST => self.post(request).await,
            Method::DELETE => {
                let mut response = self.rmcp(request).await;
                if response.status() == StatusCode::ACCEPTED {
                    *response.status_mut() = StatusCode::OK;
                }
                response
            }
            _ => self.rmcp(request).await,
        }
    }

    /// Hands `request` to rmcp's service. Boxed: rmcp's future is large, and every request's
    /// future (fast ones too) would be as large and be moved whole between the layers in front
    /// of this one.
    async fn rmcp(&self, request: Request<Body>) -> Response {
        Box::pin(self.0.service.handle(request))
            .await
            .into_response()
    }

    async fn post(self, request: Request<Body>) -> Response {
        let owner: Owner = request
            .extensions()
            .get::<crate::Caller>()
            .and_then(|caller| caller.token.clone());
        let (mut parts, body) = request.into_parts();
        let bytes = match read_body(body, self.0.max_body_bytes).await {
            Ok(bytes) => bytes,
            Err(refusal) => return refusal,
        };
        // The common case, read straight into its parts; the checks below in the same order.
        if let Some(session) = parts.headers.get(SESSION_HEADER)
            && plain_headers(&parts.headers)
            && let Ok(session) = session.to_str()
            && let Some(call) = PlainCall::read(&bytes)
            && let Some(fast_session) = self.0.sessions.fast_session(session)
        {
            let cancel = fast_session.ended.child_token();
            let id = call.id_value();
            let Some(hold) = self.0.in_flight.hold(session, &id, Some(cancel.clone())) else {
                return already_in_flight(id);
            };
            let span = traced::arrived(&mut parts, "tools/call", Some(&call.params.name), None);
            let response =
                fast::answer(self.0.surface.clone(), parts, call, fast_session, cancel).await;
            mcplex_trace::answered(&span, response.status().as_u16());
            return holding(response, Some(hold));
        }
        let message: Value = match serde_json::from_slice(&bytes) {
            Ok(message) => message,
            Err(e) => {
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    Value::Null,
                    -32700,
                    &format!("Parse error: the body is not JSON ({e})"),
                );
            }
        };
        if let Some(refusal) = not_a_message(&message) {
            return refusal;
        }
        let span = traced::arrived_message(&mut parts, &message);
        let response = self.post_message(parts, bytes, message, owner).await;
        if let Some(span) = span {
            mcplex_trace::answered(&span, response.status().as_u16());
        }
        response
    }

    /// A POST whose body is one JSON-RPC message rmcp can take, not answered by the fast path
    /// above: the in-flight and session checks, then the fast path or rmcp.
    async fn post_message(
        self,
        parts: http::request::Parts,
        bytes: Bytes,
        message: Value,
        owner: Owner,
    ) -> Response {
        let session = parts
            .headers
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let fast_session = match &session {
            Some(session) if plain_tool_call(&message) && plain_headers(&parts.headers) => {
                self.0.sessions.fast_session(session)
            }
            _ => None,
        };
        let fast_cancel = fast_session.as_ref().map(|s| s.ended.child_token());
        let mut held = None;
        if let Some(request) = Incoming::of(&message) {
            match &session {
                Some(session) => {
                    match self
                        .0
                        .in_flight
                        .hold(session, &request.id, fast_cancel.clone())
                    {
                        Some(hold) => held = Some(hold),
                        None => return already_in_flight(request.id),
                    }
                }
                None if request.method == "initialize" && self.0.book.full_for(&owner) => {
                    let mut refusal = rpc_error(
                        StatusCode::SERVICE_UNAVAILABLE,
                        request.id.clone(),
                        -32000,
                        &format!(
                            "too many open sessions (max_sessions {}); close unused sessions or retry later",
                            self.0.book.max()
                        ),
                    );
                    refusal
                        .headers_mut()
                        .insert(header::RETRY_AFTER, header::HeaderValue::from_static("5"));
                    return refusal;
                }
                None if request.method == "initialize" => {
                    let Some(place) = self.0.book.owners.reserve(&owner) else {
                        return too_many_for_caller(request.id.clone(), &self.0.book.owners);
                    };
                    let response = self
                        .rmcp(Request::from_parts(parts, Body::from(bytes)))
                        .await;
                    // Unclaimed (no session opened, or this future dropped), the place is freed.
                    if let Some(opened) = response
                        .headers()
                        .get(SESSION_HEADER)
                        .and_then(|v| v.to_str().ok())
                    {
                        place.claim(opened);
                    }
                    return response;
                }
                None => {}
            }
        } else if let Some(session) = &session {
            self.0.in_flight.cancel_named(session, &message);
            if message.get("method").and_then(Value::as_str) == Some("notifications/initialized") {
                return self.initialized(parts, bytes, session).await;
            }
        }
        if let (Some(fast_session), Some(cancel)) = (fast_session, fast_cancel)
            && let Some(call) = PlainCall::of(message)
        {
            let response =
                fast::answer(self.0.surface.clone(), parts, call, fast_session, cancel).await;
            return holding(response, held);
        }
        let request = Request::from_parts(parts, Body::from(bytes));
        let response = self.rmcp(request).await;
        holding(response, held)
    }

    /// Hands `notifications/initialized` to rmcp and answers once rmcp's worker has handled it
    /// (bounded by [`INITIALIZED_WAIT`]): rmcp accepts a notification before its worker reads
    /// it, and a client's next request must find the session ready for the fast path, or the
    /// same request would be answered one way or the other depending on the scheduler.
    async fn initialized(
        &self,
        parts: http::request::Parts,
        bytes: Bytes,
        session: &str,
    ) -> Response {
        let known = self.0.sessions.peer_known(session);
        let response = self
            .rmcp(Request::from_parts(parts, Body::from(bytes)))
            .await;
        if let Some((known, ended)) = known
            && response.status().is_success()
        {
            tokio::select! {
                () = known.cancelled() => {}
                () = ended.cancelled() => {}
                () = tokio::time::sleep(INITIALIZED_WAIT) => {}
            }
        }
        response
    }
}

/// How long the answer to `notifications/initialized` waits for rmcp's worker to handle it.
const INITIALIZED_WAIT: Duration = Duration::from_secs(2);

/// What a request naming a session this route does not know gets (the session manager's own
/// answer), also given to a credential that did not open the session it names.
fn unknown_session() -> Response {
    (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response()
}

fn too_many_for_caller(id: Value, owners: &Owners) -> Response {
    let mut refusal = rpc_error(
        StatusCode::TOO_MANY_REQUESTS,
        id,
        -32000,
        &format!(
            "too many open sessions for this credential (max_sessions_per_caller {}); end unused ones (DELETE with their Mcp-Session-Id) or retry later",
            owners.max_per_caller()
        ),
    );
    refusal
        .headers_mut()
        .insert(header::RETRY_AFTER, header::HeaderValue::from_static("5"));
    refusal
}

fn already_in_flight(id: Value) -> Response {
    let message = format!(
        "Invalid request: id {id} is already in flight in this session; use a new id for each request"
    );
    rpc_error(StatusCode::BAD_REQUEST, id, -32600, &message)
}

impl<S: rmcp::ServerHandler + Clone + Send + Sync + 'static> tower_service::Service<Request<Body>>
    for Front<S>
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move { Ok(this.serve(request).await) })
    }
}

/// Reads a request body whole, refusing it past `limit` bytes or past its read deadline.
async fn read_body(body: Body, limit: usize) -> Result<Bytes, Response> {
    let mut collected = BytesMut::new();
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(chunk) if chunk.len() > limit.saturating_sub(collected.len()) => {
                return Err(plain(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &format!("request body over the {limit} byte limit"),
                ));
            }
            Ok(chunk) => collected.extend_from_slice(&chunk),
            Err(e) if is_body_timeout(&e) => {
                return Err(plain(
                    StatusCode::REQUEST_TIMEOUT,
                    "the request body did not arrive in time",
                ));
            }
            Err(e) => {
                return Err(plain(
                    StatusCode::BAD_REQUEST,
                    &format!("cannot read the request body: {e}"),
                ));
            }
        }
    }
    Ok(collected.freeze())
}

/// The parts of a JSON-RPC request these checks read.
pub(crate) struct Incoming<'a> {
    pub method: &'a str,
    pub id: Value,
}

impl<'a> Incoming<'a> {
    /// `Some` for a request (a method and an id); notifications and answers are not requests.
    pub(crate) fn of(message: &'a Value) -> Option<Incoming<'a>> {
        let method = message.get("method")?.as_str()?;
        let id = message.get("id").filter(|id| !id.is_null())?.clone();
        Some(Incoming { method, id })
    }
}

/// JSON that rmcp cannot take as a client message: invalid params (-32602) for a method of the
/// MCP schema whose params do not have its shape (rmcp would answer "method not found", or 415
/// when the message does not parse at all), invalid request (-32600) for anything else.
fn not_a_message(message: &Value) -> Option<Response> {
    if plain_tool_call(message) {
        return None;
    }
    let parsed = serde_json::from_value::<ClientJsonRpcMessage>(message.clone());
    let request = Incoming::of(message);
    let schema_method = request
        .as_ref()
        .is_some_and(|r| SCHEMA_METHODS.contains(&r.method));
    let id = request.as_ref().map_or(Value::Null, |r| r.id.clone());
    // The MCP schema's params are by name; positional ones would be read into its fields in order.
    if schema_method && message.get("params").is_some_and(Value::is_array) {
        return Some(invalid_params(request.as_ref(), id));
    }
    match parsed {
        Ok(JsonRpcMessage::Request(parsed))
            if schema_method && matches!(parsed.request, ClientRequest::CustomRequest(_)) =>
        {
            Some(invalid_params(request.as_ref(), id))
        }
        Ok(_) => None,
        Err(_) if schema_method => Some(invalid_params(request.as_ref(), id)),
        Err(e) => Some(rpc_error(
            StatusCode::BAD_REQUEST,
            id,
            -32600,
            &format!("Invalid request: not a JSON-RPC message an MCP client sends ({e})"),
        )),
    }
}

/// Whether `message` is a `tools/call` request in the plain shape clients send: `jsonrpc`
/// "2.0", an integer or string id, and params of a `name` string and an optional `arguments`
/// object, nothing more. rmcp always takes such a request, so it needs no trial parse into
/// rmcp's model (which tries every request type in turn: the dearest step of this check).
pub(crate) fn plain_tool_call(message: &Value) -> bool {
    let Some(message) = message.as_object() else {
        return false;
    };
    let id_ok = |id: &Value| id.is_string() || id.as_i64().is_some();
    let params_ok = |params: &Value| {
        params.as_object().is_some_and(|params| {
            params.iter().all(|(key, value)| match key.as_str() {
                "name" => value.is_string(),
                "arguments" => value.is_object(),
                _ => false,
            }) && params.contains_key("name")
        })
    };
    message.len() == 4
        && message.iter().all(|(key, value)| match key.as_str() {
            "jsonrpc" => value == "2.0",
            "id" => id_ok(value),
            "method" => value == "tools/call",
            "params" => params_ok(value),
            _ => false,
        })
}

fn invalid_params(request: Option<&Incoming<'_>>, id: Value) -> Response {
    let method = request.map_or("", |r| r.method);
    rpc_error(
        StatusCode::OK,
        id,
        -32602,
        &format!(
            "Invalid params: the params of {method} do not have the shape the MCP schema gives"
        ),
    )
}

fn rpc_error(status: StatusCode, id: Value, code: i64, message: &str) -> Response {
    (
        status,
        axum::Json(
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
        ),
    )
        .into_response()
}

fn plain(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(json!({"error": message}))).into_response()
}

#[cfg(test)]
#[path = "front_tests.rs"]
mod tests;
