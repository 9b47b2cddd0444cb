//! Writing the answer to one request, in either era.
//!
//! The wire is chosen per request before the first byte, as the spec lets a server choose for a
//! client that accepts both: an answer ready within [`FIRST_WAIT`] with nothing sent before it
//! goes out as one `application/json` body; otherwise the answer is a stream of server-sent
//! events: what the handler sends the client meanwhile (progress on its token, in a 2026-07-28
//! request also its log messages and listen notifications), then the answer.
//!
//! A session-era stream opens with a priming event and numbers its events `i/N` (`N` the
//! stream's number in its session), and is kept by its session (`AnswerLog`) so that a client
//! whose connection broke resumes it with `Last-Event-ID`; a stateless one has neither (there
//! is no session to resume in). A session-era answer is an HTTP 200 whatever it says; a stateless error answered as
//! JSON carries the status the 2026-07-28 transport gives its code. A client's
//! `notifications/cancelled` or the end of the session ends the stream without the answer.

use std::pin::Pin;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use rmcp::model::{ErrorCode, RequestId, ServerJsonRpcMessage};
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::session::{AnswerLog, Session};
use crate::sse::{self, SseBody};

/// How long an answer may take to go out whole as JSON.
const FIRST_WAIT: Duration = Duration::from_secs(1);
/// Events written but not yet taken by the connection: past it the handler's messages wait
/// (a stateless stream, at most [`SLOW_READER`]) or the connection is let go (a session's
/// stream, which its client resumes).
const STREAM_QUEUE: usize = 16;
/// How long a stateless stream waits for a client that reads nothing before it ends.
const SLOW_READER: Duration = Duration::from_secs(30);

/// The JSON-RPC message that answers a request.
pub(crate) enum Reply {
    /// Boxed: rmcp's message is some 500 bytes, moved through the answer's futures.
    Message(Box<ServerJsonRpcMessage>),
    /// A tool result as the upstream wrote it (`calls::as_written`).
    AsWritten {
        id: RequestId,
        result: Box<RawValue>,
    },
}

impl Reply {
    fn to_json(&self) -> serde_json::Result<Vec<u8>> {
        /// A JSON-RPC response whose result is written verbatim.
        #[derive(serde::Serialize)]
        struct Response<'a> {
            jsonrpc: &'static str,
            id: &'a RequestId,
            result: &'a RawValue,
        }
        match self {
            Reply::Message(message) => serde_json::to_vec(message),
            Reply::AsWritten { id, result } => serde_json::to_vec(&Response {
                jsonrpc: "2.0",
                id,
                result,
            }),
        }
    }

    /// The status a stateless answer carries: 400 for an unsupported version, a missing
    /// capability or a header mismatch (and invalid params when the request's `_meta` lacked
    /// what the revision requires), 404 for an unknown method, else 200.
    fn stateless_status(&self, meta_malformed: bool) -> StatusCode {
        let Reply::Message(message) = self else {
            return StatusCode::OK;
        };
        let ServerJsonRpcMessage::Error(error) = message.as_ref() else {
            return StatusCode::OK;
        };
        match error.error.code {
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
            | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
            | ErrorCode::HEADER_MISMATCH => StatusCode::BAD_REQUEST,
            ErrorCode::INVALID_PARAMS if meta_malformed => StatusCode::BAD_REQUEST,
            ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
            _ => StatusCode::OK,
        }
    }
}

/// How an answer's stream is framed.
#[derive(Clone, Copy)]
pub(crate) enum Framing {
    /// Stream `N` of a session: a priming event, events numbered `i/N`.
    Session { stream: u64 },
    /// A 2026-07-28 request: plain events; `meta_malformed` when its `_meta` lacks keys the
    /// revision requires.
    Stateless { meta_malformed: bool },
}

type ReplyFuture = Pin<Box<dyn Future<Output = Reply> + Send>>;

/// A request being answered.
pub(crate) struct Pending<'a> {
    /// The handler's answer (`Detached`: it goes on by itself when dropped).
    pub reply: ReplyFuture,
    /// What the handler sends the client on this request's stream meanwhile (each message's
    /// JSON).
    pub events: mpsc::UnboundedReceiver<Bytes>,
    /// Cancelled by the client's `notifications/cancelled`: no answer is sent.
    pub cancel: CancellationToken,
    /// Cancelled when the session (or the gateway) ends: no answer is sent.
    pub ended: CancellationToken,
    pub framing: Framing,
    /// The session whose answer streams can be resumed (`Last-Event-ID`); `None`: stateless.
    pub session: Option<&'a Session>,
    /// Lives as long as the answer is being written.
    pub guard: Box<dyn Send + Sync>,
}

/// Writes `pending`'s answer: JSON when it is ready soon and alone, else a stream.
pub(crate) async fn respond(pending: Pending<'_>) -> Response {
    let Pending {
        mut reply,
        mut events,
        cancel,
        ended,
        framing,
        session,
        guard,
    } = pending;
    let mut early = Vec::new();
    let done = tokio::select! {
        biased;
        reply = &mut reply => Some(reply),
        Some(event) = events.recv() => {
            early.push(event);
            None
        }
        () = cancel.cancelled() => None,
        () = ended.cancelled() => None,
        () = tokio::time::sleep(FIRST_WAIT) => None,
    };
    while let Ok(event) = events.try_recv() {
        early.push(event);
    }
    let stopped = || cancel.is_cancelled() || ended.is_cancelled();
    if let Some(reply) = &done
        && early.is_empty()
        && !stopped()
    {
        return json_response(reply, framing);
    }
    let mut framer = Framer::new(framing);
    let mut first = framer.priming();
    for event in &early {
        first.push(framer.message(event));
    }
    if let Some(reply) = &done
        && !stopped()
    {
        first.extend(framer.reply(reply));
    }
    let (sender, source) = mpsc::channel(STREAM_QUEUE);
    let outlet = match (session, &framing) {
        (Some(session), Framing::Session { stream }) => {
            Outlet::Kept(session.answer_log(*stream, &first, sender))
        }
        _ => Outlet::Direct(sender),
    };
    // Dropped at once when the answer is already in `first`: the stream ends after it.
    if done.is_none() {
        tokio::spawn(stream_rest(
            reply,
            events,
            outlet,
            framer,
            [cancel, ended.clone()],
        ));
    }
    sse::response(SseBody::new(first, Some(source), ended, guard))
}

/// Where an answer stream's events go.
enum Outlet {
    /// To the connection that asked; when it goes away, so does the answer.
    Direct(mpsc::Sender<Bytes>),
    /// Kept for resumption, and to whichever connection holds the stream.
    Kept(AnswerLog),
}

impl Outlet {
    /// False when no one will ever read what follows: the connection closed, or its client
    /// read nothing for [`SLOW_READER`] while the queue was full.
    async fn send(&self, event: Bytes) -> bool {
        match self {
            Outlet::Direct(sender) => {
                matches!(
                    tokio::time::timeout(SLOW_READER, sender.send(event)).await,
                    Ok(Ok(()))
                )
            }
            Outlet::Kept(log) => {
                log.write(event);
                true
            }
        }
    }

    /// Resolves when the client went away for good (a kept stream can be resumed: never).
    async fn abandoned(&self) {
        match self {
            Outlet::Direct(sender) => sender.closed().await,
            Outlet::Kept(_) => std::future::pending().await,
        }
    }
}

/// Sends what the handler sends meanwhile, then its answer, until the client cancels, the
/// session ends, or the client goes away for good (the handler goes on by itself: `Detached`;
/// a stateless one is cancelled by its guard). A session's stream is written to its end even
/// with no connection reading it, so that the client can resume it.
async fn stream_rest(
    mut reply: ReplyFuture,
    mut events: mpsc::UnboundedReceiver<Bytes>,
    outlet: Outlet,
    mut framer: Framer,
    [cancel, ended]: [CancellationToken; 2],
) {
    loop {
        tokio::select! {
            biased;
            () = cancel.cancelled() => return,
            () = ended.cancelled() => return,
            answer = &mut reply => {
                // What the handler sent before it answered goes first.
                while let Ok(event) = events.try_recv() {
                    if !outlet.send(framer.message(&event)).await {
                        return;
                    }
                }
                if let Some(event) = framer.reply(&answer) {
                    outlet.send(event).await;
                }
                return;
            }
            Some(event) = events.recv() => {
                if !outlet.send(framer.message(&event)).await {
                    return;
                }
            }
            () = outlet.abandoned() => return,
        }
    }
}

/// Numbers the events of one answer stream.
struct Framer {
    framing: Framing,
    next: u64,
}

impl Framer {
    fn new(framing: Framing) -> Framer {
        Framer { framing, next: 0 }
    }

    fn priming(&mut self) -> Vec<Bytes> {
        match self.framing {
            Framing::Session { stream } => vec![sse::priming(&self.next_id(stream))],
            Framing::Stateless { .. } => Vec::new(),
        }
    }

    fn next_id(&mut self, stream: u64) -> String {
        let id = format!("{}/{stream}", self.next);
        self.next += 1;
        id
    }

    /// The event carrying one message's JSON, numbered in a session's stream.
    fn message(&mut self, json: &[u8]) -> Bytes {
        let id = match self.framing {
            Framing::Session { stream } => Some(self.next_id(stream)),
            Framing::Stateless { .. } => None,
        };
        sse::event(json, id.as_deref())
    }

    fn reply(&mut self, reply: &Reply) -> Option<Bytes> {
        match reply.to_json() {
            Ok(json) => Some(self.message(&json)),
            Err(e) => {
                tracing::error!("cannot serialize an answer: {e}");
                None
            }
        }
    }
}

/// A whole answer as one JSON body.
fn json_response(reply: &Reply, framing: Framing) -> Response {
    let status = match framing {
        Framing::Session { .. } => StatusCode::OK,
        Framing::Stateless { meta_malformed } => reply.stateless_status(meta_malformed),
    };
    match reply.to_json() {
        Ok(json) => {
            let mut response = Response::new(Body::from(json));
            *response.status_mut() = status;
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        Err(e) => {
            tracing::error!("cannot serialize an answer: {e}");
            let mut response = Response::new(Body::empty());
            *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
            response
        }
    }
}

#[cfg(test)]
#[path = "answer_tests.rs"]
mod tests;
