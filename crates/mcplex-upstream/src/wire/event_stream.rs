//! An HTTP upstream's event streams: the answer stream of one of our requests, and the session's
//! GET stream. Every `data:` goes into the wire's incoming messages. An event longer than a
//! message may be ends the stream ([`bounded_events`]) and is not left unsaid: the request the
//! stream was answering fails at once with why, or, on the GET stream, the wire is closed (its
//! connection is lost and reconnected), rather than a caller waiting out its timeout.

use std::sync::Arc;

use futures::StreamExt;
use mcplex_config::Redactor;
use serde_json::{Value, json};
use sse_stream::SseStream;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::bounded_events::{bounded_events, refused_as_too_long};
use super::{Incoming, push_messages, snippet};

/// Whose event stream is read (for its log lines), and the longest event it may send.
pub(crate) struct EventStream {
    pub server: Arc<str>,
    pub redactor: Arc<Redactor>,
    /// [`super::MAX_MESSAGE_BYTES`].
    pub cap: usize,
}

/// Feeds every `data:` of an SSE response into `incoming` until the stream ends. `related` is
/// the id of the request whose answer this stream carries (none for the GET stream).
pub(crate) async fn read_event_stream(
    stream: EventStream,
    response: reqwest::Response,
    incoming: mpsc::Sender<Incoming>,
    closed: CancellationToken,
    related: Option<Value>,
) {
    let mut events =
        SseStream::from_bytes_stream(bounded_events(response.bytes_stream(), stream.cap));
    let mut answered = false;
    loop {
        let event = tokio::select! {
            event = events.next() => event,
            () = closed.cancelled() => return,
        };
        match event {
            Some(Ok(event)) => {
                let Some(data) = event.data.filter(|d| !d.trim().is_empty()) else {
                    continue;
                };
                match serde_json::from_str::<Value>(&data) {
                    Ok(value) => {
                        answered |= related.as_ref().is_some_and(|id| answers(&value, id));
                        push_messages(&incoming, value, related.as_ref()).await;
                    }
                    Err(e) => {
                        let data = stream.redactor.redact(&data);
                        tracing::warn!(server = %stream.server, "ignored an event that is not JSON ({e}): {}", snippet(&data, 200))
                    }
                }
            }
            Some(Err(e)) if refused_as_too_long(&e) => {
                let reason = format!(
                    "its event stream sent an event longer than a message may be ({} bytes)",
                    stream.cap
                );
                tracing::warn!(server = %stream.server, "event stream refused: {reason}");
                match related {
                    Some(id) if !answered => {
                        let failed = json!({"jsonrpc": "2.0", "id": id, "error": {
                            "code": -32603,
                            "message": format!("the server's answer was refused: {reason}"),
                        }});
                        let _ = incoming.send(Incoming::Message(failed)).await;
                    }
                    Some(_) => {}
                    None => closed.cancel(),
                }
                return;
            }
            Some(Err(e)) => {
                let e = stream.redactor.redact(&format!("{e:?}"));
                tracing::debug!(server = %stream.server, "event stream broke: {e}");
                return;
            }
            None => return,
        }
    }
}

/// Whether `value` (a message or a batch) holds the answer to request `id`.
fn answers(value: &Value, id: &Value) -> bool {
    match value {
        Value::Array(batch) => batch.iter().any(|message| answers(message, id)),
        Value::Object(message) => {
            message.get("id") == Some(id)
                && (message.contains_key("result") || message.contains_key("error"))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(cap: usize) -> EventStream {
        EventStream {
            server: Arc::from("s"),
            redactor: Arc::new(Redactor::default()),
            cap,
        }
    }

    /// What `body`, read as request `related`'s answer stream with a cap of 100 bytes, brought,
    /// and whether it closed the wire.
    async fn read(body: String, related: Option<Value>) -> (Vec<Value>, bool) {
        let response = crate::wire::tests::answered(body).await;
        let (incoming, mut received) = mpsc::channel(16);
        let closed = CancellationToken::new();
        read_event_stream(stream(100), response, incoming, closed.clone(), related).await;
        let mut messages = Vec::new();
        while let Ok(Incoming::Message(message)) = received.try_recv() {
            messages.push(message);
        }
        (messages, closed.is_cancelled())
    }

    fn long() -> String {
        format!("data: {}\n\n", "x".repeat(200))
    }

    #[tokio::test]
    async fn a_refused_answer_stream_fails_its_request_at_once() {
        let progress = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#;
        let (messages, closed) =
            read(format!("data: {progress}\n\n{}", long()), Some(json!(7))).await;
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert_eq!(messages[0]["method"], "notifications/progress");
        assert_eq!(messages[1]["id"], 7);
        let reason = messages[1]["error"]["message"].as_str().unwrap_or_default();
        assert!(
            reason.contains("longer than a message may be (100 bytes)"),
            "{reason}"
        );
        assert!(!closed, "the wire's other requests go on");
    }

    #[tokio::test]
    async fn a_refusal_after_the_answer_adds_nothing() {
        let answer = r#"{"jsonrpc":"2.0","id":7,"result":{}}"#;
        let (messages, _) = read(format!("data: {answer}\n\n{}", long()), Some(json!(7))).await;
        assert_eq!(messages, [json!({"jsonrpc": "2.0", "id": 7, "result": {}})]);
    }

    #[tokio::test]
    async fn a_refused_get_stream_closes_the_wire() {
        let (messages, closed) = read(long(), None).await;
        assert!(messages.is_empty(), "{messages:?}");
        assert!(closed, "the connection is lost and reconnected");
    }
}
