//! [`Gateway`]: the snapshot, the upstreams, and the single dispatch path.

use std::sync::Arc;

use arc_swap::ArcSwap;
use std::time::{Duration, Instant};

use mcplex_catalog::{Scope, ServerStatus, Snapshot, UnavailableReason};
use mcplex_upstream::{CallOptions, Upstreams};
use serde_json::{Map, Value};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::DispatchError;

/// A tool call as a surface received it.
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// The name as the client sent it: a display name or a canonical `server:tool`.
    pub name: String,
    pub arguments: Option<Map<String, Value>>,
}

/// Per-call facts that are not part of the call itself.
pub struct CallContext {
    /// What the caller may reach; anything outside it is refused as unknown.
    pub scope: Scope,
    /// Cancelled when the client cancels the request or goes away.
    pub cancel: CancellationToken,
    /// Receives the `params` of each upstream progress notification, when the client asked for
    /// progress. The surface rewrites the token back to the client's own.
    pub progress: Option<mpsc::UnboundedSender<Value>>,
}

/// The live gateway: what every surface reads and calls through.
pub struct Gateway {
    snapshot: ArcSwap<Snapshot>,
    upstreams: Upstreams,
    listing_version: watch::Sender<u64>,
    published: watch::Sender<u64>,
    /// Until this instant, listings and calls of unknown names wait for servers still connecting.
    settle_until: Instant,
}

/// The startup grace a gateway serving one spawning client (stdio) uses. Such clients list once,
/// at once; without a grace they would see an empty catalog and, if they ignore
/// `list_changed`, never more. A network gateway uses none: a slow server never delays the others.
pub const STARTUP_GRACE: Duration = Duration::from_secs(5);

impl Gateway {
    /// A gateway over `upstreams`; for `startup_grace` after now, listings wait for servers that
    /// are still connecting for the first time (zero: never wait).
    pub fn new(upstreams: Upstreams, startup_grace: Duration) -> Gateway {
        Gateway {
            snapshot: ArcSwap::from_pointee(Snapshot::empty()),
            upstreams,
            listing_version: watch::Sender::new(0),
            published: watch::Sender::new(0),
            settle_until: Instant::now() + startup_grace,
        }
    }

    /// The current snapshot. Cheap; hold it for the length of one request.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot.load_full()
    }

    /// Swaps in a new snapshot. Ticks [`Gateway::listing_changes`] only when the direct listing
    /// differs, so a rebuild that changes nothing visible sends no `list_changed`.
    pub fn publish(&self, snapshot: Snapshot) {
        let previous = self.snapshot.swap(Arc::new(snapshot));
        let current = self.snapshot.load();
        if previous.direct_listing() != current.direct_listing() {
            self.listing_version.send_modify(|version| *version += 1);
        }
        self.published.send_modify(|count| *count += 1);
    }

    /// During the startup grace, waits until no server is connecting for the first time (or the
    /// grace ends). Afterwards, or with no grace, returns at once.
    pub async fn startup_settled(&self) {
        let deadline = self.settle_until;
        if Instant::now() >= deadline {
            return;
        }
        let mut changes = self.published.subscribe();
        let connecting = |snapshot: &Snapshot| {
            snapshot
                .servers()
                .values()
                .any(|v| v.status == ServerStatus::Connecting)
        };
        let _ = tokio::time::timeout_at(deadline.into(), async {
            while connecting(&self.snapshot()) {
                if changes.changed().await.is_err() {
                    return;
                }
            }
        })
        .await;
    }

    /// A receiver that changes with every published snapshot (server status changes included).
    pub fn snapshot_changes(&self) -> watch::Receiver<u64> {
        self.published.subscribe()
    }

    /// A receiver that changes whenever the direct listing changes.
    pub fn listing_changes(&self) -> watch::Receiver<u64> {
        self.listing_version.subscribe()
    }

    pub fn upstreams(&self) -> &Upstreams {
        &self.upstreams
    }

    /// The one dispatch path: resolve within the caller's scope (quarantine, approvals and token
    /// scope: what the caller may not reach is unknown or unavailable) → validate → call → raw
    /// result.
    pub async fn call(&self, call: ToolCall, cx: CallContext) -> Result<Value, DispatchError> {
        let mut snapshot = self.snapshot();
        if snapshot.resolve(&call.name).is_none() {
            // Right after start the tool's server may still be connecting.
            self.startup_settled().await;
            snapshot = self.snapshot();
        }
        let tool = match snapshot.availability(&call.name, &cx.scope) {
            Ok(tool) => tool,
            // Listed tools of a server that is connecting or unhealthy are still tried: the
            // upstream call reports what is wrong, with the server's name.
            Err(
                UnavailableReason::ServerInitializing
                | UnavailableReason::ServerUnhealthy
                | UnavailableReason::ServerDisabled
                | UnavailableReason::NotFound,
            ) => match snapshot.resolve(&call.name) {
                Some(tool) if snapshot.visible(tool, &cx.scope) => tool,
                _ => {
                    return Err(DispatchError::UnknownTool {
                        name: call.name.clone(),
                    });
                }
            },
            Err(reason) => {
                return Err(DispatchError::Unavailable {
                    name: call.name.clone(),
                    reason: reason.as_str(),
                });
            }
        };
        // Validated against the stored upstream schema, never the advertised (maybe deferred) one.
        // The arguments become a JSON value once and go upstream as they are, unchanged.
        let arguments = call.arguments.map(Value::Object);
        if let Err(problem) = snapshot.check_arguments(tool, arguments.as_ref()) {
            let input_schema = tool.raw.get("inputSchema").cloned().unwrap_or(Value::Null);
            return Err(DispatchError::InvalidArguments {
                name: call.name,
                problem,
                input_schema,
            });
        }
        let mut params = Map::with_capacity(2);
        params.insert("name".to_owned(), Value::String(tool.id.tool.to_string()));
        if let Some(arguments) = arguments {
            params.insert("arguments".to_owned(), arguments);
        }
        let server = tool.id.server.clone();
        let options = CallOptions {
            timeout: Some(self.upstreams.call_timeout(&server)),
            cancel: Some(cx.cancel),
            progress: cx.progress,
        };
        // The snapshot is not held across the upstream call: a rebuild may swap it meanwhile.
        drop(snapshot);
        Ok(self
            .upstreams
            .call_tool(&server, Value::Object(params), options)
            .await?)
    }

    /// Terminates every upstream.
    pub async fn shutdown(&self) {
        self.upstreams.shutdown().await;
    }
}
