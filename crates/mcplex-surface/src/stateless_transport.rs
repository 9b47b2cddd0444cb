//! rmcp's end of one stateless request ([`RequestTransport`]): what its serve loop sends goes to
//! the request's stream, in the order it was sent, and nothing is ever received.
//!
//! rmcp runs each send as a task of its own, so the order is kept here: a message is queued at
//! once while there is room and nothing waits before it; otherwise it waits its turn behind
//! every earlier message that waits, and the queue's room holds the handler's sends back.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use rmcp::model::JsonRpcMessage;
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::{mpsc, oneshot};

/// Messages of one request not yet taken by its writer: past it the request's serve loop waits
/// (and with it the handler's sends), until the writer takes one or the stream ends.
pub(crate) const EVENTS_WAITING: usize = 64;

pub(crate) struct RequestTransport {
    /// The JSON of each message for the request's stream.
    events: mpsc::Sender<Bytes>,
    /// Messages that found the queue full (or others waiting) and are not in it yet.
    waiting: Arc<AtomicUsize>,
    /// Resolves when the last of them is in the queue (or gave up).
    last: Option<oneshot::Receiver<()>>,
}

impl RequestTransport {
    pub(crate) fn new(events: mpsc::Sender<Bytes>) -> RequestTransport {
        RequestTransport {
            events,
            waiting: Arc::default(),
            last: None,
        }
    }
}

/// A waiting message's place in line: when it is in the queue (or its send was dropped), the
/// next may go.
struct Turn {
    done: Option<oneshot::Sender<()>>,
    waiting: Arc<AtomicUsize>,
}

impl Drop for Turn {
    fn drop(&mut self) {
        self.waiting.fetch_sub(1, Ordering::AcqRel);
        if let Some(done) = self.done.take() {
            let _ = done.send(());
        }
    }
}

impl Transport<RoleServer> for RequestTransport {
    type Error = Infallible;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Infallible>> + Send + 'static {
        let json = match item {
            JsonRpcMessage::Notification(_) | JsonRpcMessage::Request(_) => crate::sse::json(&item),
            JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => None,
        };
        let json = match json {
            Some(json) if self.waiting.load(Ordering::Acquire) == 0 => {
                match self.events.try_send(json) {
                    Err(mpsc::error::TrySendError::Full(json)) => Some(json),
                    // Sent; or closed: the stream has ended, and with it the request.
                    _ => None,
                }
            }
            other => other,
        };
        let queued = json.map(|json| {
            self.waiting.fetch_add(1, Ordering::AcqRel);
            let (done, next) = oneshot::channel();
            let before = self.last.replace(next);
            let turn = Turn {
                done: Some(done),
                waiting: self.waiting.clone(),
            };
            (self.events.clone(), json, before, turn)
        });
        async move {
            if let Some((events, json, before, _turn)) = queued {
                if let Some(before) = before {
                    let _ = before.await;
                }
                let _ = events.send(json).await;
            }
            Ok(())
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        std::future::pending()
    }

    async fn close(&mut self) -> Result<(), Infallible> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ServerJsonRpcMessage, ServerNotification};

    fn numbered(n: u32) -> TxJsonRpcMessage<RoleServer> {
        ServerJsonRpcMessage::notification(ServerNotification::CustomNotification(
            rmcp::model::CustomNotification::new("n", Some(serde_json::json!({"n": n}))),
        ))
    }

    fn number(event: &Bytes) -> u64 {
        let message: serde_json::Value = serde_json::from_slice(event).expect("json");
        message["params"]["n"].as_u64().expect("a number")
    }

    #[tokio::test]
    async fn messages_past_a_full_queue_keep_the_order_they_were_sent_in() {
        let (events, mut taken) = mpsc::channel(EVENTS_WAITING);
        let mut transport = RequestTransport::new(events);
        let limit = u32::try_from(EVENTS_WAITING).expect("small");
        for n in 0..limit {
            let _ = transport.send(numbered(n)).await;
        }
        // The queue is full: this one waits.
        let first_waiting = transport.send(numbered(limit));
        // The writer takes one; the next message must not overtake the one waiting.
        assert_eq!(taken.recv().await.as_ref().map(number), Some(0));
        let second_waiting = transport.send(numbered(limit + 1));
        // rmcp's tasks may run in any order.
        let later = tokio::spawn(second_waiting);
        let earlier = tokio::spawn(first_waiting);
        let mut order = Vec::new();
        while order.len() < EVENTS_WAITING + 1 {
            order.push(number(&taken.recv().await.expect("an event")));
        }
        let _ = (later.await, earlier.await);
        assert_eq!(order, (1..=u64::from(limit) + 1).collect::<Vec<_>>());
        // Nothing waits any more: the next goes straight in.
        let _ = transport.send(numbered(limit + 2)).await;
        assert_eq!(
            taken.try_recv().as_ref().map(number).ok(),
            Some(u64::from(limit) + 2)
        );
    }
}
