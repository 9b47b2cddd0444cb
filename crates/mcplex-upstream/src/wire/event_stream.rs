//! An HTTP upstream's event streams: the answer stream of one of our requests, and the session's
//! GET stream. Every `data:` goes into the wire's incoming messages. An event longer than a
//! message may be ends the stream ([`bounded_events`]). An answer stream that ends without its
//! answer, for that or any other reason, fails its request at once with why (nothing resumes
//! it), rather than leave a caller waiting out its timeout; a refused GET stream closes the wire
//! (its connection is lost and reconnected).

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
    let ended = loop {
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
                        let shown = shown_start(&stream.redactor, &data);
                        tracing::warn!(server = %stream.server, "ignored an event that is not JSON ({e}): {shown}")
                    }
                }
            }
            Some(Err(e)) if refused_as_too_long(&e) => {
                let reason = format!(
                    "its event stream sent an event longer than a message may be ({} bytes)",
                    stream.cap
                );
                tracing::warn!(server = %stream.server, "event stream refused: {reason}");
                if related.is_none() {
                    closed.cancel();
                }
                break reason;
            }
            Some(Err(e)) => {
                let e = stream.redactor.redact(&format!("{e}"));
                tracing::debug!(server = %stream.server, "event stream broke: {e}");
                break format!("its event stream broke: {}", snippet(&e, 200));
            }
            None => break "its event stream ended without it".to_owned(),
        }
    };
    // Nothing resumes an answer stream: one that ends without the answer fails its request now,
    // rather than leave it waiting out its timeout.
    if let Some(id) = related.filter(|_| !answered) {
        let failed = json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": -32603,
            "message": format!("the server's answer did not arrive: {ended}"),
        }});
        let _ = incoming.send(Incoming::Message(failed)).await;
    }
}

/// The start of `data` as a log may show it: read no further than a few kB (an event may hold
/// 64 MiB), secrets removed, then cut to 200 characters.
fn shown_start(redactor: &Redactor, data: &str) -> String {
    let start: String = data.chars().take(4096).collect();
    snippet(&redactor.redact(&start), 200)
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

    #[tokio::test]
    async fn an_answer_stream_that_ends_without_the_answer_fails_its_request() {
        let progress = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#;
        let (messages, closed) = read(format!("data: {progress}\n\n"), Some(json!(7))).await;
        assert_eq!(messages.len(), 2, "{messages:?}");
        let reason = messages[1]["error"]["message"].as_str().unwrap_or_default();
        assert!(reason.contains("ended without it"), "{reason}");
        assert!(!closed);
        let (messages, _) = read(String::new(), None).await;
        assert!(
            messages.is_empty(),
            "a GET stream answers no request: {messages:?}"
        );
    }
}
