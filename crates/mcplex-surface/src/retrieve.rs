//! The retrieve surface (`/mcp/call`, and `/mcp` with `routing_mode: "retrieve_tools"`): three
//! constant tools, `retrieve_tools`, `call_tool` and `describe_tool`. Its listing never changes,
//! whatever the fleet does.
#![allow(deprecated)] // logging (in `serve_offers!`): deprecated by 2026-07-28, still used

use std::sync::Arc;

use mcplex_dispatch::Gateway;
use rmcp::model::{
    CallToolRequestParams, InitializeResult, ListToolsResult, PaginatedRequestParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};

use crate::SurfaceOptions;
use crate::caller::Reach;
use crate::calls::{CallAnswer, OnUnknown, call, finish};
use crate::describe::{self, DESCRIBE_TOOL};
use crate::direct::call_by_name;
use crate::listen::Clients;
use crate::search_tools::{self, CALL_TOOL, RETRIEVE_TOOLS};

const DEFAULT_INSTRUCTIONS: &str = "mcplex retrieve surface: find tools with retrieve_tools (a description of the task as the query), then call one with call_tool using the name it returned. describe_tool returns a tool's full definition.";

/// The retrieve surface's one server instance.
#[derive(Clone)]
pub struct RetrieveSurface {
    gateway: Arc<Gateway>,
    listing: Arc<Vec<rmcp::model::Tool>>,
    instructions: Arc<str>,
    reach: Reach,
    /// Sessions and resource subscriptions (prompts and resources are served here too).
    clients: Clients,
}

impl RetrieveSurface {
    pub fn new(gateway: Arc<Gateway>, options: &SurfaceOptions, reach: Reach) -> RetrieveSurface {
        let definitions = [
            search_tools::retrieve_tools_definition(),
            search_tools::call_tool_definition(),
            describe::definition(),
        ];
        let listing = definitions
            .into_iter()
            .filter_map(|d| serde_json::from_value(d).ok())
            .collect();
        let instructions = options
            .instructions
            .clone()
            .unwrap_or_else(|| DEFAULT_INSTRUCTIONS.to_owned())
            .into();
        RetrieveSurface {
            clients: Clients::start(&gateway, None),
            gateway,
            listing: Arc::new(listing),
            instructions,
            reach,
        }
    }
}

crate::offers::routed_surface!(RetrieveSurface);

impl ServerHandler for RetrieveSurface {
    fn get_info(&self) -> InitializeResult {
        // The tool listing never changes; prompts and resources do.
        crate::server_info(crate::full_capabilities(false), &self.instructions)
    }

    crate::offers::serve_offers!();

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.listing.as_ref().clone(),
        ))
    }
}

impl RetrieveSurface {
    /// `tools/call`, in the span of its request.
    async fn answer_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallAnswer, ErrorData> {
        let arguments = request.arguments.as_ref();
        let caller = self.reach.caller(&context.extensions);
        let scope = caller.scope.clone();
        match request.name.as_ref() {
            RETRIEVE_TOOLS => retrieve(&self.gateway, arguments, &scope, &context).await,
            CALL_TOOL => call_by_name(&self.gateway, arguments, &context, caller).await,
            DESCRIBE_TOOL => finish(
                describe::result(&self.gateway.snapshot(), arguments, &scope),
                &context,
            ),
            // Upstream tools are reached through call_tool here, but a direct name still works.
            _ => {
                call(
                    &self.gateway,
                    request.name.into_owned(),
                    request.arguments,
                    &context,
                    caller,
                    OnUnknown::Refuse,
                )
                .await
            }
        }
    }
}

/// Answers `retrieve_tools` for a caller with `scope` (the retrieve and code surfaces).
pub(crate) async fn retrieve(
    gateway: &Gateway,
    arguments: Option<&rmcp::model::JsonObject>,
    scope: &mcplex_catalog::Scope,
    context: &RequestContext<RoleServer>,
) -> Result<CallAnswer, ErrorData> {
    gateway.startup_settled().await;
    finish(
        search_tools::retrieve_tools(gateway, arguments, scope).await,
        context,
    )
}
