//! Wires: how JSON-RPC messages get to and from one upstream. Every wire has the same shape: a
//! sender, a stream of incoming messages (raw JSON), and a token cancelled when the wire dies.

pub(crate) mod answer_streams;
pub(crate) mod bounded_events;
pub(crate) mod bounded_lines;
pub(crate) mod environment;
pub(crate) mod event_stream;
pub(crate) mod http;
pub(crate) mod lines;
pub(crate) mod sse;
pub(crate) mod stdio;
pub(crate) mod sys;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

pub(crate) use mcplex_config::snippet;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How many incoming messages may wait for the connection's reader before a wire blocks.
pub(crate) const INCOMING_BUFFER: usize = 1024;

/// Why a wire could not send a message. Texts an upstream put in it (an error body) are
/// redacted before they get here.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SendError {
    /// The message could not be serialized.
    #[error("cannot encode the message: {0}")]
    Encode(#[from] serde_json::Error),
    /// Writing to the server's input failed; the wire is closed.
    #[error("cannot write to the server: {0}")]
    Write(#[source] std::io::Error),
    /// The HTTP request got no answer (refused, reset, timed out); `to` names the endpoint
    /// without secrets.
    #[error("POST {to}: {source}")]
    Request {
        to: String,
        #[source]
        source: reqwest::Error,
    },
    /// The server answered the POST with a status that is not a success.
    #[error("HTTP {status}: {body}")]
    Status { status: u16, body: String },
    /// The server ended the session (HTTP 404 to a request that carried one).
    #[error("the server ended the session (HTTP 404)")]
    SessionEnded,
    /// The answer could not be read or is not JSON.
    #[error("{0}")]
    Answer(String),
}

/// The outgoing half of a wire.
pub(crate) trait WireSend: Send + Sync {
    /// Sends one message. For HTTP wires the answer arrives later through `incoming`.
    fn send(&self, message: Value) -> BoxFuture<'_, Result<(), SendError>>;
    /// Remembers the negotiated protocol version (HTTP wires send it as a header).
    fn set_protocol_version(&self, _version: &str) {}
    /// Ends the wire for good: kills the process group, deletes the HTTP session.
    fn shutdown(&self) -> BoxFuture<'_, ()>;
    /// How the process behind the wire ended (`exit status: 1`, `signal: 9 (SIGKILL)`), waiting
    /// a moment for it to be reaped; `None` for a wire with no process, or one still running.
    fn exit(&self) -> BoxFuture<'_, Option<String>> {
        Box::pin(async { None })
    }
}

/// One message from an upstream, as a wire read it.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// A request, a notification, an error, or an answer that came with others.
    Message(Value),
    /// A server request or notification that arrived on the answer stream of our request
    /// `request` (its id as we sent it): HTTP only.
    Related { request: Value, message: Value },
    /// An answer with a result, read on its own (one line of a stdio server): the result as
    /// the server wrote it.
    Answer { id: i64, result: Box<RawValue> },
    /// Request `id`'s answer will not come: the answer stream ended without it (`reason`
    /// says how, redacted).
    Failed { id: Value, reason: String },
}

/// `request` with the W3C trace context of the current span (the upstream call's), when traces
/// are exported: the server's own spans then join the caller's trace.
pub(crate) fn with_trace_context(request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    match mcplex_trace::outgoing() {
        Some(trace) => {
            let request = request.header(mcplex_trace::TRACEPARENT, trace.traceparent);
            match trace.tracestate {
                Some(state) => request.header(mcplex_trace::TRACESTATE, state),
                None => request,
            }
        }
        None => request,
    }
}

/// What a wire brings, in the order it came; it ends when the wire can bring no more. A
/// stdio wire's is its reader itself (polled by the connection's one task, no hand-off); an
/// HTTP wire's is the channel its requests' answers and streams feed.
pub(crate) type IncomingStream = futures::stream::BoxStream<'static, Incoming>;

/// The stream of what `channel` receives, for wires whose messages come from several tasks.
pub(crate) fn channel_stream(mut channel: mpsc::Receiver<Incoming>) -> IncomingStream {
    Box::pin(futures::stream::poll_fn(move |cx| channel.poll_recv(cx)))
}

/// A live wire to one upstream.
pub(crate) struct Wire {
    pub sender: Arc<dyn WireSend>,
    pub incoming: IncomingStream,
    /// Cancelled by the wire itself when it can carry no more messages.
    pub closed: CancellationToken,
    /// How it reaches the server, for the spans of the requests it carries.
    pub transport: mcplex_trace::Transport,
}

/// Pushes one parsed HTTP body or SSE data field (a message or a batch) into `incoming`. Server
/// requests and notifications the server sent on the answer stream of request `related` come
/// as [`Incoming::Related`] with its id: the wire says so, never the message itself.
pub(crate) async fn push_messages(
    incoming: &mpsc::Sender<Incoming>,
    value: Value,
    related: Option<&Value>,
) {
    let mark = |message: Value| match related {
        Some(related) if message.get("method").is_some() => Incoming::Related {
            request: related.clone(),
            message,
        },
        _ => Incoming::Message(message),
    };
    match value {
        Value::Array(batch) => {
            for message in batch {
                let _ = incoming.send(mark(message)).await;
            }
        }
        message => {
            let _ = incoming.send(mark(message)).await;
        }
    }
}

/// The longest message an upstream may send: a stdio server's line, an HTTP answer's body, an
/// event of an SSE stream. Past it the message is refused: a line dropped and reported, a body
/// or an answer stream failing its request, a GET or legacy SSE stream closing its wire.
pub(crate) const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// The whole body of `response`, refused past `cap` bytes ([`MAX_MESSAGE_BYTES`] for a message;
/// the rest is then never read, and dropping the answer closes its connection).
pub(crate) async fn message_body(
    mut response: reqwest::Response,
    cap: usize,
) -> Result<Vec<u8>, SendError> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| SendError::Answer(format!("reading the answer: {}", e.without_url())))?
    {
        if body.len() + chunk.len() > cap {
            return Err(SendError::Answer(format!(
                "the answer is longer than a message may be ({cap} bytes)"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// How much of an error answer's body is read: messages show its start, and an upstream must not
/// make the gateway hold (or wait for) a body of any size.
const ERROR_BODY_LIMIT: usize = 16 * 1024;

/// The start of an error answer's body (at most [`ERROR_BODY_LIMIT`] bytes, lossily decoded); the
/// rest is never read, and dropping the answer closes its connection.
pub(crate) async fn error_body(mut response: reqwest::Response) -> String {
    let mut body = Vec::new();
    while body.len() < ERROR_BODY_LIMIT {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            Ok(None) | Err(_) => break,
        }
    }
    body.truncate(ERROR_BODY_LIMIT);
    String::from_utf8_lossy(&body).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// The answer of a one-shot HTTP server whose body is `body`.
    pub(super) async fn answered(body: impl Into<String>) -> reqwest::Response {
        let body: String = body.into();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address");
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.expect("accept");
            let mut request = [0u8; 1024];
            let _ = socket.read(&mut request).await;
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket.write_all(body.as_bytes()).await;
        });
        let _ = rustls::crypto::ring::default_provider().install_default();
        reqwest::get(format!("http://{address}/"))
            .await
            .expect("an answer")
    }

    #[tokio::test]
    async fn a_body_past_the_cap_is_refused_and_one_within_it_read_whole() {
        let within = message_body(answered(r#"{"ok":true}"#).await, 11).await;
        assert_eq!(within.expect("read").as_slice(), br#"{"ok":true}"#);
        match message_body(answered(r#"{"ok":true}"#).await, 10).await {
            Err(SendError::Answer(reason)) => assert!(reason.contains("longer than"), "{reason}"),
            other => panic!("{other:?}"),
        }
    }
}
