//! The direct surface: every visible tool as `server__tool`, in `full` or `deferred` form, plus
//! `describe_tool`. Calls go through `Gateway::call` (resolve → policy → validate → upstream).

use std::sync::Arc;

use mcplex_dispatch::{CallContext, Gateway, ToolCall};
use mcplex_upstream::STATELESS_VERSION;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities, SubscriptionFilter,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::describe::{self, DESCRIBE_TOOL};
use crate::errors::to_wire;
use crate::listen::LegacyPeers;
use crate::results;
use crate::typed::{ToolsCache, call_response};

/// The legend for compact signatures, exactly as `docs/direct-surface.md` gives it. Emitted in
/// both modes (phrased conditionally, so it stays true in `full` mode): one shape to cache.
pub const SIGNATURE_LEGEND: &str = "Some tool descriptions end with a compact signature (param*:type, ...): * marks a required parameter and ~ marks collapsed/lossy details. When a signature is present the listed inputSchema is a placeholder, not the real schema \u{2014} flat signatures are directly callable, and for ~-marked tools call 'describe_tool' with the listed tool name to get the full schema.";

/// Used when the config sets no `instructions`: what this surface offers.
const DEFAULT_INSTRUCTIONS: &str = "mcplex direct surface: every tool of every connected MCP server, named server__tool (the description starts with [server]); call them directly. describe_tool returns a tool's full definition (input schema, output schema, annotations), or with check: true whether each tool is ready to call.";

/// One server instance shared by every direct route (`/mcp`, `/mcp/all`, stdio): always the
/// same listing, the same mode.
#[derive(Clone)]
pub struct DirectSurface {
    gateway: Arc<Gateway>,
    peers: LegacyPeers,
    tools: ToolsCache,
    /// Resolved once, when the server instance is built.
    instructions: Arc<str>,
}

impl DirectSurface {
    /// Builds the surface and starts forwarding listing changes to connected sessions.
    /// `instructions` is the operator's text, if configured; the legend is always appended.
    pub fn new(gateway: Arc<Gateway>, instructions: Option<&str>) -> DirectSurface {
        let peers = LegacyPeers::start(gateway.listing_changes());
        let instructions = format!(
            "{}\n\n{SIGNATURE_LEGEND}",
            instructions.unwrap_or(DEFAULT_INSTRUCTIONS)
        )
        .into();
        DirectSurface {
            gateway,
            peers,
            tools: ToolsCache::default(),
            instructions,
        }
    }

    pub fn gateway(&self) -> &Arc<Gateway> {
        &self.gateway
    }
}

impl ServerHandler for DirectSurface {
    fn get_info(&self) -> InitializeResult {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        InitializeResult::new(capabilities)
            .with_server_info(Implementation::new("mcplex", env!("CARGO_PKG_VERSION")))
            .with_instructions(self.instructions.as_ref())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.gateway.startup_settled().await;
        let snapshot = self.gateway.snapshot();
        let tools = self
            .tools
            .get(snapshot.generation(), snapshot.direct_listing());
        Ok(ListToolsResult::with_all_items(tools.as_ref().clone()))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.peers.add(context.peer);
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::new();
        accepted.tools_list_changed = requested.tools_list_changed.filter(|wanted| *wanted);
        Some(accepted)
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let mut changes = self.gateway.listing_changes();
        changes.mark_unchanged();
        let wants_tools = subscription.accepted().tools_list_changed == Some(true);
        loop {
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        return Ok(());
                    }
                    if wants_tools && subscription.sink().notify_tool_list_changed().await.is_err() {
                        return Ok(());
                    }
                }
                () = subscription.cancelled() => return Ok(()),
            }
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let progress = context.meta.get_progress_token().map(|token| {
            let (sender, mut updates) = mpsc::unbounded_channel::<Value>();
            let peer = context.peer.clone();
            tokio::spawn(async move {
                while let Some(mut update) = updates.recv().await {
                    update["progressToken"] = serde_json::to_value(&token).unwrap_or(Value::Null);
                    match serde_json::from_value::<ProgressNotificationParam>(update) {
                        Ok(param) => {
                            if peer.notify_progress(param).await.is_err() {
                                break;
                            }
                        }
                        Err(e) => tracing::debug!(
                            "dropped a malformed upstream progress notification: {e}"
                        ),
                    }
                }
            });
            sender
        });
        let stateless_caller = context
            .protocol_version()
            .is_some_and(|v| v.as_str() >= STATELESS_VERSION);
        if request.name == DESCRIBE_TOOL {
            let snapshot = self.gateway.snapshot();
            let body = match describe::answer(&snapshot, request.arguments.as_ref()) {
                Ok(answer) => results::structured(answer),
                Err(message) => results::error(
                    json!({"error": message, "error_type": "invalid_params", "tool": DESCRIBE_TOOL}),
                ),
            };
            return finish(body, stateless_caller);
        }
        let call = ToolCall {
            name: request.name.into_owned(),
            arguments: request.arguments,
        };
        let cx = CallContext {
            cancel: context.ct.clone(),
            progress,
        };
        let raw = match self.gateway.call(call, cx).await {
            Ok(raw) => raw,
            Err(error) => to_wire(error)?,
        };
        finish(raw, stateless_caller)
    }
}

/// A tool result as rmcp's response; 2026-07-28 results state their type, which an older
/// upstream's result (or our own) does not.
fn finish(mut raw: Value, stateless_caller: bool) -> Result<CallToolResponse, ErrorData> {
    if stateless_caller && let Some(result) = raw.as_object_mut() {
        result
            .entry("resultType")
            .or_insert_with(|| Value::from("complete"));
    }
    call_response(raw)
}
