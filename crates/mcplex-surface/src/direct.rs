//! The direct surface: `describe_tool`, the two search built-ins when the config defers anything,
//! then every visible, non-deferred tool as `server__tool` in `full` or `deferred` form. Calls
//! go through `Gateway::call` (resolve → policy → validate → upstream).
#![allow(deprecated)] // logging (in `serve_offers!`): deprecated by 2026-07-28, still used

use std::sync::Arc;

use mcplex_dispatch::Gateway;
use rmcp::model::{
    CallToolRequestParams, InitializeResult, ListToolsResult, PaginatedRequestParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};

use crate::Caller;
use crate::SurfaceOptions;
use crate::caller::Reach;
use crate::calls::{CallAnswer, OnUnknown, call, finish};
use crate::describe::{self, DESCRIBE_TOOL};
use crate::listen::{Clients, ListedTools};
use crate::search_tools::{self, CALL_TOOL, TOOL_SEARCH};
use crate::typed::ToolsCache;

/// The legend for compact signatures, exactly as `docs/direct-surface.md` gives it. Emitted in
/// both modes (phrased conditionally, so it stays true in `full` mode): one shape to cache.
pub const SIGNATURE_LEGEND: &str = "Some tool descriptions end with a compact signature (param*:type, ...): * marks a required parameter and ~ marks collapsed/lossy details. When a signature is present the listed inputSchema is a placeholder, not the real schema \u{2014} flat signatures are directly callable, and for ~-marked tools call 'describe_tool' with the listed tool name to get the full schema.";

/// Used when the config sets no `instructions`: what this surface offers.
const DEFAULT_INSTRUCTIONS: &str = "mcplex direct surface: every tool of every connected MCP server, named server__tool (the description starts with [server]); call them directly. describe_tool returns a tool's full definition (input schema, output schema, annotations), or with check: true whether each tool is ready to call.";
const DEFERRAL_INSTRUCTIONS: &str = "More tools are reachable than are listed: find them with tool_search and call them with call_tool, using the name the search returned.";

/// One server instance shared by every direct route (`/mcp/all`, `/mcp` in direct mode, stdio):
/// always the same listing, the same mode.
#[derive(Clone)]
pub struct DirectSurface {
    gateway: Arc<Gateway>,
    /// Sessions, subscriptions, and the listing they are told about.
    clients: Clients,
    options: Arc<SurfaceOptions>,
    /// Resolved once, when the server instance is built.
    instructions: Arc<str>,
    reach: Reach,
}

impl DirectSurface {
    /// Builds the surface for clients reached as `reach` says, and starts forwarding listing
    /// changes to connected sessions.
    pub fn new(gateway: Arc<Gateway>, options: SurfaceOptions, reach: Reach) -> DirectSurface {
        let tools = ListedTools {
            cache: ToolsCache::default(),
            builtins: Arc::new(crate::direct_builtins(options.search_tools_listed)),
        };
        let mut instructions = options
            .instructions
            .clone()
            .unwrap_or_else(|| DEFAULT_INSTRUCTIONS.to_owned());
        if options.search_tools_listed && options.instructions.is_none() {
            instructions = format!("{instructions} {DEFERRAL_INSTRUCTIONS}");
        }
        let instructions = format!("{instructions}\n\n{SIGNATURE_LEGEND}").into();
        DirectSurface {
            clients: Clients::start(&gateway, Some(tools)),
            gateway,
            options: Arc::new(options),
            instructions,
            reach,
        }
    }

    pub fn gateway(&self) -> &Arc<Gateway> {
        &self.gateway
    }
}

crate::offers::routed_surface!(DirectSurface);

impl ServerHandler for DirectSurface {
    fn get_info(&self) -> InitializeResult {
        crate::server_info(crate::full_capabilities(true), &self.instructions)
    }

    crate::offers::serve_offers!();

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.gateway.startup_settled().await;
        let snapshot = self.gateway.snapshot();
        let scope = self.reach.scope(&context.extensions);
        let tools = match &self.clients.tools {
            Some(tools) => tools.get(&snapshot, &scope),
            None => Arc::default(),
        };
        Ok(ListToolsResult::with_all_items(tools.as_ref().clone()))
    }
}

impl DirectSurface {
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
            DESCRIBE_TOOL => finish(
                describe::result(&self.gateway.snapshot(), arguments, &scope),
                &context,
            ),
            TOOL_SEARCH if self.options.search_tools_listed => {
                self.gateway.startup_settled().await;
                let body = search_tools::tool_search(
                    &self.gateway,
                    arguments,
                    self.options.max_matches,
                    &scope,
                )
                .await;
                finish(body, &context)
            }
            CALL_TOOL if self.options.search_tools_listed => {
                call_by_name(&self.gateway, arguments, &context, caller).await
            }
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

/// `call_tool {name, arguments}`: becomes the call it names, on the same dispatch path.
pub(crate) async fn call_by_name(
    gateway: &Gateway,
    arguments: Option<&rmcp::model::JsonObject>,
    context: &RequestContext<RoleServer>,
    caller: Caller,
) -> Result<CallAnswer, ErrorData> {
    let (name, inner) = match search_tools::call_tool_target(arguments) {
        Ok(target) => target,
        Err(refusal) => return finish(refusal, context),
    };
    call(
        gateway,
        name,
        inner,
        context,
        caller,
        OnUnknown::SuggestClosest,
    )
    .await
}
