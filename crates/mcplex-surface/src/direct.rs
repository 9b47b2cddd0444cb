//! The direct surface: `describe_tool`, the two search built-ins when the config defers anything,
//! then every visible, non-deferred tool as `server__tool` in `full` or `deferred` form. Calls
//! go through `Gateway::call` (resolve → policy → validate → upstream).
#![allow(deprecated)] // logging: deprecated by 2026-07-28 (SEP-2577), used by session-era clients

use std::sync::Arc;

use mcplex_dispatch::Gateway;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult,
    GetPromptRequestParams, GetPromptResponse, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, SetLevelRequestParams, SubscribeRequestParams,
    SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData, ServerHandler};
use serde_json::Value;

use crate::Caller;
use crate::SurfaceOptions;
use crate::caller::Reach;
use crate::calls::{call, finish};
use crate::describe::{self, DESCRIBE_TOOL};
use crate::listen::LegacyPeers;
use crate::offers;
use crate::search_tools::{self, CALL_TOOL, TOOL_SEARCH};
use crate::subscriptions::{Subscriber, Subscriptions};
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
    peers: LegacyPeers,
    subscriptions: Subscriptions,
    tools: ToolsCache,
    /// Built-ins listed before the upstream tools, decided from the config alone.
    builtins: Arc<Vec<Value>>,
    options: Arc<SurfaceOptions>,
    /// Resolved once, when the server instance is built.
    instructions: Arc<str>,
    reach: Reach,
}

impl DirectSurface {
    /// Builds the surface for clients reached as `reach` says, and starts forwarding listing
    /// changes to connected sessions.
    pub fn new(gateway: Arc<Gateway>, options: SurfaceOptions, reach: Reach) -> DirectSurface {
        let tools = ToolsCache::default();
        let builtins = Arc::new(crate::direct_builtins(options.defers_anything));
        let peers = LegacyPeers::start(gateway.clone(), tools.clone(), builtins.clone());
        let mut instructions = options
            .instructions
            .clone()
            .unwrap_or_else(|| DEFAULT_INSTRUCTIONS.to_owned());
        if options.defers_anything && options.instructions.is_none() {
            instructions = format!("{instructions} {DEFERRAL_INSTRUCTIONS}");
        }
        let instructions = format!("{instructions}\n\n{SIGNATURE_LEGEND}").into();
        DirectSurface {
            subscriptions: Subscriptions::start(&gateway),
            gateway,
            peers,
            tools,
            builtins,
            options: Arc::new(options),
            instructions,
            reach,
        }
    }

    pub fn gateway(&self) -> &Arc<Gateway> {
        &self.gateway
    }
}

impl ServerHandler for DirectSurface {
    fn get_info(&self) -> InitializeResult {
        crate::server_info(crate::full_capabilities(), &self.instructions)
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.gateway.startup_settled().await;
        let scope = self.reach.scope(&context.extensions);
        offers::list_prompts(&self.gateway.snapshot(), &scope, request.as_ref(), &context)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let scope = self.reach.scope(&context.extensions);
        offers::get_prompt(&self.gateway, &scope, request, &context).await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.gateway.startup_settled().await;
        let scope = self.reach.scope(&context.extensions);
        offers::list_resources(&self.gateway.snapshot(), &scope, request.as_ref(), &context)
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.gateway.startup_settled().await;
        let scope = self.reach.scope(&context.extensions);
        offers::list_resource_templates(
            &self.gateway.snapshot(),
            &scope,
            request.as_ref(),
            &context,
        )
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let scope = self.reach.scope(&context.extensions);
        offers::read_resource(&self.gateway, &scope, request, &context).await
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let scope = self.reach.scope(&context.extensions);
        let subscriber = Subscriber::Session(context.peer.clone());
        self.subscriptions
            .subscribe(
                &self.gateway,
                &scope,
                &request.uri,
                subscriber,
                context.ct.clone(),
            )
            .await
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions
            .unsubscribe_session(&self.gateway, &context.peer, &request.uri)
            .await;
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let scope = self.reach.scope(&context.extensions);
        offers::complete(&self.gateway, &scope, request, &context).await
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let scope = self.reach.scope(&context.extensions);
        offers::set_level(&self.gateway, &scope, request, &context).await
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.gateway.startup_settled().await;
        let snapshot = self.gateway.snapshot();
        let scope = self.reach.scope(&context.extensions);
        let tools = self.tools.get(&snapshot, &self.builtins, &scope);
        Ok(ListToolsResult::with_all_items(tools.as_ref().clone()))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let scope = self.reach.scope(&context.extensions);
        self.peers.add(context.peer, scope);
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::new();
        accepted.tools_list_changed = requested.tools_list_changed.filter(|wanted| *wanted);
        accepted.prompts_list_changed = requested.prompts_list_changed.filter(|wanted| *wanted);
        accepted.resources_list_changed = requested.resources_list_changed.filter(|wanted| *wanted);
        // Which URIs resolve is decided per caller in `listen`; one that does not is dropped
        // there with a log line.
        accepted.resource_subscriptions = requested.resource_subscriptions.clone();
        Some(accepted)
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let mut changes = self.gateway.listing_changes();
        changes.mark_unchanged();
        let mut offer_changes = self.gateway.offers_changes();
        offer_changes.mark_unchanged();
        let accepted = subscription.accepted().clone();
        let wants_tools = accepted.tools_list_changed == Some(true);
        let wants_prompts = accepted.prompts_list_changed == Some(true);
        let wants_resources = accepted.resources_list_changed == Some(true);
        let context = subscription.request_context();
        let scope = self.reach.scope(&context.extensions);
        let listen_id = self.subscriptions.listen_id();
        for uri in accepted.resource_subscriptions.iter().flatten() {
            let subscriber = Subscriber::Listen(subscription.sink().clone(), listen_id);
            if let Err(e) = self
                .subscriptions
                .subscribe(&self.gateway, &scope, uri, subscriber, context.ct.clone())
                .await
            {
                tracing::debug!(
                    "subscriptions/listen: not subscribed to {uri}: {}",
                    e.message
                );
            }
        }
        // Only a change to what this caller sees is worth a notification.
        let mut seen = self
            .tools
            .get(&self.gateway.snapshot(), &self.builtins, &scope);
        let mut seen_offers = self.gateway.snapshot();
        let ended = loop {
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        break Ok(());
                    }
                    let now = self.tools.get(&self.gateway.snapshot(), &self.builtins, &scope);
                    if now == seen {
                        continue;
                    }
                    seen = now;
                    if wants_tools && subscription.sink().notify_tool_list_changed().await.is_err() {
                        break Ok(());
                    }
                }
                changed = offer_changes.changed() => {
                    if changed.is_err() {
                        break Ok(());
                    }
                    let now = self.gateway.snapshot();
                    let (prompts, resources) = now.offers().changed_for(seen_offers.offers(), &scope);
                    seen_offers = now;
                    let sink = subscription.sink();
                    if wants_prompts && prompts && sink.notify_prompt_list_changed().await.is_err() {
                        break Ok(());
                    }
                    if wants_resources && resources && sink.notify_resource_list_changed().await.is_err() {
                        break Ok(());
                    }
                }
                () = subscription.cancelled() => break Ok(()),
            }
        };
        self.subscriptions
            .end_listen(&self.gateway, listen_id)
            .await;
        ended
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.as_ref();
        let caller = self.reach.caller(&context.extensions);
        let scope = caller.scope.clone();
        match request.name.as_ref() {
            DESCRIBE_TOOL => finish(
                describe::result(&self.gateway.snapshot(), arguments, &scope),
                &context,
            ),
            TOOL_SEARCH if self.options.defers_anything => {
                self.gateway.startup_settled().await;
                let body = search_tools::tool_search(
                    &self.gateway.snapshot(),
                    arguments,
                    self.options.max_matches,
                    &scope,
                );
                finish(body, &context)
            }
            CALL_TOOL if self.options.defers_anything => {
                call_by_name(&self.gateway, arguments, &context, caller).await
            }
            _ => {
                call(
                    &self.gateway,
                    request.name.into_owned(),
                    request.arguments,
                    &context,
                    caller,
                    |_| None,
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
) -> Result<CallToolResponse, ErrorData> {
    let (name, inner) = match search_tools::call_tool_target(arguments) {
        Ok(target) => target,
        Err(refusal) => return finish(refusal, context),
    };
    let suggestions_scope = caller.scope.clone();
    call(gateway, name, inner, context, caller, move |unknown| {
        Some(search_tools::unknown_name(
            &gateway.snapshot(),
            unknown,
            &suggestions_scope,
        ))
    })
    .await
}
