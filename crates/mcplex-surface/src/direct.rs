//! The direct surface: every visible tool, listed as `server__tool` in `full` form.

use std::sync::Arc;

use mcplex_dispatch::{CallContext, Gateway, ToolCall};
use mcplex_upstream::STATELESS_VERSION;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities, SubscriptionFilter,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData, ServerHandler};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::errors::to_wire;
use crate::listen::LegacyPeers;
use crate::typed::{ToolsCache, call_response};

const INSTRUCTIONS: &str = "mcplex gateway: the tools of several MCP servers in one list. \
Each tool is named server__tool and its description starts with [server].";

/// One server instance shared by every direct route (`/mcp`, `/mcp/all`, stdio): always the
/// same listing, the same mode.
#[derive(Clone)]
pub struct DirectSurface {
    gateway: Arc<Gateway>,
    peers: LegacyPeers,
    tools: ToolsCache,
}

impl DirectSurface {
    /// Builds the surface and starts forwarding listing changes to connected sessions.
    pub fn new(gateway: Arc<Gateway>) -> DirectSurface {
        let peers = LegacyPeers::start(gateway.listing_changes());
        DirectSurface {
            gateway,
            peers,
            tools: ToolsCache::default(),
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
            .with_instructions(INSTRUCTIONS)
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
        let call = ToolCall {
            name: request.name.into_owned(),
            arguments: request.arguments,
        };
        let cx = CallContext {
            cancel: context.ct.clone(),
            progress,
        };
        let mut raw = self.gateway.call(call, cx).await.map_err(to_wire)?;
        // 2026-07-28 results state their type; an older upstream's result does not.
        if stateless_caller && let Some(result) = raw.as_object_mut() {
            result
                .entry("resultType")
                .or_insert_with(|| Value::from("complete"));
        }
        call_response(raw)
    }
}
