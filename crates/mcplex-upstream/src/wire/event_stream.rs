//! The one reader of an upstream's event streams: a streamable HTTP request's answer stream, a
//! streamable HTTP session's GET stream, and a legacy SSE connection's stream. Each message goes
//! into the wire's incoming messages; what the stream carries ([`Carries`]) decides what its
//! end means. An event longer than a message may be ends any of them ([`bounded_events`]).

use std::sync::Arc;

use futures::{Stream, StreamExt};
use mcplex_config::Redactor;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::answer_streams::Reading;
use super::bounded_events::refused_as_too_long;
use super::{Incoming, MAX_MESSAGE_BYTES, push_messages, snippet};

/// What an event stream carries.
pub(crate) enum Carries {
    /// The answer to our request `id` (streamable HTTP), and what the server sends about it on
    /// the way. Read until the answer, or until the request is given up (`reading`); one that
    /// ends first fails its request at once with why (nothing here resumes a stream).
    Answer { id: Value, reading: Reading },
    /// A streamable HTTP session's GET stream: the server's own requests and notifications. Its
    /// end leaves the wire open, unless it ended by sending an event too long to read.
    Notifications,
    /// A legacy SSE connection's stream: every answer comes on it as a `message` event (others
    /// are skipped), and its end is the wire's.
    Session,
}

/// Whose event stream is read, and where what it brings goes.
pub(crate) struct EventStream {
    pub server: Arc<str>,
    pub redactor: Arc<Redactor>,
    pub incoming: mpsc::Sender<Incoming>,
    /// The wire's: reading stops when it is cancelled, and a stream whose end is the wire's
    /// cancels it.
    pub closed: CancellationToken,
    pub carries: Carries,
}

/// How the reading of a stream ended.
enum End {
    /// The wire closed, or the request was given up.
    Stopped,
    /// The answer the stream carries arrived.
    Answered,
    /// An event was longer than a message may be.
    Refused,
    /// The body broke off (redacted).
    Broke(String),
    /// The server ended the stream.
    Ended,
}

impl EventStream {
    /// Reads `events` until the stream ends, its answer arrives, or the reading is stopped.
    pub(crate) async fn read(
        self,
        mut events: impl Stream<Item = Result<sse_stream::Sse, sse_stream::Error>> + Unpin,
    ) {
        let (id, stop) = match &self.carries {
            Carries::Answer { id, reading } => (Some(id), reading.stopped()),
            Carries::Notifications | Carries::Session => (None, self.closed.clone()),
        };
        let end = loop {
            let event = tokio::select! {
                event = events.next() => event,
                () = stop.cancelled() => break End::Stopped,
            };
            let event = match event {
                Some(Ok(event)) => event,
                Some(Err(e)) if refused_as_too_long(&e) => break End::Refused,
                Some(Err(e)) => break End::Broke(self.redactor.redact(&e.to_string())),
                None => break End::Ended,
            };
            let skipped = matches!(self.carries, Carries::Session)
                && !matches!(event.event.as_deref(), None | Some("message"));
            let Some(data) = event.data.filter(|d| !skipped && !d.trim().is_empty()) else {
                continue;
            };
            match serde_json::from_str::<Value>(&data) {
                Ok(value) => {
                    let answered = id.is_some_and(|id| answers(&value, id));
                    push_messages(&self.incoming, value, id).await;
                    if answered {
                        break End::Answered;
                    }
                }
                Err(e) => {
                    let shown = self.redactor.redact_start(&data, 200);
                    tracing::warn!(server = %self.server, "ignored an event that is not JSON ({e}): {shown}")
                }
            }
        };
        self.ended(end).await;
    }

    /// What the end of the stream means for the wire, or for the request it answers.
    async fn ended(self, end: End) {
        let why = match &end {
            End::Stopped | End::Answered => return,
            End::Refused => format!(
                "its event stream sent an event longer than a message may be ({MAX_MESSAGE_BYTES} bytes)"
            ),
            End::Broke(e) => format!("its event stream broke: {}", snippet(e, 200)),
            End::Ended if matches!(self.carries, Carries::Answer { .. }) => {
                "its event stream ended without it".to_owned()
            }
            End::Ended => "its event stream ended".to_owned(),
        };
        match self.carries {
            Carries::Answer { id, .. } => {
                tracing::debug!(server = %self.server, "an answer stream ended without its answer: {why}");
                let reason = format!("the server's answer did not arrive: {why}");
                let _ = self.incoming.send(Incoming::Failed { id, reason }).await;
            }
            Carries::Notifications if matches!(end, End::Refused) => {
                tracing::warn!(server = %self.server, "closing the connection: {why}");
                self.closed.cancel();
            }
            Carries::Notifications => {
                tracing::debug!(server = %self.server, "the GET stream for notifications ended: {why}")
            }
            Carries::Session => {
                if !matches!(end, End::Ended) {
                    tracing::warn!(server = %self.server, "closing the connection: {why}");
                }
                self.closed.cancel();
            }
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
#[path = "event_stream_tests.rs"]
mod tests;
