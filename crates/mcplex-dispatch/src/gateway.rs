//! [`Gateway`]: the snapshot, the upstreams, and the single dispatch path.

use std::sync::Arc;

use arc_swap::ArcSwap;
use std::time::{Duration, Instant};

use mcplex_catalog::{Scope, ServerStatus, Snapshot, UnavailableReason};
use mcplex_config::Config;
use mcplex_upstream::{BuiltinConnector, CallOptions, ClientRelay, UpstreamEvent, Upstreams};
use serde_json::{Map, Value};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::{AuditRecord, DispatchError};

/// The `_meta` key that carries the gateway's request id to the upstream.
pub const REQUEST_ID_META: &str = "io.mcplex/request-id";

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
    /// The agent token's name, for the audit log.
    pub token: Option<Arc<str>>,
    /// Cancelled when the client cancels the request or goes away.
    pub cancel: CancellationToken,
    /// Receives the `params` of each upstream progress notification, when the client asked for
    /// progress. The surface rewrites the token back to the client's own.
    pub progress: Option<mpsc::UnboundedSender<Value>>,
    /// Reaches the calling client, for the requests (sampling, elicitation, roots) and log
    /// messages the upstream sends while it works on the call.
    pub relay: Option<Arc<dyn ClientRelay>>,
}

/// The live gateway: what every surface reads and calls through.
pub struct Gateway {
    snapshot: ArcSwap<Snapshot>,
    upstreams: Upstreams,
    listing_version: watch::Sender<u64>,
    /// Ticks when the served prompts, resources or templates change.
    offers_version: watch::Sender<u64>,
    published: watch::Sender<u64>,
    /// Until this instant, listings and calls of unknown names wait for servers still connecting.
    settle_until: Instant,
    /// Where finished calls are reported, once the operator's audit log is attached.
    audit: std::sync::OnceLock<Audit>,
    /// The sentence-embedding model, once attached: searches turn hybrid.
    semantic: std::sync::OnceLock<crate::SemanticSearch>,
}

struct Audit {
    records: mpsc::Sender<AuditRecord>,
    with_arguments: bool,
}

/// The startup grace a gateway serving one spawning client (stdio) uses. Such clients list once,
/// at once; without a grace they would see an empty catalog and, if they ignore
/// `list_changed`, never more. A network gateway uses none: a slow server never delays the others.
pub const STARTUP_GRACE: Duration = Duration::from_secs(5);

impl Gateway {
    /// Starts every enabled server of `config` (their lifecycle events go to `events`) and
    /// returns the gateway over them at once; servers join as they connect. For `startup_grace`
    /// after now, listings wait for servers that are still connecting for the first time (zero:
    /// never wait). The connections belong to the gateway: nothing else can reach them.
    pub fn start(
        config: &Config,
        builtin: Option<BuiltinConnector>,
        events: mpsc::UnboundedSender<UpstreamEvent>,
        startup_grace: Duration,
    ) -> Gateway {
        let upstreams = Upstreams::start(config, builtin, events);
        Gateway {
            snapshot: ArcSwap::from_pointee(Snapshot::empty()),
            upstreams,
            listing_version: watch::Sender::new(0),
            offers_version: watch::Sender::new(0),
            published: watch::Sender::new(0),
            settle_until: Instant::now() + startup_grace,
            audit: std::sync::OnceLock::new(),
            semantic: std::sync::OnceLock::new(),
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
        if !previous.offers().same_listing(current.offers()) {
            self.offers_version.send_modify(|version| *version += 1);
        }
        self.published.send_modify(|count| *count += 1);
        if let Some(semantic) = self.semantic.get() {
            semantic.embed_later(self.snapshot());
        }
    }

    /// Turns on hybrid search with `semantic`'s model: the current snapshot and every one
    /// published after it are embedded in the background. Once only; later calls are ignored.
    pub fn search_semantically(&self, semantic: crate::SemanticSearch) {
        if self.semantic.set(semantic).is_ok()
            && let Some(semantic) = self.semantic.get()
        {
            semantic.embed_later(self.snapshot());
        }
    }

    /// The embedding of a search `query` against `snapshot`: `None` (plain BM25F) without a
    /// model, before the snapshot's tools are embedded, or for a blank query.
    pub async fn query_vector(&self, snapshot: &Snapshot, query: &str) -> Option<Arc<[f32]>> {
        let semantic = self.semantic.get()?;
        if query.trim().is_empty() || !snapshot.has_vectors() {
            return None;
        }
        semantic.query_vector(query).await
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

    /// A receiver that changes whenever the served prompts, resources or templates change.
    pub fn offers_changes(&self) -> watch::Receiver<u64> {
        self.offers_version.subscribe()
    }

    /// Sends a request other than a tool call (`prompts/get`, `resources/read`,
    /// `completion/complete`, `resources/subscribe`, `logging/setLevel`, ...) to `server`, with
    /// the server's call timeout, and returns its raw result. The surface has resolved the name
    /// through the snapshot within the caller's scope.
    pub async fn forward(
        &self,
        server: &str,
        method: &str,
        params: Value,
        cancel: CancellationToken,
    ) -> Result<Value, DispatchError> {
        let options = CallOptions {
            timeout: Some(self.upstreams.call_timeout(server)),
            cancel: Some(cancel),
            ..CallOptions::default()
        };
        self.upstreams
            .request(server, method, params, options)
            .await
            .map_err(DispatchError::Upstream)
    }

    /// A receiver that changes whenever the direct listing changes.
    pub fn listing_changes(&self) -> watch::Receiver<u64> {
        self.listing_version.subscribe()
    }

    pub fn upstreams(&self) -> &Upstreams {
        &self.upstreams
    }

    /// Makes the running servers those of `config`: removed, disabled or changed servers are
    /// stopped, new ones started; untouched servers keep their connections.
    pub fn reconcile(&self, config: &Config) {
        self.upstreams.reconcile(config);
    }

    /// Reports every finished call to `records` (bounded: when the writer falls behind, records
    /// are dropped and counted, calls never wait). Argument values only with `with_arguments`.
    pub fn audit_to(&self, records: mpsc::Sender<AuditRecord>, with_arguments: bool) {
        let _ = self.audit.set(Audit {
            records,
            with_arguments,
        });
    }

    /// The one dispatch path: resolve within the caller's scope (quarantine, approvals and token
    /// scope: what the caller may not reach is unknown or unavailable) → validate → call → raw
    /// result. Every call gets a request id (sent upstream in `_meta`, in the logs and the audit
    /// record) and is counted in the metrics.
    pub async fn call(&self, call: ToolCall, cx: CallContext) -> Result<Value, DispatchError> {
        let started = Instant::now();
        let at_ms = crate::accounting::now_ms();
        let request_id = crate::accounting::next_request_id();
        let audit = self.audit.get();
        let arguments = audit
            .filter(|a| a.with_arguments)
            .and_then(|_| call.arguments.clone().map(Value::Object));
        // Measured only for the audit log, and without copying the arguments.
        let request_bytes = match (audit, &call.arguments) {
            (Some(_), Some(arguments)) => crate::accounting::json_size(arguments),
            _ => 0,
        };
        let requested = call.name.clone();
        let token = cx.token.clone();
        let (resolved, outcome) = self.dispatch(call, cx, &request_id).await;
        let status = crate::accounting::status_of(&outcome);
        let duration = started.elapsed();
        let metrics = mcplex_telemetry::metrics();
        // Labels only ever hold configured names, never what a caller typed.
        let (server, tool) = match &resolved {
            Some(id) => (id.server.to_string(), id.tool.to_string()),
            None => ("-".to_owned(), "-".to_owned()),
        };
        metrics
            .calls
            .get_or_create(&mcplex_telemetry::CallLabels {
                server: server.clone(),
                tool,
                status,
            })
            .inc();
        if status == "invalid_arguments" {
            metrics
                .validation_failures
                .get_or_create(&mcplex_telemetry::server(&server))
                .inc();
        }
        if resolved.is_some() {
            metrics
                .call_seconds
                .get_or_create(&mcplex_telemetry::server(&server))
                .observe(duration.as_secs_f64());
        }
        tracing::debug!(request_id = %request_id, status, elapsed_ms = duration.as_millis() as u64, "tool call {requested}");
        if let Some(audit) = audit {
            let record = AuditRecord {
                at_ms,
                request_id,
                token,
                tool: match &resolved {
                    Some(id) => id.to_string(),
                    None => requested.chars().take(200).collect(),
                },
                status,
                duration,
                request_bytes,
                response_bytes: outcome
                    .as_ref()
                    .map(crate::accounting::json_size)
                    .unwrap_or(0),
                arguments,
            };
            if audit.records.try_send(record).is_err() {
                tracing::debug!("audit writer is behind; a record was dropped");
            }
        }
        outcome
    }

    async fn dispatch(
        &self,
        call: ToolCall,
        cx: CallContext,
        request_id: &str,
    ) -> (Option<mcplex_names::ToolId>, Result<Value, DispatchError>) {
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
                    let name = call.name;
                    return (None, Err(DispatchError::UnknownTool { name }));
                }
            },
            Err(reason) => {
                let error = DispatchError::Unavailable {
                    name: call.name,
                    reason: reason.as_str(),
                };
                return (None, Err(error));
            }
        };
        let id = tool.id.clone();
        // Validated against the stored upstream schema, never the advertised (maybe deferred) one.
        // The arguments become a JSON value once and go upstream as they are, unchanged.
        let arguments = call.arguments.map(Value::Object);
        if let Err(problem) = snapshot.check_arguments(tool, arguments.as_ref()) {
            let input_schema = tool.raw.get("inputSchema").cloned().unwrap_or(Value::Null);
            let error = DispatchError::InvalidArguments {
                name: call.name,
                problem,
                input_schema,
            };
            return (Some(id), Err(error));
        }
        let mut params = Map::with_capacity(3);
        params.insert("name".to_owned(), Value::String(tool.id.tool.to_string()));
        if let Some(arguments) = arguments {
            params.insert("arguments".to_owned(), arguments);
        }
        // The request id reaches the upstream, so its logs and ours name the same call.
        let mut meta = Map::with_capacity(1);
        meta.insert(
            REQUEST_ID_META.to_owned(),
            Value::String(request_id.to_owned()),
        );
        params.insert("_meta".to_owned(), Value::Object(meta));
        let options = CallOptions {
            timeout: Some(self.upstreams.call_timeout(&id.server)),
            cancel: Some(cx.cancel),
            progress: cx.progress,
            relay: cx.relay,
        };
        // The snapshot is not held across the upstream call: a rebuild may swap it meanwhile.
        drop(snapshot);
        let outcome = self
            .upstreams
            .call_tool(&id.server, Value::Object(params), options)
            .await
            .map_err(DispatchError::from);
        (Some(id), outcome)
    }

    /// Terminates every upstream.
    pub async fn shutdown(&self) {
        self.upstreams.shutdown().await;
    }
}
