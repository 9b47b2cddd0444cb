//! [`Gateway::call`]: a tool call through the boundary. The name is resolved in the snapshot
//! within the caller's scope (what the caller may not reach is unknown or unavailable), the
//! arguments are validated against the stored upstream schema, and the call goes upstream
//! with the request id, the server's timeout, progress and cancellation. The raw result comes
//! back untouched.

use std::sync::Arc;

use mcplex_catalog::Permission;

use mcplex_catalog::{CatalogTool, Scope, Snapshot, UnavailableReason};
use mcplex_names::ToolId;
use mcplex_protocol::REQUEST_ID_META;
use mcplex_protocol::json_len;
use mcplex_upstream::{CallOptions, ClientRelay, OnBehalfOf, RawResult, UpstreamError};
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::accounting::{Finished, Ledger, Outcome, Target};
use crate::{DispatchError, Gateway, UpstreamMethod};

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
    /// The OAuth access token the caller presented, for a `per_user` server that exchanges it.
    pub credential: Option<mcplex_upstream::Secret>,
    /// Cancelled when the client cancels the request or goes away.
    pub cancel: CancellationToken,
    /// Receives the `params` of each upstream progress notification, when the client asked for
    /// progress. The surface rewrites the token back to the client's own.
    pub progress: Option<mpsc::Sender<Value>>,
    /// Reaches the calling client, for the requests (sampling, elicitation, roots) and log
    /// messages the upstream sends while it works on the call ([`mcplex_upstream::NoClient`]
    /// for a caller without one: every caller's call has a relay, so that a message about it is
    /// never taken for another caller's).
    pub relay: Arc<dyn ClientRelay>,
}

impl Gateway {
    /// Admits a request of `caller` under its limits (held until the upstream answers), or the
    /// refusal, counted in the metrics.
    pub(crate) fn admitted(
        &self,
        caller: Option<&Arc<str>>,
        permission: Permission,
    ) -> Result<crate::Admission, crate::Limited> {
        self.limits
            .admit(caller, permission)
            .inspect_err(|limited| {
                mcplex_telemetry::metrics()
                    .limited_calls
                    .get_or_create(&mcplex_telemetry::LimitLabels {
                        limit: limited.kind.as_str(),
                        class: limited.class.as_str(),
                    })
                    .inc();
            })
    }

    /// Calls a tool: resolve → validate → call → the raw result. Every call gets a request id
    /// (sent upstream in `_meta`, in the logs and the audit record) and is counted in the
    /// metrics.
    pub async fn call(&self, call: ToolCall, cx: CallContext) -> Result<Value, DispatchError> {
        self.call_reading(call, cx, RawResult::into_value).await
    }

    /// [`Gateway::call`], the result given to `read` as the upstream wrote it where its wire
    /// kept it (a stdio server's answer: [`RawResult`]), for a surface that passes it on
    /// untouched. A result `read` cannot take fails the call, counted and audited as failed.
    pub async fn call_reading<T>(
        &self,
        call: ToolCall,
        cx: CallContext,
        read: impl FnOnce(RawResult) -> Result<T, UpstreamError>,
    ) -> Result<T, DispatchError> {
        let ledger = Ledger::open();
        let audit = self.audit.as_ref();
        // Kept without the values of members named like credentials (`password`, `api_key`).
        let arguments = audit
            .filter(|a| a.with_arguments)
            .and_then(|_| call.arguments.clone().map(Value::Object))
            .map(|mut arguments| {
                mcplex_config::without_secret_values(&mut arguments);
                arguments
            });
        // Measured only for the audit log, and without copying the arguments.
        let request_bytes = match (audit, &call.arguments) {
            (Some(_), Some(arguments)) => json_len(arguments, usize::MAX),
            _ => 0,
        };
        let requested = call.name.clone();
        let token = cx.token.clone();
        let span = mcplex_trace::call(UpstreamMethod::ToolsCall.as_str(), Some(&requested));
        let (resolved, outcome) = self
            .dispatch(call, cx, &ledger.request_id)
            .instrument(span.clone())
            .await;
        let finished = Finished {
            method: UpstreamMethod::ToolsCall,
            server: resolved.as_ref().map(|id| &id.server),
            tool: resolved.as_ref().map(|id| &id.tool),
            target: Target::Tool {
                resolved: resolved.as_ref(),
                requested: &requested,
            },
            token,
            request_bytes,
            arguments,
        };
        let answered = Outcome::of_raw(&outcome);
        let outcome = match outcome {
            Ok(result) => read(result).map_err(DispatchError::from),
            Err(error) => Err(error),
        };
        let accounted = match &outcome {
            Ok(_) => answered,
            Err(error) => Outcome::failed(error),
        };
        ledger.close(finished, accounted, audit, &span);
        outcome
    }

    async fn dispatch(
        &self,
        call: ToolCall,
        cx: CallContext,
        request_id: &str,
    ) -> (Option<ToolId>, Result<RawResult, DispatchError>) {
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
                    reason,
                };
                return (None, Err(error));
            }
        };
        let id = tool.id.clone();
        // The arguments become a JSON value once and go upstream as they are, unchanged.
        let arguments = call.arguments.map(Value::Object);
        if let Err(refusal) = validate(&snapshot, tool, call.name, arguments.as_ref()) {
            return (Some(id), Err(*refusal));
        }
        // Counted only when the call is about to leave: refusals of every other kind cost the
        // caller nothing. The admission is held until the upstream answers.
        let _admission = match self.admitted(cx.token.as_ref(), tool.permission) {
            Ok(admission) => admission,
            Err(limited) => return (Some(id), Err(DispatchError::Limited(limited))),
        };
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
        // On a `per_user` server the call goes out with the caller's own credential.
        let (caller, credential) = (cx.token, cx.credential);
        let options = CallOptions {
            timeout: Some(self.upstreams.call_timeout(&id.server)),
            cancel: Some(cx.cancel),
            progress: cx.progress,
            relay: Some(cx.relay),
        };
        // The snapshot is not held across the upstream call: a rebuild may swap it meanwhile.
        drop(snapshot);
        let outcome = self
            .upstreams
            .call_tool_raw(
                &id.server,
                Value::Object(params),
                options,
                OnBehalfOf::of(caller.as_deref(), credential.as_ref()),
            )
            .await
            .map_err(DispatchError::from);
        (Some(id), outcome)
    }
}

/// Checks `arguments` against the tool's stored upstream schema, never the advertised (maybe
/// deferred) one; `name` is the name the caller used, for the refusal.
fn validate(
    snapshot: &Snapshot,
    tool: &CatalogTool,
    name: String,
    arguments: Option<&Value>,
) -> Result<(), Box<DispatchError>> {
    let span = mcplex_trace::validation(&tool.id.server, &tool.id.tool);
    let _checking = span.enter();
    let checked = snapshot.check_arguments(tool, arguments);
    span.record("mcplex.valid", checked.is_ok());
    checked.map_err(|problems| {
        Box::new(DispatchError::InvalidArguments {
            name,
            problems,
            input_schema: tool.raw.get("inputSchema").cloned().unwrap_or(Value::Null),
        })
    })
}
