//! The fast path for the commonest request: a plain `tools/call` (`plain.rs`)
//! POSTed in an initialized session-era session. rmcp would hand it to the session's worker task
//! through two channels and stream the answer back through a third; here it is answered
//! directly, by the code rmcp's worker runs (`Service::handle_request` of the route's surface,
//! so validation, scope, audit, metrics, error mapping and result shaping are the same code).
//!
//! The wire is chosen per request before the first byte, as the spec lets a server choose for a
//! client that accepts both: an answer ready within [`FIRST_WAIT`] goes out as one
//! `application/json` body (the JSON-RPC message rmcp would put in its SSE event, same bytes,
//! but for a result rmcp would write unchanged, which goes out as the upstream wrote it:
//! [`Untouched`]); a slower one is written as the SSE answer rmcp writes: its headers and priming
//! event at once, keep-alive comments like rmcp's, then the answer's event. JSON loses nothing: this stream
//! never carries anything but the answer, since rmcp's session worker does not know the request
//! and routes whatever the handler sends the client meanwhile (log messages, sampling,
//! elicitation) to the session's standalone GET stream, and a plain call has no progress token.
//!
//! Anything the fast path cannot do exactly like rmcp goes to rmcp unchanged: other methods,
//! `_meta` (progress tokens, per-request versions), stateless (2026-07-28) requests, headers rmcp
//! would refuse or check further (Accept, Content-Type, Host, the protocol version, SEP-2243
//! headers), unknown, closed or uninitialized sessions. Kept like rmcp: the handler gets the
//! session's peer (so sampling, elicitation and log messages reach the client as they do from the
//! worker), a client's `notifications/cancelled` cancels the call and its answer is never sent
//! (the stream stays open until the session ends), a session that ends ends the stream without
//! an answer, and a client that goes away does not stop the call.
//!
//! Not like rmcp: the answer streams are numbered apart from rmcp's
//! ([`crate::sessions::FAST_STREAMS_FROM`]), and rmcp cannot resume them: a `GET` with their
//! `Last-Event-ID` gets rmcp's empty stream, as for any event id it does not know.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use futures::Stream;
use rmcp::model::{CallToolRequest, ClientRequest, RequestId, ServerJsonRpcMessage, ServerResult};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use serde_json::value::RawValue;
use tokio::time::Sleep;
use tokio_util::sync::CancellationToken;

use crate::detached::Detached;
use crate::plain::PlainCall;
use crate::sessions::{FastSession, Sessions};

const SESSION_HEADER: &str = "mcp-session-id";
/// How long an answer may take to go out with the headers in one write; a slower one is
/// streamed like rmcp's (headers and priming event first).
const FIRST_WAIT: Duration = Duration::from_secs(1);
/// rmcp's keep-alive comment and its interval (`StreamableHttpServerConfig::sse_keep_alive`).
const KEEP_ALIVE: &[u8] = b":\n\n";
const KEEP_ALIVE_EVERY: Duration = Duration::from_secs(15);

/// Put by `Front` into every request it hands to rmcp, so that the surface's `on_initialized`
/// can give the session's peer to the route's [`Sessions`].
#[derive(Clone)]
pub(crate) struct PeerBook(pub Arc<Sessions>);

/// Keeps the peer of the session that sent `notifications/initialized`, for the fast path.
pub(crate) fn remember_peer(context: &NotificationContext<RoleServer>) {
    let Some(parts) = context.extensions.get::<http::request::Parts>() else {
        return;
    };
    let (Some(book), Some(id)) = (
        parts.extensions.get::<PeerBook>(),
        parts
            .headers
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok()),
    ) else {
        return;
    };
    book.0.remember_peer(id, context.peer.clone());
}
/// Answers `call` in `session` with `surface`'s handler, as rmcp's session worker would.
/// `cancel` is the call's token (a client's `notifications/cancelled` cancels it).
pub(crate) async fn answer<S>(
    surface: S,
    parts: http::request::Parts,
    call: PlainCall,
    session: FastSession,
    cancel: CancellationToken,
) -> Response
where
    S: rmcp::ServerHandler + Clone + Send + Sync + 'static,
{
    let FastSession {
        peer,
        ended,
        stream,
        retry,
        open,
    } = session;
    let id = call.id.clone();
    let mut context = RequestContext::new(call.id, peer);
    context.ct = cancel.clone();
    context.extensions.insert(parts);
    let untouched = Untouched::default();
    context.extensions.insert(untouched.clone());
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(call.params));
    // Awaited here, but like the worker's task: a client that goes away does not stop the call.
    let mut task = Detached::new(async move {
        match rmcp::Service::<RoleServer>::handle_request(&surface, request, context).await {
            Ok(ServerResult::CallToolResult(_)) if let Some(result) = untouched.take() => {
                Reply::AsWritten { id, result }
            }
            Ok(result) => Reply::Message(Box::new(ServerJsonRpcMessage::response(result, id))),
            Err(error) => Reply::Message(Box::new(ServerJsonRpcMessage::error(error, Some(id)))),
        }
    });
    let events = Events { stream, retry };
    let early = tokio::select! {
        biased;
        done = &mut task => Some(done),
        () = tokio::time::sleep(FIRST_WAIT) => None,
    };
    let body = match early {
        Some(message) if !cancel.is_cancelled() && !ended.is_cancelled() => {
            drop(open);
            return json_response(&message);
        }
        early => {
            let answer = async move {
                let done = match early {
                    Some(done) => Some(done),
                    None => tokio::select! {
                        done = task => Some(done),
                        () = ended.cancelled() => None,
                    },
                };
                settle(done, &cancel, &ended).await
            };
            Answer::later(events, Box::pin(answer), open)
        }
    };
    sse_response(body)
}

/// Where the surface leaves a call's result as the upstream wrote it (`calls::as_written`), when
/// that text and rmcp's serialization of the result it also returns say the same: the answer
/// then carries the upstream's bytes, untouched and without a second serialization.
#[derive(Clone, Default)]
pub(crate) struct Untouched(Arc<std::sync::Mutex<Option<Box<RawValue>>>>);

impl Untouched {
    pub(crate) fn offer(&self, result: Box<RawValue>) {
        *self.lock() = Some(result);
    }

    fn take(&self) -> Option<Box<RawValue>> {
        self.lock().take()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Box<RawValue>>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The JSON-RPC message that answers a fast call.
enum Reply {
    /// Boxed: rmcp's message is some 500 bytes, moved through the answer's futures.
    Message(Box<ServerJsonRpcMessage>),
    /// A result as the upstream wrote it (see [`Untouched`]).
    AsWritten {
        id: RequestId,
        result: Box<RawValue>,
    },
}

impl Reply {
    fn to_json(&self) -> serde_json::Result<Vec<u8>> {
        /// A response as rmcp writes one, its result verbatim.
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
}

/// The answer to send once the call is over: none when the session ended meanwhile (the stream
/// ends), and none ever when the client cancelled the call (the stream stays open until the
/// session ends, as rmcp's does: it drops the answer of a cancelled request).
async fn settle(
    done: Option<Reply>,
    cancel: &CancellationToken,
    ended: &CancellationToken,
) -> Option<Reply> {
    if ended.is_cancelled() {
        return None;
    }
    if cancel.is_cancelled() {
        ended.cancelled().await;
        return None;
    }
    done
}

/// The SSE events of one answer stream, framed as rmcp frames them.
struct Events {
    stream: u64,
    retry: Option<Duration>,
}

impl Events {
    /// rmcp's priming event (none when it sends none).
    fn priming(&self) -> Bytes {
        let mut out = Vec::new();
        self.write_priming(&mut out);
        out.into()
    }

    fn write_priming(&self, out: &mut Vec<u8>) {
        if let Some(retry) = self.retry {
            out.extend_from_slice(
                format!(
                    "data: \nid: 0/{}\nretry: {}\n\n",
                    self.stream,
                    retry.as_millis()
                )
                .as_bytes(),
            );
        }
    }

    /// The answer's event: numbered after the priming event.
    fn write_message(&self, out: &mut Vec<u8>, message: &Reply) {
        let index = usize::from(self.retry.is_some());
        match message.to_json() {
            Ok(json) => {
                out.extend_from_slice(b"data: ");
                out.extend_from_slice(&json);
                out.extend_from_slice(format!("\nid: {index}/{}\n\n", self.stream).as_bytes());
            }
            Err(e) => tracing::error!("cannot serialize an answer: {e}"),
        }
    }

    fn message(&self, message: &Reply) -> Bytes {
        let mut out = Vec::new();
        self.write_message(&mut out, message);
        out.into()
    }
}

/// A whole answer as one JSON body, as rmcp writes a JSON answer (`json_response`).
fn json_response(message: &Reply) -> Response {
    match message.to_json() {
        Ok(json) => {
            let mut response = Response::new(Body::from(json));
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

fn sse_response(body: Answer) -> Response {
    let mut response = Response::new(Body::from_stream(body));
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

type Pending = Pin<Box<dyn Future<Output = Option<Reply>> + Send>>;

/// The body of a fast answer: all at once, or the priming event first and the answer later
/// (keep-alive comments meanwhile). It holds the session's stream open until it ends or is
/// dropped.
struct Answer {
    first: Option<Bytes>,
    later: Option<Later>,
    _open: crate::sessions::StreamOpen,
}

struct Later {
    events: Events,
    answer: Pending,
    keep_alive: Pin<Box<Sleep>>,
}

impl Answer {
    fn later(events: Events, answer: Pending, open: crate::sessions::StreamOpen) -> Answer {
        Answer {
            first: Some(events.priming()).filter(|b| !b.is_empty()),
            later: Some(Later {
                events,
                answer,
                keep_alive: Box::pin(tokio::time::sleep(KEEP_ALIVE_EVERY)),
            }),
            _open: open,
        }
    }
}

impl Stream for Answer {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if let Some(first) = self.first.take() {
            return Poll::Ready(Some(Ok(first)));
        }
        let Some(later) = self.later.as_mut() else {
            return Poll::Ready(None);
        };
        match later.answer.as_mut().poll(cx) {
            Poll::Ready(answer) => {
                let bytes = answer.map(|message| later.events.message(&message));
                self.later = None;
                Poll::Ready(bytes.map(Ok))
            }
            Poll::Pending => match later.keep_alive.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    let next = tokio::time::Instant::now() + KEEP_ALIVE_EVERY;
                    later.keep_alive.as_mut().reset(next);
                    Poll::Ready(Some(Ok(Bytes::from_static(KEEP_ALIVE))))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_as_written_goes_out_verbatim_in_rmcps_envelope() {
        let result = r#"{"content":[{"text":"a","type":"text"}], "extra" : 1.50}"#;
        let reply = |id| Reply::AsWritten {
            id,
            result: RawValue::from_string(result.to_owned()).expect("json"),
        };
        let json = |reply: Reply| String::from_utf8(reply.to_json().expect("json")).expect("utf-8");
        assert_eq!(
            json(reply(RequestId::Number(4))),
            format!(r#"{{"jsonrpc":"2.0","id":4,"result":{result}}}"#)
        );
        assert_eq!(
            json(reply(RequestId::String("a\"b".into()))),
            format!(r#"{{"jsonrpc":"2.0","id":"a\"b","result":{result}}}"#)
        );
        // rmcp's envelope is the same.
        let typed = ServerJsonRpcMessage::response(ServerResult::empty(()), RequestId::Number(4));
        let typed = String::from_utf8(serde_json::to_vec(&typed).expect("json")).expect("utf-8");
        assert!(
            typed.starts_with(r#"{"jsonrpc":"2.0","id":4,"result":"#),
            "{typed}"
        );
    }

    #[test]
    fn events_are_framed_and_numbered_like_rmcps() {
        let events = Events {
            stream: 7,
            retry: Some(Duration::from_secs(3)),
        };
        let message = Reply::Message(Box::new(ServerJsonRpcMessage::error(
            rmcp::ErrorData::invalid_params("x", None),
            Some(RequestId::Number(4)),
        )));
        let both = [events.priming(), events.message(&message)].concat();
        let text = std::str::from_utf8(&both).expect("utf-8");
        assert_eq!(
            text,
            "data: \nid: 0/7\nretry: 3000\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":-32602,\"message\":\"x\"}}\nid: 1/7\n\n"
        );
        let bare = Events {
            stream: 7,
            retry: None,
        };
        assert!(bare.priming().is_empty());
        assert!(
            std::str::from_utf8(&bare.message(&message))
                .expect("utf-8")
                .ends_with("\nid: 0/7\n\n")
        );
    }
}
