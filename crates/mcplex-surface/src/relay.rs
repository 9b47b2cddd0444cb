//! The client end of a call, for its upstream: the requests an upstream makes while working on a
//! call (`sampling/createMessage`, `elicitation/create`, `roots/list`) are sent to the client that
//! made the call, and its answer goes back; the upstream's log messages during the call reach the
//! same client.
//!
//! A client that did not declare the capability a request needs is never asked: the upstream
//! gets `-32601` naming the missing capability. 2026-07-28 clients cannot be sent requests at all
//! (that revision has the server return an input-required result instead, which passes through
//! untouched when the upstream speaks it).
#![allow(deprecated)] // logging: deprecated by 2026-07-28 (SEP-2577), used by session-era clients

use std::sync::Arc;

use mcplex_upstream::{ClientRelay, RelayError, RelayFuture, STATELESS_VERSION};
use rmcp::Peer;
use rmcp::model::{
    ClientCapabilities, CustomRequest, LoggingMessageNotificationParam, ServerRequest,
};
use rmcp::service::{RequestContext, RoleServer, ServiceError};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Relays to the client of one request.
pub(crate) struct PeerRelay {
    peer: Peer<RoleServer>,
    /// `None` for a 2026-07-28 client (no server-to-client requests in that revision).
    capabilities: Option<ClientCapabilities>,
    cancel: CancellationToken,
    /// Log messages, sent in order by one task.
    logs: mpsc::UnboundedSender<LoggingMessageNotificationParam>,
    /// The least severity forwarded; `None`: no log messages.
    threshold: Option<u8>,
}

/// The `_meta` key by which a 2026-07-28 request opts in to log messages.
const LOG_LEVEL_META: &str = "io.modelcontextprotocol/logLevel";

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

impl PeerRelay {
    /// The relay for the client that sent the request in `context`, and the task that forwards
    /// its log messages in order. The task ends once every copy of the relay is dropped (the
    /// upstream answered), after sending what it holds.
    pub(crate) fn for_request(
        context: &RequestContext<RoleServer>,
    ) -> (Arc<dyn ClientRelay>, JoinHandle<()>) {
        let stateless = context
            .protocol_version()
            .is_some_and(|v| v.as_str() >= STATELESS_VERSION);
        let capabilities = if stateless {
            None
        } else {
            Some(
                context
                    .peer
                    .peer_info()
                    .map(|info| info.capabilities.clone())
                    .unwrap_or_default(),
            )
        };
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
        let (logs, mut pending) = mpsc::unbounded_channel::<LoggingMessageNotificationParam>();
        let peer = context.peer.clone();
        let forwarder = tokio::spawn(async move {
            while let Some(param) = pending.recv().await {
                if let Err(e) = peer.notify_logging_message(param).await {
                    tracing::debug!("cannot forward a log message to the client: {e}");
                    break;
                }
            }
        });
        let relay = Arc::new(PeerRelay {
            peer: context.peer.clone(),
            capabilities,
            cancel: context.ct.clone(),
            logs,
            threshold,
        });
        (relay, forwarder)
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
    fn request(&self, method: String, params: Value) -> RelayFuture {
        let peer = self.peer.clone();
        let cancel = self.cancel.clone();
        let capabilities = self.capabilities.clone();
        Box::pin(async move {
            let Some(capabilities) = capabilities else {
                return Err(RelayError::unsupported(format!(
                    "the client speaks {STATELESS_VERSION}, in which a server cannot send it {method}"
                )));
            };
            if let Some((capability, false)) = capability_for(&method, &capabilities) {
                return Err(RelayError::unsupported(format!(
                    "the client did not declare the {capability} capability, so mcplex cannot forward {method} to it"
                )));
            }
            let request = ServerRequest::CustomRequest(CustomRequest::new(method, Some(params)));
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
        match serde_json::from_value::<LoggingMessageNotificationParam>(params) {
            Ok(param) => {
                let _ = self.logs.send(param);
            }
            Err(e) => tracing::debug!("dropped a malformed upstream log message: {e}"),
        }
    }
}
