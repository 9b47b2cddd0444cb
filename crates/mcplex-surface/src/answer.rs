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

use crate::event_id::EventId;
use crate::session::{AnswerLog, Session};
use crate::sse::{self, SseBody};

/// How long an answer may take to go out whole as JSON.
const FIRST_WAIT: Duration = Duration::from_secs(1);
/// Events written but not yet taken by the connection: past it the writer waits for its
/// client to read.
const STREAM_QUEUE: usize = 16;
/// How long a stateless stream waits for a client that reads nothing before it ends (which
/// cancels the request: there is no session to resume it in).
const SLOW_READER: Duration = Duration::from_secs(30);
/// How long a session's stream waits for a client that reads nothing before its connection is
/// let go: the answer is written on, kept, and the client resumes it with `Last-Event-ID`.
const STALLED_CONNECTION: Duration = Duration::from_secs(5);

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

/// Whose answer it is, which decides how its stream is framed and whether it can be resumed.
pub(crate) enum Framing<'a> {
    /// Stream `stream` of `session`: a priming event, events numbered `i/N`, kept by the
    /// session for `Last-Event-ID`.
    Session { session: &'a Session, stream: u64 },
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
    pub events: mpsc::Receiver<Bytes>,
    /// Cancelled when no answer is to be sent: by the client's `notifications/cancelled`, or
    /// because the session (or the gateway) ended. One token, a child of `ended` where both
    /// exist, so a wait watches one.
    pub stop: CancellationToken,
    /// Cancelled when the session (or the gateway) ends: the stream's body ends.
    pub ended: CancellationToken,
    pub framing: Framing<'a>,
    /// Lives as long as the answer is being written.
    pub guard: Box<dyn Send + Sync>,
}

/// Writes `pending`'s answer: JSON when it is ready soon and alone, else a stream.
pub(crate) async fn respond(pending: Pending<'_>) -> Response {
    let Pending {
        mut reply,
        mut events,
        stop,
        ended,
        framing,
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
        () = stop.cancelled() => None,
        () = tokio::time::sleep(FIRST_WAIT) => None,
    };
    while let Ok(event) = events.try_recv() {
        early.push(event);
    }
    let stopped = || stop.is_cancelled();
    if let Some(reply) = &done
        && early.is_empty()
        && !stopped()
    {
        return json_response(reply, &framing);
    }
    let mut framer = Framer::new(&framing);
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
    let outlet = match framing {
        Framing::Session { session, stream } => {
            Outlet::Kept(session.answer_log(stream, &first, sender))
        }
        Framing::Stateless { .. } => Outlet::Direct(sender),
    };
    // Dropped at once when the answer is already in `first`: the stream ends after it.
    if done.is_none() {
        tokio::spawn(stream_rest(reply, events, outlet, framer, stop));
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
    /// read nothing for [`SLOW_READER`] while the queue was full. A kept stream's connection
    /// in that state is let go sooner ([`STALLED_CONNECTION`]); the stream goes on.
    async fn send(&self, event: Bytes) -> bool {
        match self {
            Outlet::Direct(sender) => delivered(sender, event, SLOW_READER).await,
            Outlet::Kept(log) => {
                if let Some(connection) = log.keep(&event)
                    && !delivered(&connection, event, STALLED_CONNECTION).await
                {
                    log.let_go(&connection);
                }
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

/// Whether `event` reached `connection`'s queue within `patience`.
async fn delivered(connection: &mpsc::Sender<Bytes>, event: Bytes, patience: Duration) -> bool {
    matches!(
        tokio::time::timeout(patience, connection.send(event)).await,
        Ok(Ok(()))
    )
}

/// Sends what the handler sends meanwhile, then its answer, until the client cancels, the
/// session ends, or the client goes away for good (the handler goes on by itself: `Detached`;
/// a stateless one is cancelled by its guard). A session's stream is written to its end even
/// with no connection reading it, so that the client can resume it.
async fn stream_rest(
    reply: ReplyFuture,
    events: mpsc::Receiver<Bytes>,
    outlet: Outlet,
    framer: Framer,
    stop: CancellationToken,
) {
    // Watched around the whole writing, so that a wait on a slow reader ends with them too.
    tokio::select! {
        biased;
        () = stop.cancelled() => {}
        () = write_rest(reply, events, &outlet, framer) => {}
    }
}

/// What the handler sends meanwhile, then its answer, to `outlet` while someone may read it.
async fn write_rest(
    mut reply: ReplyFuture,
    mut events: mpsc::Receiver<Bytes>,
    outlet: &Outlet,
    mut framer: Framer,
) {
    loop {
        tokio::select! {
            biased;
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
    /// The stream's number in its session (`None`: a stateless stream, not numbered).
    stream: Option<u64>,
    next: u64,
}

impl Framer {
    fn new(framing: &Framing<'_>) -> Framer {
        let stream = match framing {
            Framing::Session { stream, .. } => Some(*stream),
            Framing::Stateless { .. } => None,
        };
        Framer { stream, next: 0 }
    }

    fn priming(&mut self) -> Vec<Bytes> {
        self.next_id()
            .map(|id| sse::priming(&id))
            .into_iter()
            .collect()
    }

    fn next_id(&mut self) -> Option<String> {
        let id = EventId::Answer {
            stream: self.stream?,
            index: self.next,
        };
        self.next += 1;
        Some(id.to_string())
    }

    /// The event carrying one message's JSON, numbered in a session's stream.
    fn message(&mut self, json: &[u8]) -> Bytes {
        let id = self.next_id();
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
fn json_response(reply: &Reply, framing: &Framing<'_>) -> Response {
    let status = match framing {
        Framing::Session { .. } => StatusCode::OK,
        Framing::Stateless { meta_malformed } => reply.stateless_status(*meta_malformed),
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
