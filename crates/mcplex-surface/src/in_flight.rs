//! Request ids in flight: the (session, id) pairs an MCP route is answering, so that a second
//! request with an id already in flight in its session is refused (rmcp keys a session's answers
//! by request id, so two alike would cross), and a client's `notifications/cancelled` reaches a
//! call the fast path answers. A pair is held until its answer's body ends or is dropped.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http_body::Frame;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// `response`, holding its request id until its body ends.
pub(crate) fn holding(response: Response, held: Option<Hold>) -> Response {
    match held {
        Some(hold) => response.map(|inner| {
            Body::new(Holding {
                inner,
                hold: Some(hold),
            })
        }),
        None => response,
    }
}

/// The key of a request id: a number and a string that read alike are different ids.
pub(crate) fn id_key(id: &Value) -> String {
    match id {
        Value::String(s) => format!("s:{s}"),
        Value::Number(n) => match n.as_i64() {
            Some(i) => format!("n:{i}"),
            None => format!("n:{n}"),
        },
        other => format!("j:{other}"),
    }
}

/// The (session, request id) pairs in flight on one route, with the token of each call the fast
/// path answers.
#[derive(Default)]
pub(crate) struct InFlightIds(Mutex<HashMap<(String, String), Option<CancellationToken>>>);

impl InFlightIds {
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<(String, String), Option<CancellationToken>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Holds (session, id) until the returned guard is dropped; `None` when it is already held.
    /// `cancel` is cancelled by a `notifications/cancelled` naming the id in the session.
    pub(crate) fn hold(
        self: &Arc<InFlightIds>,
        session: &str,
        id: &Value,
        cancel: Option<CancellationToken>,
    ) -> Option<Hold> {
        let key = (session.to_owned(), id_key(id));
        let mut held = self.lock();
        if held.contains_key(&key) {
            return None;
        }
        held.insert(key.clone(), cancel);
        Some(Hold {
            ids: self.clone(),
            key,
        })
    }

    /// When `message` is a `notifications/cancelled` naming a fast-path call in flight in
    /// `session`, cancels that call.
    pub(crate) fn cancel_named(&self, session: &str, message: &Value) {
        if message.get("method").and_then(Value::as_str) != Some("notifications/cancelled") {
            return;
        }
        let Some(id) = message.pointer("/params/requestId") else {
            return;
        };
        let key = (session.to_owned(), id_key(id));
        if let Some(Some(cancel)) = self.lock().get(&key) {
            cancel.cancel();
        }
    }
}

pub(crate) struct Hold {
    ids: Arc<InFlightIds>,
    key: (String, String),
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.ids.lock().remove(&self.key);
    }
}

/// A response body that holds its request id until it ends or is dropped.
struct Holding {
    inner: Body,
    hold: Option<Hold>,
}

impl http_body::Body for Holding {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) {
            self.hold = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
