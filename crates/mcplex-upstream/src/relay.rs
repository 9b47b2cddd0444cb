//! Requests and notifications an upstream sends *to the client* while it works on a call
//! (`sampling/createMessage`, `elicitation/create`, `roots/list`, `notifications/message`), and
//! which call they belong to.
//!
//! Every caller's call carries a [`ClientRelay`] (one that reaches no client, [`NoClient`], for
//! a caller without one: the management API, the CLI); the gateway's own requests carry none.
//! When the upstream sends a request or log message of its own, the connection picks the call
//! it belongs to:
//! - on streamable HTTP, the call whose answer stream carried it (exact), or none;
//! - otherwise (stdio and legacy SSE, whose JSON-RPC says nothing about it; an HTTP server's
//!   GET stream): the callers' calls in flight, when they all reach one client
//!   ([`ClientRelay::client`]: one session's parallel calls, a script's calls), through one of
//!   them; with callers of several clients in flight, nobody, since a guess could hand one
//!   caller's data to another (`docs/protocol.md`).
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
    /// Which client this reaches, when relays of other calls may reach the same one (a
    /// session's): a message that cannot say which of their calls it is about may go to any of
    /// them. `None`: no other relay reaches it.
    fn client(&self) -> Option<ClientKey> {
        None
    }

    /// Whether it forwards anything to its client: a relay that only counts its request among
    /// the client's ([`NoClient`]) is passed over when another of the client's can.
    fn reaches_client(&self) -> bool {
        true
    }
}

/// Names one client among those the gateway's callers speak for (a session), for
/// [`ClientRelay::client`]: equal keys, one client. Made from something every request of the
/// client shares and the relay holds (so no other client's can be at its address meanwhile).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientKey(usize);

impl ClientKey {
    /// The key of the client that `shared`, held by the relay, belongs to.
    pub fn of<T: ?Sized>(shared: &std::sync::Arc<T>) -> ClientKey {
        ClientKey(std::sync::Arc::as_ptr(shared).cast::<()>() as usize)
    }
}

/// The relay of a caller's request that reaches no client (the management API's `/call`, the
/// CLI; a session's prompt, resource or completion request, whose client its tool calls reach):
/// the upstream's requests are refused, its log messages dropped. It still counts as a caller's
/// request, so that a message about it is never handed to another caller's client; of a
/// session's, as that session's ([`NoClient::of`]).
#[derive(Default)]
pub struct NoClient {
    /// What names the client it counts as, kept alive while it is held ([`ClientKey::of`]).
    client: Option<std::sync::Arc<dyn std::any::Any + Send + Sync>>,
}

impl NoClient {
    /// Counts as the client that `shared` names (see [`ClientKey::of`]).
    pub fn of<T: Send + Sync + 'static>(shared: std::sync::Arc<T>) -> NoClient {
        NoClient {
            client: Some(shared),
        }
    }
}

impl ClientRelay for NoClient {
    fn request(&self, method: String, _params: Value) -> RelayFuture {
        Box::pin(async move {
            Err(RelayError::unsupported(format!(
                "the caller of this request has no client to forward {method} to"
            )))
        })
    }

    fn notify(&self, _method: String, _params: Value) {}

    fn client(&self) -> Option<ClientKey> {
        self.client.as_ref().map(ClientKey::of)
    }

    fn reaches_client(&self) -> bool {
        false
    }
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
