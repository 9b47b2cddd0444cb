//! What the wire brings, routed by the reader task of an [`RpcConnection`](super::RpcConnection):
//! answers to the requests waiting for them, progress and log messages to the call they are
//! about, the server's own requests to the client of its call (answered off the reader task),
//! and every other notification to the supervisor.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mcplex_config::Redactor;
use serde_json::{Value, json};

use super::notifications::NotificationSender;
use super::{Pending, lock};
use crate::relay::{ClientRelay, RelayError};
use crate::wire::{Incoming, WireSend};

/// Which call a server request or notification belongs to, as the wire saw it.
#[derive(Clone, Copy)]
enum Related<'a> {
    /// The wire cannot tell (stdio, legacy SSE, an HTTP GET stream).
    Unknown,
    /// It arrived on the answer stream of our request with this id (HTTP).
    Request(&'a Value),
}
use crate::{RawResult, UpstreamError};

/// Takes one message off the wire to where it belongs: an answer to its waiting request,
/// progress and log messages to the call they are about, a server's request to the client of
/// its call, every other notification to the supervisor.
pub(super) fn route(
    server: &Arc<str>,
    redactor: &Arc<Redactor>,
    sender: &Arc<dyn WireSend>,
    pending: &Mutex<HashMap<i64, Pending>>,
    notifications: &NotificationSender,
    message: Incoming,
) {
    let (shared_server, server) = (server, &**server);
    let (request, message) = match message {
        Incoming::Answer { id, result } => {
            match lock(pending).remove(&id) {
                Some(waiter) => {
                    let _ = waiter
                        .reply
                        .send(Ok(RawResult::written(result, shared_server.clone())));
                }
                None => tracing::debug!(server, "ignored a late answer to request {id}"),
            }
            return;
        }
        Incoming::Failed { id, reason } => {
            let waiter = id.as_i64().and_then(|id| lock(pending).remove(&id));
            if let Some(waiter) = waiter {
                let _ = waiter.reply.send(Err(UpstreamError::Transport {
                    server: server.to_owned(),
                    reason,
                }));
            }
            return;
        }
        Incoming::Message(message) => (None, message),
        Incoming::Related { request, message } => (Some(request), message),
    };
    // Only the wire says which call a message belongs to (`Incoming::Related`), never a
    // member the server writes into it.
    let related = request.as_ref().map_or(Related::Unknown, Related::Request);
    let method = message.get("method").and_then(Value::as_str);
    let id = message.get("id").filter(|id| !id.is_null());
    match (method, id) {
        // An answer to one of our requests.
        (None, Some(_)) => answer(server, pending, message),
        // Progress for one of our requests: our id is the token. Its message is the server's
        // words, redacted of the secrets configured for it as its errors are.
        (Some("notifications/progress"), None) => {
            let mut params = message.get("params").cloned().unwrap_or(Value::Null);
            let token = params.get("progressToken").and_then(Value::as_i64);
            let sink = token.and_then(|t| lock(pending).get(&t).and_then(|p| p.progress.clone()));
            if let Some(sink) = sink {
                redact_member(&mut params, "message", redactor);
                redact_member(&mut params, "_meta", redactor);
                // Full: the caller's client is behind; this update is dropped, not queued.
                let _ = sink.try_send(params);
            }
        }
        // A log message about one of our calls goes to that call's client, redacted.
        (Some("notifications/message"), None) => match relay_for(pending, related) {
            Some(relay) => {
                let mut params = message.get("params").cloned().unwrap_or(Value::Null);
                for member in ["data", "logger", "_meta"] {
                    redact_member(&mut params, member, redactor);
                }
                relay.notify("notifications/message".to_owned(), params);
            }
            None => tracing::debug!(
                server,
                "upstream log message outside a call: {}",
                redactor.redact(&message.to_string())
            ),
        },
        (Some(_), None) => {
            notifications.send(message);
        }
        // A request from the server to us.
        (Some(_), Some(_)) => {
            let relay = relay_for(pending, related);
            serve_request(server, redactor, sender, relay, message);
        }
        (None, None) => tracing::warn!(
            server,
            "ignored a message that is neither request, answer nor notification"
        ),
    }
}

/// Redacts the strings of `params[member]`: the server's own words in a log or progress message
/// and its `_meta`, and only those (its `level` or `progressToken` hold nothing secret, and a
/// changed one would no longer be read).
fn redact_member(params: &mut Value, member: &str, redactor: &Redactor) {
    if let Some(value) = params.get_mut(member) {
        crate::error::redact_strings(value, redactor);
    }
}

/// Hands a JSON answer (its `result`, or its `error`) to the request it answers.
fn answer(server: &str, pending: &Mutex<HashMap<i64, Pending>>, mut message: Value) {
    let Some(id) = message.get("id") else {
        return;
    };
    let Some(id) = id.as_i64() else {
        tracing::warn!(server, "ignored an answer with an id we never sent: {id}");
        return;
    };
    let Some(waiter) = lock(pending).remove(&id) else {
        tracing::debug!(server, "ignored a late answer to request {id}");
        return;
    };
    let outcome = if let Some(error) = message.get("error") {
        Err(UpstreamError::Rpc {
            server: server.to_owned(),
            code: error.get("code").and_then(Value::as_i64).unwrap_or(-32603),
            message: error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("unknown error")
                .to_owned(),
            data: error.get("data").cloned().map(Box::new),
        })
    } else {
        // Moved out, not copied: the answer is not needed any more.
        Ok(RawResult::Value(
            message
                .as_object_mut()
                .and_then(|answer| answer.remove("result"))
                .unwrap_or(Value::Null),
        ))
    };
    let _ = waiter.reply.send(outcome);
}

/// Answers a server's request (`ping` here, anything else by the client of the call it belongs
/// to), off the reader task: the client may take minutes (a person answering an elicitation),
/// and an HTTP answer may itself produce incoming messages.
fn serve_request(
    server: &str,
    redactor: &Arc<Redactor>,
    sender: &Arc<dyn WireSend>,
    relay: Option<Arc<dyn ClientRelay>>,
    message: Value,
) {
    let method = message
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    let (sender, server, redactor) = (sender.clone(), server.to_owned(), redactor.clone());
    tokio::spawn(async move {
        let outcome = match (method.as_str(), relay) {
            ("ping", _) => Ok(json!({})),
            (_, Some(relay)) => relay.request(method.clone(), params).await,
            (_, None) => Err(RelayError::unsupported(format!(
                "mcplex has no client to forward {method} to: the server sent it outside a tool call, or during several without saying which"
            ))),
        };
        let answer = match outcome {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error.to_json()}),
        };
        if let Err(e) = sender.send(answer).await {
            let e = redactor.redact(&e.to_string());
            tracing::debug!(server, "cannot answer the server's {method}: {e}");
        }
    });
}

/// The relay of the call a server request or notification belongs to: the request whose answer
/// stream carried it (and no other, if that call is over), else (a wire that says nothing of
/// it, as stdio) the callers' calls in flight when they all reach one client. With callers of
/// several clients in flight it is nobody's: a guess could hand one caller's message, or a
/// sampling request built from their data, to another.
fn relay_for(
    pending: &Mutex<HashMap<i64, Pending>>,
    related: Related<'_>,
) -> Option<Arc<dyn ClientRelay>> {
    let pending = lock(pending);
    if let Related::Request(request) = related {
        return request
            .as_i64()
            .and_then(|id| pending.get(&id)?.relay.clone());
    }
    let relays = || pending.values().filter_map(|p| p.relay.as_ref());
    let first = relays().next()?;
    let one_client = relays().all(|other| {
        Arc::ptr_eq(first, other)
            || matches!((first.client(), other.client()), (Some(a), Some(b)) if a == b)
    });
    // Through one of the client's requests that forwards (a tool call's, rather than a
    // completion's that only counts).
    let reaching = relays()
        .find(|relay| relay.reaches_client())
        .unwrap_or(first);
    one_client.then(|| Arc::clone(reaching))
}
