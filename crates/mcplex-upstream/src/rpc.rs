//! A JSON-RPC client over one wire. Matches answers to requests by id, routes upstream progress
//! to the caller that asked for it (our request id doubles as the upstream progress token, so
//! tokens never collide between callers), sends `notifications/cancelled` upstream when a call
//! times out or its caller goes away, relays the upstream's own requests and logging to the
//! client of the call they belong to (see `relay.rs`), and hands every other notification to the
//! supervisor. This file is the sending side; `rpc/inbound.rs` routes what the wire brings.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use mcplex_config::Redactor;
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::relay::ClientRelay;
use crate::wire::{SendError, Wire, WireSend};
use crate::{RawResult, UpstreamError};

mod inbound;
pub(crate) mod notifications;

use inbound::route;
pub(crate) use notifications::NotificationSender;

/// What a caller attaches to one request.
#[derive(Default)]
pub struct CallOptions {
    /// Give up (and cancel upstream) after this long.
    pub timeout: Option<Duration>,
    /// Cancelled when the caller no longer wants the answer.
    pub cancel: Option<CancellationToken>,
    /// Receives the `params` of the upstream's `notifications/progress` for this request. A
    /// bounded sink: what does not fit (a flood while the caller's client reads slowly) is
    /// dropped, as a progress update only says how far the call is and its result follows.
    pub progress: Option<mpsc::Sender<Value>>,
    /// Reaches the client of this request: the upstream's own requests and log messages sent
    /// while it works on it go there. Without one they are refused (requests) or dropped.
    pub relay: Option<Arc<dyn ClientRelay>>,
}

struct Pending {
    reply: oneshot::Sender<Result<RawResult, UpstreamError>>,
    progress: Option<mpsc::Sender<Value>>,
    relay: Option<Arc<dyn ClientRelay>>,
}

/// A live JSON-RPC session with one upstream. Every error it returns has the server's secrets
/// redacted (an upstream may echo them; a transport error names the URL).
pub struct RpcConnection {
    server: Arc<str>,
    redactor: Arc<Redactor>,
    sender: Arc<dyn WireSend>,
    next_id: AtomicI64,
    pending: Arc<Mutex<HashMap<i64, Pending>>>,
    closed: CancellationToken,
    /// `_meta` merged into every request (2026-07-28: protocol version and client capabilities).
    request_meta: Mutex<Option<Map<String, Value>>>,
    /// How the server is reached, for the upstream call's span.
    transport: mcplex_trace::Transport,
    /// `"trace_context": true`: the trace context goes into each request's `_meta` too.
    trace_in_meta: AtomicBool,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl RpcConnection {
    /// Starts reading `wire`. Notifications other than progress go to `notifications`.
    pub(crate) fn start(
        server: Arc<str>,
        redactor: Arc<Redactor>,
        wire: Wire,
        notifications: NotificationSender,
    ) -> Arc<RpcConnection> {
        let Wire {
            sender,
            mut incoming,
            closed,
            transport,
        } = wire;
        let connection = Arc::new(RpcConnection {
            server: server.clone(),
            redactor: redactor.clone(),
            sender: sender.clone(),
            next_id: AtomicI64::new(1),
            pending: Arc::new(Mutex::new(HashMap::new())),
            closed: closed.clone(),
            request_meta: Mutex::new(None),
            transport,
            trace_in_meta: AtomicBool::new(false),
        });
        let pending = connection.pending.clone();
        tokio::spawn(async move {
            // However the loop ends, a panic included, the wire closes and every waiting
            // request is answered.
            let _ending = Ending {
                server: server.clone(),
                closed: closed.clone(),
                pending: pending.clone(),
            };
            let deliver = |message| {
                route(
                    &server,
                    &redactor,
                    &sender,
                    &pending,
                    &notifications,
                    message,
                )
            };
            // Closing first: the end of output that a shutdown causes is not a failure.
            let closing = closed.cancelled();
            tokio::pin!(closing);
            loop {
                let message = tokio::select! {
                    biased;
                    () = &mut closing => break,
                    message = incoming.next() => message,
                };
                // The wire brings no more: it is not polled again.
                let Some(message) = message else { return };
                deliver(message);
            }
            // Closed: what already arrived is still routed (an HTTP wire closes right after
            // the last answer it read; a stdio server's last lines may be answers too).
            for _ in 0..DRAINED_AT_CLOSE {
                match incoming.next().now_or_never() {
                    Some(Some(message)) => deliver(message),
                    _ => break,
                }
            }
        });
        connection
    }

    pub fn server(&self) -> &str {
        &self.server
    }

    /// Whether the wire is gone.
    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// Resolves when the wire is gone.
    pub async fn closed(&self) {
        self.closed.cancelled().await
    }

    /// Why a lost connection was lost, for its server's history and status: how its process
    /// exited when it had one, else that the connection was lost.
    pub(crate) async fn lost_reason(&self) -> String {
        self.exit_reason()
            .await
            .unwrap_or_else(|| "connection lost".to_owned())
    }

    /// How the process behind a closed connection exited (`process exited (exit status: 4)`);
    /// `None` for a connection with no process, or one still open.
    pub(crate) async fn exit_reason(&self) -> Option<String> {
        if !self.is_closed() {
            return None;
        }
        let exit = self.sender.exit().await?;
        Some(format!("process exited ({exit})"))
    }

    pub(crate) fn set_protocol_version(&self, version: &str) {
        self.sender.set_protocol_version(version);
    }

    pub(crate) fn set_request_meta(&self, meta: Map<String, Value>) {
        *lock(&self.request_meta) = Some(meta);
    }

    /// Puts the trace context into every request's `_meta` from now on (`"trace_context"`).
    pub(crate) fn pass_trace_context_in_meta(&self) {
        self.trace_in_meta.store(true, Ordering::Relaxed);
    }

    /// Sends a notification.
    pub async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), UpstreamError> {
        let mut message = json!({"jsonrpc": "2.0", "method": method});
        if let Some(params) = params {
            message["params"] = params;
        }
        self.sender
            .send(message)
            .await
            .map_err(|reason| self.transport(reason).redacted(&self.redactor))
    }

    /// Sends a request and waits for its `result`.
    pub async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        options: CallOptions,
    ) -> Result<Value, UpstreamError> {
        self.request_raw(method, params, options)
            .await
            .and_then(|result| result.into_value().map_err(|e| e.redacted(&self.redactor)))
    }

    /// Sends a request and waits for its `result`, as the server wrote it where the wire kept it.
    pub async fn request_raw(
        &self,
        method: &str,
        params: Option<Value>,
        options: CallOptions,
    ) -> Result<RawResult, UpstreamError> {
        self.exchange(method, params, options)
            .await
            .map_err(|e| e.redacted(&self.redactor))
    }

    /// One request: its message, its place among the pending requests, and the wait for its
    /// answer.
    async fn exchange(
        &self,
        method: &str,
        params: Option<Value>,
        options: CallOptions,
    ) -> Result<RawResult, UpstreamError> {
        let tool = match (method, &params) {
            ("tools/call", Some(params)) => params.get("name").and_then(Value::as_str),
            _ => None,
        };
        let span = mcplex_trace::upstream(&self.server, method, tool, self.transport);
        let outcome = self
            .exchange_in_span(method, params, options)
            .instrument(span.clone())
            .await;
        if !span.is_disabled() {
            mcplex_trace::ended(&span, outcome_of(&outcome));
        }
        outcome
    }

    async fn exchange_in_span(
        &self,
        method: &str,
        params: Option<Value>,
        options: CallOptions,
    ) -> Result<RawResult, UpstreamError> {
        if self.is_closed() {
            return Err(UpstreamError::Closed {
                server: self.server.to_string(),
                reason: "connection closed".to_owned(),
            });
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let message = self.message(id, method, params, options.progress.is_some())?;
        let (reply_tx, reply_rx) = oneshot::channel();
        lock(&self.pending).insert(
            id,
            Pending {
                reply: reply_tx,
                progress: options.progress,
                relay: options.relay,
            },
        );
        let guard = PendingGuard {
            connection: self,
            id,
            armed: true,
        };
        let wait = Wait {
            reply: reply_rx,
            timeout: options.timeout,
            cancel: options.cancel,
        };
        self.send_and_wait(guard, method, message, wait).await
    }

    /// The JSON-RPC request `id`: `params` (an object, or none) with the connection's `_meta`
    /// and, when the caller wants progress, our id as its progress token.
    fn message(
        &self,
        id: i64,
        method: &str,
        params: Option<Value>,
        progress: bool,
    ) -> Result<Value, UpstreamError> {
        let mut params = match params {
            Some(Value::Object(map)) => map,
            Some(Value::Null) | None => Map::new(),
            Some(other) => {
                return Err(UpstreamError::Transport {
                    server: self.server.to_string(),
                    reason: format!("params of {method} must be an object, not {other}"),
                });
            }
        };
        let extra_meta = lock(&self.request_meta).clone();
        let trace = self
            .trace_in_meta
            .load(Ordering::Relaxed)
            .then(mcplex_trace::outgoing)
            .flatten();
        if extra_meta.is_some() || progress || trace.is_some() {
            let meta = params
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(meta) = meta {
                for (key, value) in extra_meta.into_iter().flatten() {
                    meta.insert(key, value);
                }
                if progress {
                    meta.insert("progressToken".to_owned(), json!(id));
                }
                if let Some(trace) = trace {
                    meta.insert(
                        mcplex_trace::TRACEPARENT.to_owned(),
                        trace.traceparent.into(),
                    );
                    if let Some(state) = trace.tracestate {
                        meta.insert(mcplex_trace::TRACESTATE.to_owned(), state.into());
                    }
                }
            }
        }
        let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if !params.is_empty() {
            message["params"] = Value::Object(params);
        }
        Ok(message)
    }

    /// Sends the pending request `guard` holds and waits for its answer, until the caller's
    /// timeout or cancellation (either abandons it upstream).
    async fn send_and_wait(
        &self,
        mut guard: PendingGuard<'_>,
        method: &str,
        message: Value,
        wait: Wait,
    ) -> Result<RawResult, UpstreamError> {
        let id = guard.id;
        // The deadline counts from here: a server that stops reading its input holds the send,
        // and the caller must not wait past its timeout for that either.
        let deadline = wait
            .timeout
            .map(|after| tokio::time::Instant::now() + after);
        let timeout = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(timeout);
        let timed_out = || UpstreamError::Timeout {
            server: self.server.to_string(),
            method: method.to_owned(),
            after: wait.timeout.unwrap_or_default(),
        };
        tokio::select! {
            sent = self.sender.send(message) => if let Err(reason) = sent {
                guard.disarm();
                lock(&self.pending).remove(&id);
                return Err(self.transport(reason));
            },
            () = &mut timeout => {
                guard.disarm();
                self.abandon(id, "timeout");
                return Err(timed_out());
            }
        }
        let cancel = wait.cancel.unwrap_or_default();
        let outcome = tokio::select! {
            reply = wait.reply => Some(reply),
            () = cancel.cancelled() => None,
            () = &mut timeout => {
                guard.disarm();
                self.abandon(id, "timeout");
                return Err(timed_out());
            }
        };
        guard.disarm();
        match outcome {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(UpstreamError::Closed {
                server: self.server.to_string(),
                reason: "connection closed".to_owned(),
            }),
            None => {
                self.abandon(id, "the client cancelled the request");
                Err(UpstreamError::Cancelled {
                    server: self.server.to_string(),
                })
            }
        }
    }

    /// Forgets request `id` and tells the upstream to stop working on it. The notification is
    /// sent off the caller's path: a server that stops reading its input must not hold a caller
    /// that has already given up.
    fn abandon(&self, id: i64, reason: &str) {
        lock(&self.pending).remove(&id);
        let sender = self.sender.clone();
        let message = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id, "reason": reason}});
        tokio::spawn(async move {
            let _ = sender.send(message).await;
        });
    }

    /// Ends the connection and whatever runs behind it. Closed first, so that the end of the
    /// server's output that the termination causes is expected, not reported as a failure.
    pub async fn shutdown(&self) {
        self.closed.cancel();
        self.sender.shutdown().await;
    }

    fn transport(&self, failure: SendError) -> UpstreamError {
        UpstreamError::Transport {
            server: self.server.to_string(),
            reason: failure.to_string(),
        }
    }
}

/// At most how many messages that arrived before a wire closed are still routed after it: as
/// many as an HTTP wire's channel holds.
const DRAINED_AT_CLOSE: usize = crate::wire::INCOMING_BUFFER;

/// The end of a connection's routing task: the wire is closed, and every request still waiting
/// is answered that it closed.
struct Ending {
    server: Arc<str>,
    closed: CancellationToken,
    pending: Arc<Mutex<HashMap<i64, Pending>>>,
}

impl Drop for Ending {
    fn drop(&mut self) {
        self.closed.cancel();
        let orphans: Vec<Pending> = lock(&self.pending).drain().map(|(_, p)| p).collect();
        for orphan in orphans {
            let _ = orphan.reply.send(Err(UpstreamError::Closed {
                server: self.server.to_string(),
                reason: "the connection closed before the answer arrived".to_owned(),
            }));
        }
    }
}

/// How a caller waits for one answer: its channel, the caller's timeout and cancellation.
struct Wait {
    reply: oneshot::Receiver<Result<RawResult, UpstreamError>>,
    timeout: Option<Duration>,
    cancel: Option<CancellationToken>,
}

/// Cancels a request upstream when the future awaiting it is dropped (the downstream client went
/// away mid-call and its handler was aborted).
struct PendingGuard<'a> {
    connection: &'a RpcConnection,
    id: i64,
    armed: bool,
}

impl PendingGuard<'_> {
    fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if self.armed && lock(&self.connection.pending).contains_key(&self.id) {
            self.connection.abandon(self.id, "the client went away");
        }
    }
}

/// How an upstream request ended, in the words of the audit log's statuses (dispatch's
/// `CallStatus`, which names the same outcomes of an upstream call the same way).
fn outcome_of(outcome: &Result<RawResult, UpstreamError>) -> &'static str {
    match outcome {
        Ok(result) if result.is_error() => "tool_error",
        Ok(_) => "ok",
        Err(UpstreamError::Timeout { .. }) => "timeout",
        Err(UpstreamError::Cancelled { .. }) => "cancelled",
        Err(_) => "upstream_error",
    }
}

#[cfg(test)]
pub(crate) mod tests;
