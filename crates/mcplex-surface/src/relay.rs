//! The client end of a call, for its upstream: the requests an upstream makes while working on a
//! call (`sampling/createMessage`, `elicitation/create`, `roots/list`) are sent to the client that
//! made the call, on the call's own stream while it is open (they name it as their originating
//! request, SEP-2260), and its answer goes back; the upstream's log messages during the call
//! reach the same client.
//!
//! A client that did not declare the capability a request needs is never asked: the upstream
//! gets `-32601` naming the missing capability. 2026-07-28 clients cannot be sent requests at all
//! (that revision has the server return an input-required result instead, which passes through
//! untouched when the upstream speaks it).
#![allow(deprecated)] // logging: deprecated by 2026-07-28 (SEP-2577), used by session-era clients

use mcplex_protocol::{ProtocolEra, STATELESS_VERSION};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcplex_upstream::{ClientKey, ClientRelay, RelayError, RelayFuture};
use rmcp::Peer;
use rmcp::model::{
    ClientCapabilities, ClientInfo, CustomRequest, GetExtensions, LoggingMessageNotificationParam,
    RequestId, ServerRequest,
};
use rmcp::service::{OriginatingRequestId, RequestContext, RoleServer, ServiceError};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Relays to the client of one request.
pub(crate) struct PeerRelay {
    peer: Peer<RoleServer>,
    /// The request the relayed requests belong to: they go out on its stream while it is open.
    origin: RequestId,
    /// The session's handshake; `None` for a 2026-07-28 client (no server-to-client requests in
    /// that revision).
    client: Option<Arc<ClientInfo>>,
    cancel: CancellationToken,
    /// The least severity forwarded; `None`: no log messages.
    threshold: Option<u8>,
    /// Started with the first log message: most calls log nothing and cost no task.
    logs: Mutex<Option<LogForwarder>>,
}

/// Sends one call's log messages to its client, in order.
struct LogForwarder {
    /// At most [`LOG_BACKLOG`] waiting: an upstream's flood to a slow client is dropped, not
    /// queued.
    messages: mpsc::Sender<LoggingMessageNotificationParam>,
    task: JoinHandle<()>,
}

/// Log messages waiting for a slow client; the upstream's further ones are dropped until it
/// catches up.
const LOG_BACKLOG: usize = 256;

/// The `_meta` key by which a 2026-07-28 request opts in to log messages.
const LOG_LEVEL_META: &str = "io.modelcontextprotocol/logLevel";

/// How long a finished call waits for its last log messages to go out.
const LOG_DRAIN: Duration = Duration::from_secs(2);

/// Severity rank of a syslog level name as MCP uses them (unknown names rank lowest).
fn severity(level: &str) -> u8 {
    match level {
        "info" => 1,
        "notice" => 2,
        "warning" => 3,
        "error" => 4,
        "critical" => 5,
        "alert" => 6,
        "emergency" => 7,
        _ => 0,
    }
}

/// The handshake of the session a request belongs to, which every request of the session
/// shares: `None` for a 2026-07-28 request (no session, no server-to-client requests).
fn session_handshake(context: &RequestContext<RoleServer>) -> Option<Arc<ClientInfo>> {
    let stateless = context
        .protocol_version()
        .is_some_and(|v| ProtocolEra::of(v.as_str()).is_stateless());
    (!stateless).then(|| context.peer.peer_info().unwrap_or_default())
}

/// The relay of a caller's request that is not a tool call (a prompt, resource or completion
/// request): it reaches no client (an upstream's request about it is refused, as before), but
/// counts as its session's, so the session's tool calls keep the server's unmarked messages.
pub(crate) fn counted_for(context: &RequestContext<RoleServer>) -> Arc<dyn ClientRelay> {
    match session_handshake(context) {
        Some(handshake) => Arc::new(mcplex_upstream::NoClient::of(handshake)),
        None => Arc::new(mcplex_upstream::NoClient::default()),
    }
}

impl PeerRelay {
    /// The relay for the client that sent the request in `context`.
    pub(crate) fn for_request(context: &RequestContext<RoleServer>) -> Arc<PeerRelay> {
        let stateless = context
            .protocol_version()
            .is_some_and(|v| ProtocolEra::of(v.as_str()).is_stateless());
        // A 2026-07-28 client gets log messages only when its request opts in, and only at or
        // above the level it names; a session-era client sets its level with logging/setLevel.
        let threshold = if stateless {
            context
                .meta
                .0
                .get(LOG_LEVEL_META)
                .and_then(Value::as_str)
                .map(severity)
        } else {
            Some(0)
        };
        Arc::new(PeerRelay {
            peer: context.peer.clone(),
            origin: context.id.clone(),
            client: session_handshake(context),
            cancel: context.ct.clone(),
            threshold,
            logs: Mutex::new(None),
        })
    }

    /// Waits (at most a moment) until the log messages received so far have reached the client:
    /// called once the call is answered, so they arrive before its result.
    pub(crate) async fn flush(&self) {
        let forwarder = self
            .logs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(LogForwarder { messages, task }) = forwarder {
            drop(messages);
            let _ = tokio::time::timeout(LOG_DRAIN, task).await;
        }
    }
}

/// The client capability a server-to-client request needs, if it is one we know.
fn capability_for(method: &str, capabilities: &ClientCapabilities) -> Option<(&'static str, bool)> {
    match method {
        "sampling/createMessage" => Some(("sampling", capabilities.sampling.is_some())),
        "elicitation/create" => Some(("elicitation", capabilities.elicitation.is_some())),
        "roots/list" => Some(("roots", capabilities.roots.is_some())),
        _ => None,
    }
}

impl ClientRelay for PeerRelay {
    /// A session's client: every request of the session shares the one handshake its peer
    /// keeps, and this relay holds it, so no other session's can take its address meanwhile (a
    /// 2026-07-28 request has none, and no other request shares its client).
    fn client(&self) -> Option<ClientKey> {
        self.client.as_ref().map(ClientKey::of)
    }

    fn request(&self, method: String, params: Value) -> RelayFuture {
        let peer = self.peer.clone();
        let cancel = self.cancel.clone();
        let client = self.client.clone();
        let origin = OriginatingRequestId(self.origin.clone());
        Box::pin(async move {
            let Some(client) = client else {
                return Err(RelayError::unsupported(format!(
                    "the client speaks {STATELESS_VERSION}, in which a server cannot send it {method}"
                )));
            };
            if let Some((capability, false)) = capability_for(&method, &client.capabilities) {
                return Err(RelayError::unsupported(format!(
                    "the client did not declare the {capability} capability, so mcplex cannot forward {method} to it"
                )));
            }
            let mut request =
                ServerRequest::CustomRequest(CustomRequest::new(method, Some(params)));
            request.extensions_mut().insert(origin);
            let answer = tokio::select! {
                answer = peer.send_request(request) => answer,
                () = cancel.cancelled() => {
                    return Err(RelayError {
                        code: -32800,
                        message: "the client cancelled the call this request belongs to".to_owned(),
                        data: None,
                    });
                }
            };
            match answer {
                Ok(result) => serde_json::to_value(result).map_err(|e| RelayError {
                    code: -32603,
                    message: format!("the client's answer could not be forwarded: {e}"),
                    data: None,
                }),
                Err(ServiceError::McpError(error)) => Err(RelayError {
                    code: i64::from(error.code.0),
                    message: error.message.into_owned(),
                    data: error.data,
                }),
                Err(other) => Err(RelayError {
                    code: -32603,
                    message: format!("the client could not be asked: {other}"),
                    data: None,
                }),
            }
        })
    }

    fn notify(&self, method: String, params: Value) {
        let Some(threshold) = self.threshold else {
            return;
        };
        let level = params
            .get("level")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if method != "notifications/message" || severity(level) < threshold {
            return;
        }
        let param = match serde_json::from_value::<LoggingMessageNotificationParam>(params) {
            Ok(param) => param,
            Err(e) => {
                tracing::debug!("dropped a malformed upstream log message: {e}");
                return;
            }
        };
        let mut logs = self.logs.lock().unwrap_or_else(PoisonError::into_inner);
        let forwarder = logs.get_or_insert_with(|| {
            let (messages, mut pending) = mpsc::channel(LOG_BACKLOG);
            let peer = self.peer.clone();
            let task = tokio::spawn(async move {
                while let Some(param) = pending.recv().await {
                    if let Err(e) = peer.notify_logging_message(param).await {
                        tracing::debug!("cannot forward a log message to the client: {e}");
                        break;
                    }
                }
            });
            LogForwarder { messages, task }
        });
        let _ = forwarder.messages.try_send(param);
    }
}
