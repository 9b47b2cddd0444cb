//! Requests and notifications an upstream sends *to the client* while it works on a call
//! (`sampling/createMessage`, `elicitation/create`, `roots/list`, `notifications/message`), and
//! which call they belong to.
//!
//! A caller that can reach its client attaches a [`ClientRelay`] to its request. When the
//! upstream sends a request of its own, the connection picks the call it belongs to:
//! - on streamable HTTP, the call whose answer stream carried it (exact);
//! - on stdio and legacy SSE, JSON-RPC says nothing about it: the oldest call in flight that has
//!   a relay. With one call in flight (the common case) that is exact; with several from
//!   different clients it is a guess, which `docs/protocol.md` documents.
//!
//! The relay's answer (a result or a JSON-RPC error) goes back to the upstream unchanged.

use std::future::Future;
use std::pin::Pin;

use serde_json::{Value, json};

/// A boxed future, as relays return them.
pub type RelayFuture = Pin<Box<dyn Future<Output = Result<Value, RelayError>> + Send>>;

/// The client side of one call, as far as its upstream can reach it.
pub trait ClientRelay: Send + Sync {
    /// Forwards a request the upstream made (`method`, raw `params`) to the client; resolves to
    /// the client's raw result or its error.
    fn request(&self, method: String, params: Value) -> RelayFuture;
    /// Forwards a notification the upstream sent during the call (logging messages).
    fn notify(&self, method: String, params: Value);
}

/// A JSON-RPC error to send back to the upstream.
#[derive(Debug, Clone, PartialEq)]
pub struct RelayError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RelayError {
    /// `-32601`: nobody here can answer `method` (no client, or the client lacks the capability).
    pub fn unsupported(message: impl Into<String>) -> RelayError {
        RelayError {
            code: -32601,
            message: message.into(),
            data: None,
        }
    }

    /// The `error` member of a JSON-RPC answer.
    pub(crate) fn to_json(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }
}
