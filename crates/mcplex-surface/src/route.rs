//! One MCP route over streamable HTTP, in both protocol eras: the one path every MCP request
//! takes. Read (the body, within its limit and deadline) → check (`wire.rs`: the headers rmcp's
//! transport checks, the era) → decode once (`decode.rs`) → dispatch in place (`dispatch.rs`,
//! the surface's own handler) → encode once and write (`answer.rs`).
//!
//! Session era: `initialize` opens a session (past `max_sessions` 503, past the caller's
//! `max_sessions_per_caller` 429), every other message names it in `Mcp-Session-Id` (400
//! without, 404 for one this route does not know or another credential opened); requests are
//! answered on their own POST, notifications and the client's answers get 202; GET opens the
//! session's stream (`common_stream.rs`), DELETE ends it (200, also for a session already gone).
//! A duplicate id in flight in a session is refused (-32600, HTTP 400): the two answers could
//! not be told apart. A client that goes away does not stop a session-era call.
//!
//! Stateless era (2026-07-28, `stateless.rs`): each request is answered on its own POST with a
//! peer of its own, notifications are accepted and ignored, GET and DELETE are 405.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{HeaderValue, Method, Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use rmcp::Peer;
use rmcp::model::{
    CallToolRequest, ClientJsonRpcMessage, ClientNotification, ClientRequest, GetMeta,
    JsonRpcMessage, RequestId,
};
use rmcp::service::RoleServer;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::answer::{self, Framing, Pending};
use crate::connection::is_body_timeout;
use crate::decode::{self, PlainCall, rpc_error};
use crate::detached::Detached;
use crate::dispatch::{self, Call};
use crate::event_id::EventId;
use crate::json_values;
use crate::session::{Begun, MAX_IN_FLIGHT, NotBegun, Session};
use crate::session_owners::Owner;
use crate::sessions::{SessionBook, Sessions};
use crate::sse::{self, SseBody};
use crate::{traced, wire};

const SESSION_HEADER: &str = "mcp-session-id";
const LAST_EVENT_ID: &str = "last-event-id";

/// A server the routes serve: rmcp's handler, and what it does when a session's client says
/// it is ready.
pub(crate) trait Surface: rmcp::ServerHandler + Clone + Send + Sync + 'static {
    /// The client of a session sent `notifications/initialized`; `extensions` hold the HTTP
    /// request's parts.
    fn session_ready(&self, peer: Peer<RoleServer>, extensions: &rmcp::model::Extensions);
}

/// One MCP route. Cloned for every request, so it is one shared allocation.
pub(crate) struct Route<S>(Arc<Inner<S>>);

struct Inner<S> {
    surface: S,
    sessions: Arc<Sessions>,
    book: Arc<SessionBook>,
    max_body_bytes: usize,
    /// Cancelled at shutdown: every stream ends.
    shutdown: CancellationToken,
}

impl<S> Clone for Route<S> {
    fn clone(&self) -> Self {
        Route(self.0.clone())
    }
}

impl<S: Surface> Route<S> {
    pub(crate) fn new(
        surface: S,
        book: Arc<SessionBook>,
        max_body_bytes: usize,
        shutdown: CancellationToken,
    ) -> Route<S> {
        Route(Arc::new(Inner {
            surface,
            sessions: Sessions::new(book.clone(), shutdown.clone()),
            book,
            max_body_bytes,
            shutdown,
        }))
    }

    /// The answer to one request on this route.
    pub(crate) async fn serve(self, request: Request<Body>) -> Response {
        let owner = owner_of(&request);
        // Another credential's session is answered as an unknown one.
        if let Some(session) = request.headers().get(SESSION_HEADER)
            && let Ok(session) = session.to_str()
            && !self.0.book.owners.usable_by(session, &owner)
        {
            return unknown_session();
        }
        let (parts, body) = request.into_parts();
        if let Err(refusal) = wire::host_readable(&parts) {
            return refusal;
        }
        match parts.method {
            Method::POST => self.post(parts, body, owner).await,
            Method::GET => self.get(&parts),
            Method::DELETE => self.delete(&parts),
            _ => {
                let mut refusal =
                    (StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed").into_response();
                refusal
                    .headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
                refusal
            }
        }
    }

    async fn post(self, mut parts: http::request::Parts, body: Body, owner: Owner) -> Response {
        let bytes = match read_body(body, self.0.max_body_bytes).await {
            Ok(bytes) => bytes,
            Err(refusal) => return refusal,
        };
        if json_values::more_values_than(&bytes, json_values::MAX_VALUES) {
            let message = format!(
                "Invalid request: the body holds more than {} JSON values, more than any MCP request needs",
                json_values::MAX_VALUES
            );
            return rpc_error(StatusCode::PAYLOAD_TOO_LARGE, Value::Null, -32600, &message);
        }
        // The commonest request, read straight into its parts; the same checks as below.
        if let Some(session) = session_id(&parts)
            && wire::plain_session_headers(&parts.headers)
            && let Some(call) = PlainCall::read(&bytes)
        {
            if let Err(refusal) = wire::post_media_types(&parts.headers) {
                return refusal;
            }
            let Some(session) = self.0.sessions.get(session) else {
                return unknown_session();
            };
            let span = traced::arrived(&mut parts, "tools/call", Some(&call.params.name), None);
            let request = ClientRequest::CallToolRequest(CallToolRequest::new(call.params));
            let response = self.request(&session, parts, call.id, request).await;
            mcplex_trace::answered(&span, response.status().as_u16());
            return response;
        }
        let value: Value = match serde_json::from_slice(&bytes) {
            Ok(value) => value,
            Err(e) => {
                let message = format!("Parse error: the body is not JSON ({e})");
                return rpc_error(StatusCode::BAD_REQUEST, Value::Null, -32700, &message);
            }
        };
        let message = match decode::message(&value) {
            Ok(message) => message,
            Err(refusal) => return refusal,
        };
        if let Err(refusal) = wire::post_media_types(&parts.headers) {
            return refusal;
        }
        let classified = match wire::classify_post(&parts.headers, &value) {
            Ok(classified) => classified,
            Err(refusal) => return refusal,
        };
        let span = traced::arrived_message(&mut parts, &value);
        drop(value);
        let response = if classified.era.is_stateless() {
            crate::stateless::post(
                &self.0.surface,
                parts,
                message,
                classified,
                &self.0.shutdown,
            )
            .await
        } else {
            self.session_post(parts, message, owner).await
        };
        if let Some(span) = span {
            mcplex_trace::answered(&span, response.status().as_u16());
        }
        response
    }

    /// A session-era message: `initialize` opens a session, anything else is for the one it
    /// names.
    async fn session_post(
        &self,
        parts: http::request::Parts,
        message: ClientJsonRpcMessage,
        owner: Owner,
    ) -> Response {
        let Some(id) = session_id(&parts) else {
            return match message {
                JsonRpcMessage::Request(request)
                    if matches!(request.request, ClientRequest::InitializeRequest(_)) =>
                {
                    self.initialize(parts, request.id, request.request, owner)
                        .await
                }
                _ => session_required(),
            };
        };
        let Some(session) = self.0.sessions.get(id) else {
            return unknown_session();
        };
        match message {
            JsonRpcMessage::Request(request) => {
                self.request(&session, parts, request.id, request.request)
                    .await
            }
            JsonRpcMessage::Notification(notification) => {
                match notification.notification {
                    ClientNotification::CancelledNotification(cancelled) => {
                        if let Some(id) = &cancelled.params.request_id {
                            session.cancel(id);
                        }
                    }
                    ClientNotification::InitializedNotification(_) if session.first_ready() => {
                        let mut extensions = rmcp::model::Extensions::new();
                        extensions.insert(parts);
                        self.0
                            .surface
                            .session_ready(session.peer.clone(), &extensions);
                    }
                    ClientNotification::InitializedNotification(_) => {}
                    other => session.forward(ClientJsonRpcMessage::notification(other)),
                }
                accepted()
            }
            answer => {
                session.forward(answer);
                accepted()
            }
        }
    }

    /// Opens a session and answers its `initialize` in it.
    async fn initialize(
        &self,
        parts: http::request::Parts,
        id: RequestId,
        request: ClientRequest,
        owner: Owner,
    ) -> Response {
        let book = &self.0.book;
        if book.full_for(&owner) {
            let message = format!(
                "too many open sessions (max_sessions {}); close unused sessions or retry later",
                book.max()
            );
            return retry_later(StatusCode::SERVICE_UNAVAILABLE, id, &message);
        }
        let Some(place) = book.owners.reserve(&owner) else {
            let message = format!(
                "too many open sessions for this credential (max_sessions_per_caller {}); end unused ones (DELETE with their Mcp-Session-Id) or retry later",
                book.owners.max_per_caller()
            );
            return retry_later(StatusCode::TOO_MANY_REQUESTS, id, &message);
        };
        let Some(session) = self.0.sessions.start(self.0.surface.clone(), place) else {
            let message = format!("too many open sessions (max_sessions {})", book.max());
            return retry_later(StatusCode::SERVICE_UNAVAILABLE, id, &message);
        };
        let mut response = self.request(&session, parts, id, request).await;
        if let Ok(value) = HeaderValue::from_str(&session.id) {
            response.headers_mut().insert(SESSION_HEADER, value);
        }
        response
    }

    /// Answers request `id` in `session`.
    async fn request(
        &self,
        session: &Session,
        parts: http::request::Parts,
        id: RequestId,
        request: ClientRequest,
    ) -> Response {
        // A stream of the 2026-07-28 revision, which has no sessions: served in one, it would
        // keep the session from ever being idle, with no connection held.
        if matches!(request, ClientRequest::SubscriptionsListenRequest(_)) {
            return session_has_no_listen(&id);
        }
        let progress = request.get_meta().get_progress_token();
        let begun = match session.begin(&id, progress) {
            Ok(begun) => begun,
            Err(NotBegun::SameId) => return already_in_flight(&id),
            Err(NotBegun::Busy) => {
                let message = format!(
                    "too many requests in flight in this session (at most {MAX_IN_FLIGHT}); retry when one has ended"
                );
                return retry_later(StatusCode::TOO_MANY_REQUESTS, id, &message);
            }
        };
        let Begun {
            cancel,
            events,
            stream,
            held,
        } = begun;
        let call = Call {
            id,
            request,
            parts,
            peer: session.peer.clone(),
            cancel: cancel.clone(),
            held: Some(held),
        };
        // Awaited here, but a client that goes away does not stop the call, which keeps its
        // place in the session (a cancellation reaches it, the session is not idle) until done.
        let reply = Detached::new(dispatch::run(self.0.surface.clone(), call));
        answer::respond(Pending {
            reply: Box::pin(reply),
            events,
            // A child of the session's end.
            stop: cancel,
            ended: session.ended.clone(),
            framing: Framing::Session { session, stream },
            guard: Box::new(()),
        })
        .await
    }

    /// Opens a session's GET stream, or resumes it after `Last-Event-ID`.
    fn get(&self, parts: &http::request::Parts) -> Response {
        if let Err(refusal) = wire::get_media_types(&parts.headers) {
            return refusal;
        }
        if let Err(refusal) = wire::get_or_delete_version(&parts.headers) {
            return refusal;
        }
        let Some(id) = session_id(parts) else {
            return session_required();
        };
        let Some(session) = self.0.sessions.get(id) else {
            return unknown_session();
        };
        let resume_after = match parts.headers.get(LAST_EVENT_ID) {
            None => None,
            Some(id) => match id.to_str().ok().and_then(EventId::parse) {
                Some(id) => Some(id),
                // An id no stream of ours wrote: a stream that ends at once, so that the
                // client does not retry it.
                None => return sse::response(SseBody::just(Vec::new())),
            },
        };
        let after = match resume_after {
            Some(EventId::Answer { stream, index }) => {
                return resume_answer(&session, stream, index);
            }
            Some(EventId::Common(after)) => Some(after),
            None => None,
        };
        let (stream, held) = session.open_get(after);
        let mut response = sse::response(SseBody::new(
            stream.first,
            Some(stream.source),
            stream.end,
            Box::new(held),
        ));
        // Resumed where it left off: its connection may be closed to make room for others.
        response
            .extensions_mut()
            .insert(crate::connection::Resumable);
        response
    }

    /// Ends a session.
    fn delete(&self, parts: &http::request::Parts) -> Response {
        if let Err(refusal) = wire::get_or_delete_version(&parts.headers) {
            return refusal;
        }
        let Some(id) = session_id(parts) else {
            return session_required();
        };
        self.0.sessions.close(id);
        StatusCode::OK.into_response()
    }
}

/// Answer stream `stream` resumed after its event `index`: the events since, then the rest
/// while the answer is being written; an empty stream for one not kept.
fn resume_answer(session: &Session, stream: u64, index: u64) -> Response {
    match session.resume_answer(stream, index) {
        Some((events, Some(rest))) => sse::response(SseBody::new(
            events,
            Some(rest),
            session.ended.clone(),
            Box::new(()),
        )),
        Some((events, None)) => sse::response(SseBody::just(events)),
        None => sse::response(SseBody::just(Vec::new())),
    }
}

fn owner_of(request: &Request<Body>) -> Owner {
    request
        .extensions()
        .get::<crate::Caller>()
        .and_then(|caller| caller.token.clone())
}

fn session_id(parts: &http::request::Parts) -> Option<&str> {
    parts
        .headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
}

fn accepted() -> Response {
    StatusCode::ACCEPTED.into_response()
}

fn session_required() -> Response {
    (
        StatusCode::BAD_REQUEST,
        "Bad Request: Session ID is required",
    )
        .into_response()
}

/// What a request naming a session this route does not know gets, also given to a credential
/// that did not open the session it names.
fn unknown_session() -> Response {
    (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response()
}

fn retry_later(status: StatusCode, id: RequestId, message: &str) -> Response {
    let id = serde_json::to_value(id).unwrap_or(Value::Null);
    let mut refusal = rpc_error(status, id, -32000, message);
    refusal
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    refusal
}

/// `subscriptions/listen` sent in a session (a 2025-era client that asked for the 2026-07-28
/// revision in its `initialize`): method not found, as the session's revision has no such method.
fn session_has_no_listen(id: &RequestId) -> Response {
    let id = serde_json::to_value(id).unwrap_or(Value::Null);
    let message = "Method not found: subscriptions/listen belongs to the 2026-07-28 revision, which has no sessions; a session is told of changes on its GET stream";
    rpc_error(StatusCode::OK, id, -32601, message)
}

fn already_in_flight(id: &RequestId) -> Response {
    let id = serde_json::to_value(id).unwrap_or(Value::Null);
    let message = format!(
        "Invalid request: id {id} is already in flight in this session; use a new id for each request"
    );
    rpc_error(StatusCode::BAD_REQUEST, id, -32600, &message)
}

impl<S: Surface> tower_service::Service<Request<Body>> for Route<S> {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    /// Nested at its path, the route answers that path alone: anything beneath it
    /// (`/mcp//p/ro`, `/mcp/x`) is unknown, not the route without its profile's narrowing.
    fn call(&mut self, request: Request<Body>) -> Self::Future {
        if !matches!(request.uri().path(), "" | "/") {
            return Box::pin(async { Ok(plain(StatusCode::NOT_FOUND, "no such path")) });
        }
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
                let message = format!("request body over the {limit} byte limit");
                return Err(plain(StatusCode::PAYLOAD_TOO_LARGE, &message));
            }
            Ok(chunk) => collected.extend_from_slice(&chunk),
            Err(e) if is_body_timeout(&e) => {
                let message = "the request body did not arrive in time";
                return Err(plain(StatusCode::REQUEST_TIMEOUT, message));
            }
            Err(e) => {
                let message = format!("cannot read the request body: {e}");
                return Err(plain(StatusCode::BAD_REQUEST, &message));
            }
        }
    }
    Ok(collected.freeze())
}

fn plain(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(serde_json::json!({"error": message}))).into_response()
}
