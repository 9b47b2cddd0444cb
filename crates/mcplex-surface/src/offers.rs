//! Prompts, resources, completion and logging on a surface: listings (paginated), and requests
//! resolved through the snapshot within the caller's scope, then forwarded to the one upstream
//! that serves the name or URI. Names and URIs are translated both ways (see
//! `mcplex_catalog::Offers` for the scheme); results otherwise pass through.
#![allow(deprecated)] // logging: deprecated by 2026-07-28 (SEP-2577), used by session-era clients

use mcplex_catalog::{Route, Scope, Snapshot};
use mcplex_dispatch::{DispatchError, Gateway, RequestContext as DispatchContext, UpstreamRequest};
use rmcp::ErrorData;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, InputRequiredResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, SetLevelRequestParams,
};
use rmcp::service::{RequestContext, RoleServer};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::Caller;
use crate::calls::mark_complete;
use crate::errors::to_wire;

/// Items per page of a prompts, resources or templates listing. A cursor is the offset of the
/// next page; listings are deterministic within a snapshot.
pub(crate) const PAGE_SIZE: usize = 500;

/// One page of `items` from `request`'s cursor, and the next cursor.
fn page<'a>(
    items: impl Iterator<Item = &'a Value>,
    request: Option<&PaginatedRequestParams>,
) -> Result<(Vec<Value>, Option<String>), ErrorData> {
    let start = match request.and_then(|r| r.cursor.as_deref()) {
        None => 0,
        Some(cursor) => cursor
            .parse::<usize>()
            .map_err(|_| ErrorData::invalid_params(format!("invalid cursor {cursor:?}"), None))?,
    };
    let mut items = items.skip(start);
    let page: Vec<Value> = items.by_ref().take(PAGE_SIZE).cloned().collect();
    let next = items
        .next()
        .is_some()
        .then(|| (start + PAGE_SIZE).to_string());
    Ok((page, next))
}

/// `raw` as one of rmcp's result types, marked complete for a 2026-07-28 caller; a shape the
/// schema does not allow is the upstream's fault.
fn typed<T: DeserializeOwned>(
    mut raw: Value,
    what: &str,
    context: &RequestContext<RoleServer>,
) -> Result<T, ErrorData> {
    mark_complete(&mut raw, context);
    serde_json::from_value(raw).map_err(|e| {
        ErrorData::internal_error(
            format!("the upstream's {what} result is malformed: {e}"),
            None,
        )
    })
}

/// A 2026-07-28 upstream may answer "input required"; that passes through as it is.
fn input_required(raw: &Value) -> bool {
    raw.get("resultType").and_then(Value::as_str) == Some("input_required")
}

fn listing<T: DeserializeOwned>(
    key: &str,
    (items, next): (Vec<Value>, Option<String>),
    context: &RequestContext<RoleServer>,
) -> Result<T, ErrorData> {
    let mut result = json!({ key: items });
    if let Some(next) = next {
        result["nextCursor"] = Value::from(next);
    }
    typed(result, key, context)
}

pub(crate) fn list_prompts(
    snapshot: &Snapshot,
    scope: &Scope,
    request: Option<&PaginatedRequestParams>,
    context: &RequestContext<RoleServer>,
) -> Result<ListPromptsResult, ErrorData> {
    listing(
        "prompts",
        page(snapshot.offers().prompts(scope), request)?,
        context,
    )
}

pub(crate) fn list_resources(
    snapshot: &Snapshot,
    scope: &Scope,
    request: Option<&PaginatedRequestParams>,
    context: &RequestContext<RoleServer>,
) -> Result<ListResourcesResult, ErrorData> {
    listing(
        "resources",
        page(snapshot.offers().resources(scope), request)?,
        context,
    )
}

pub(crate) fn list_resource_templates(
    snapshot: &Snapshot,
    scope: &Scope,
    request: Option<&PaginatedRequestParams>,
    context: &RequestContext<RoleServer>,
) -> Result<ListResourceTemplatesResult, ErrorData> {
    listing(
        "resourceTemplates",
        page(snapshot.offers().templates(scope), request)?,
        context,
    )
}

fn upstream_error(error: DispatchError) -> ErrorData {
    match to_wire(error) {
        Err(error) => error,
        Ok(_) => ErrorData::internal_error("the upstream failed", None),
    }
}

/// `prompts/get`: the prompt served under `request.name`, fetched from its upstream by its own
/// name.
pub(crate) async fn get_prompt(
    gateway: &Gateway,
    caller: &Caller,
    request: GetPromptRequestParams,
    context: &RequestContext<RoleServer>,
) -> Result<GetPromptResponse, ErrorData> {
    let snapshot = gateway.snapshot();
    let Some(prompt) = snapshot.offers().prompt(&request.name, &caller.scope) else {
        return Err(ErrorData::invalid_params(
            format!("unknown prompt: {}", request.name),
            Some(json!({"prompt": request.name})),
        ));
    };
    let route = prompt.route();
    let upstream = UpstreamRequest::get_prompt(&prompt.original, request.arguments);
    drop(snapshot);
    let raw = gateway
        .request(&route, upstream, request_context(caller, context))
        .await
        .map_err(upstream_error)?;
    if input_required(&raw) {
        return typed::<InputRequiredResult>(raw, "prompts/get", context)
            .map(GetPromptResponse::InputRequired);
    }
    typed::<GetPromptResult>(raw, "prompts/get", context).map(GetPromptResponse::Complete)
}

/// What the dispatch boundary needs to know about the request besides itself.
fn request_context(caller: &Caller, context: &RequestContext<RoleServer>) -> DispatchContext {
    DispatchContext {
        token: caller.token.clone(),
        credential: caller.credential.clone(),
        cancel: context.ct.clone(),
        relay: Some(crate::relay::counted_for(context)),
    }
}

/// `resources/read`: the URI resolved to its upstream, read there by its own URI; the URIs in
/// the contents are given back in the client's terms.
pub(crate) async fn read_resource(
    gateway: &Gateway,
    caller: &Caller,
    request: ReadResourceRequestParams,
    context: &RequestContext<RoleServer>,
) -> Result<ReadResourceResponse, ErrorData> {
    let snapshot = gateway.snapshot();
    let Some(target) = snapshot.offers().resolve_uri(&request.uri, &caller.scope) else {
        return Err(ErrorData::resource_not_found(
            format!("unknown resource: {}", request.uri),
            Some(json!({"uri": request.uri})),
        ));
    };
    drop(snapshot);
    let upstream = UpstreamRequest::read_resource(&target.original);
    let mut raw = gateway
        .request(&target.route, upstream, request_context(caller, context))
        .await
        .map_err(upstream_error)?;
    if input_required(&raw) {
        return typed::<InputRequiredResult>(raw, "resources/read", context)
            .map(ReadResourceResponse::InputRequired);
    }
    let snapshot = gateway.snapshot();
    if let Some(contents) = raw.get_mut("contents").and_then(Value::as_array_mut) {
        for content in contents {
            if let Some(uri) = content.get("uri").and_then(Value::as_str) {
                let served = if uri == target.original {
                    request.uri.clone()
                } else {
                    snapshot.offers().served_uri(target.route.server(), uri)
                };
                content["uri"] = Value::from(served);
            }
        }
    }
    typed::<ReadResourceResult>(raw, "resources/read", context).map(ReadResourceResponse::Complete)
}

/// `completion/complete` for a prompt argument or a resource template variable: the reference is
/// translated to the upstream's name or template and forwarded to it.
pub(crate) async fn complete(
    gateway: &Gateway,
    caller: &Caller,
    request: CompleteRequestParams,
    context: &RequestContext<RoleServer>,
) -> Result<CompleteResult, ErrorData> {
    let Ok(Value::Object(mut params)) = serde_json::to_value(&request) else {
        return Err(ErrorData::invalid_params(
            "invalid completion request",
            None,
        ));
    };
    let scope = &caller.scope;
    let snapshot = gateway.snapshot();
    let reference = params.get("ref").cloned().unwrap_or(Value::Null);
    let kind = reference.get("type").and_then(Value::as_str);
    let text = |key: &str| {
        reference
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    // The upstream that serves the reference, and the reference in its terms.
    let target = match kind {
        Some("ref/prompt") => snapshot
            .offers()
            .prompt(text("name"), scope)
            .map(|p| (p.route(), "name", p.original.clone())),
        Some("ref/resource") => match snapshot.offers().template(text("uri"), scope) {
            Some(template) => Some((template.route(), "uri", template.original.clone())),
            None => snapshot
                .offers()
                .resolve_uri(text("uri"), scope)
                .map(|target| (target.route, "uri", target.original)),
        },
        _ => None,
    };
    let Some((route, key, original)) = target else {
        return Err(ErrorData::invalid_params(
            "the completion reference names no prompt or resource template this client can reach",
            Some(json!({"ref": reference})),
        ));
    };
    let offers_completion = snapshot
        .offers()
        .features(route.server())
        .is_some_and(|f| f.completions);
    drop(snapshot);
    if !offers_completion {
        // The server offers no completions: no suggestions, which is a valid answer.
        return typed(
            json!({"completion": {"values": [], "hasMore": false}}),
            "completion/complete",
            context,
        );
    }
    if let Some(Value::Object(reference)) = params.get_mut("ref") {
        reference.insert(key.to_owned(), Value::from(original.as_str()));
    }
    let upstream = UpstreamRequest::complete(params, &original);
    let raw = gateway
        .request(&route, upstream, request_context(caller, context))
        .await
        .map_err(upstream_error)?;
    typed(raw, "completion/complete", context)
}

/// `logging/setLevel`: forwarded to every server in the caller's scope that declares logging.
/// A server that fails to take it is logged, not reported: the level is advisory.
pub(crate) async fn set_level(
    gateway: &Gateway,
    caller: &Caller,
    request: SetLevelRequestParams,
    context: &RequestContext<RoleServer>,
) -> Result<(), ErrorData> {
    let Ok(Value::Object(params)) = serde_json::to_value(&request) else {
        return Err(ErrorData::invalid_params("invalid level", None));
    };
    let routes: Vec<Route> = gateway
        .snapshot()
        .offers()
        .servers(&caller.scope)
        .filter(|(_, features)| features.logging)
        .map(|(route, _)| route)
        .collect();
    let sends = routes.iter().map(|route| {
        let upstream = UpstreamRequest::set_level(params.clone());
        let cx = request_context(caller, context);
        async move {
            if let Err(e) = gateway.request(route, upstream, cx).await {
                tracing::debug!(server = %route, "logging/setLevel not taken: {e}");
            }
        }
    });
    futures::future::join_all(sends).await;
    Ok(())
}

/// The `ServerHandler` methods every surface shares: `tools/call` (typed), prompts, resources, subscriptions,
/// completion, logging, registering sessions for `list_changed`, and `subscriptions/listen`.
/// Expands inside `impl ServerHandler for …` of a type with `gateway: Arc<Gateway>`,
/// `reach: Reach` and `clients: Clients`.
macro_rules! serve_offers {
    () => {
        /// `tools/call`: the surface's `answer_call`, in the span of its request, handed back
        /// as the route or stdio takes it ([`crate::calls::CallAnswer::respond`]).
        async fn call_tool(
            &self,
            request: rmcp::model::CallToolRequestParams,
            context: rmcp::service::RequestContext<rmcp::service::RoleServer>,
        ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
            let span = $crate::traced::span_of(&context, "tools/call", Some(&request.name));
            let untouched = context
                .extensions
                .get::<$crate::dispatch::Untouched>()
                .cloned();
            // Boxed: rmcp's handler future holds this one in place, and is moved whole.
            let answer = Box::pin(self.answer_call(request, context));
            tracing::Instrument::instrument(answer, span)
                .await?
                .respond(untouched.as_ref())
        }

        async fn list_prompts(
            &self,
            request: Option<rmcp::model::PaginatedRequestParams>,
            context: rmcp::service::RequestContext<rmcp::service::RoleServer>,
        ) -> Result<rmcp::model::ListPromptsResult, rmcp::ErrorData> {
            self.gateway.startup_settled().await;
            let scope = self.reach.scope(&context.extensions);
            $crate::offers::list_prompts(
                &self.gateway.snapshot(),
                &scope,
                request.as_ref(),
                &context,
            )
        }

        async fn get_prompt(
            &self,
            request: rmcp::model::GetPromptRequestParams,
            context: rmcp::service::RequestContext<rmcp::service::RoleServer>,
        ) -> Result<rmcp::model::GetPromptResponse, rmcp::ErrorData> {
            let caller = self.reach.caller(&context.extensions);
            let span = $crate::traced::span_of(&context, "prompts/get", None);
            tracing::Instrument::instrument(
                $crate::offers::get_prompt(&self.gateway, &caller, request, &context),
                span,
            )
            .await
        }

        async fn list_resources(
            &self,
            request: Option<rmcp::model::PaginatedRequestParams>,
            context: rmcp::service::RequestContext<rmcp::service::RoleServer>,
        ) -> Result<rmcp::model::ListResourcesResult, rmcp::ErrorData> {
            self.gateway.startup_settled().await;
            let scope = self.reach.scope(&context.extensions);
            $crate::offers::list_resources(
                &self.gateway.snapshot(),
                &scope,
                request.as_ref(),
                &context,
            )
        }

        async fn list_resource_templates(
            &self,
            request: Option<rmcp::model::PaginatedRequestParams>,
            context: rmcp::service::RequestContext<rmcp::service::RoleServer>,
        ) -> Result<rmcp::model::ListResourceTemplatesResult, rmcp::ErrorData> {
            self.gateway.startup_settled().await;
            let scope = self.reach.scope(&context.extensions);
            $crate::offers::list_resource_templates(
                &self.gateway.snapshot(),
                &scope,
                request.as_ref(),
                &context,
            )
        }

        async fn read_resource(
            &self,
            request: rmcp::model::ReadResourceRequestParams,
            context: rmcp::service::RequestContext<rmcp::service::RoleServer>,
        ) -> Result<rmcp::model::ReadResourceResponse, rmcp::ErrorData> {
            let caller = self.reach.caller(&context.extensions);
            let span = $crate::traced::span_of(&context, "resources/read", None);
            tracing::Instrument::instrument(
                $crate::offers::read_resource(&self.gateway, &caller, request, &context),
                span,
            )
            .await
        }

        async fn subscribe(
            &self,
            request: rmcp::model::SubscribeRequestParams,
            context: rmcp::service::RequestContext<rmcp::service::RoleServer>,
        ) -> Result<(), rmcp::ErrorData> {
            let caller = self.reach.caller(&context.extensions);
            let subscriber = $crate::subscriptions::Subscriber::Session(context.peer.clone());
            let span = $crate::traced::span_of(&context, "resources/subscribe", None);
            tracing::Instrument::instrument(
                self.clients.subscriptions.subscribe(
                    &self.gateway,
                    &caller,
                    &request.uri,
                    subscriber,
                    context.ct.clone(),
                ),
                span,
            )
            .await
        }

        async fn unsubscribe(
            &self,
            request: rmcp::model::UnsubscribeRequestParams,
            context: rmcp::service::RequestContext<rmcp::service::RoleServer>,
        ) -> Result<(), rmcp::ErrorData> {
            let span = $crate::traced::span_of(&context, "resources/unsubscribe", None);
            tracing::Instrument::instrument(
                self.clients.subscriptions.unsubscribe_session(
                    &self.gateway,
                    &context.peer,
                    &request.uri,
                ),
                span,
            )
            .await;
            Ok(())
        }

        async fn complete(
            &self,
            request: rmcp::model::CompleteRequestParams,
            context: rmcp::service::RequestContext<rmcp::service::RoleServer>,
        ) -> Result<rmcp::model::CompleteResult, rmcp::ErrorData> {
            let caller = self.reach.caller(&context.extensions);
            let span = $crate::traced::span_of(&context, "completion/complete", None);
            tracing::Instrument::instrument(
                $crate::offers::complete(&self.gateway, &caller, request, &context),
                span,
            )
            .await
        }

        async fn set_level(
            &self,
            request: rmcp::model::SetLevelRequestParams,
            context: rmcp::service::RequestContext<rmcp::service::RoleServer>,
        ) -> Result<(), rmcp::ErrorData> {
            let caller = self.reach.caller(&context.extensions);
            let span = $crate::traced::span_of(&context, "logging/setLevel", None);
            tracing::Instrument::instrument(
                $crate::offers::set_level(&self.gateway, &caller, request, &context),
                span,
            )
            .await
        }

        async fn on_initialized(
            &self,
            context: rmcp::service::NotificationContext<rmcp::service::RoleServer>,
        ) {
            $crate::route::Surface::session_ready(self, context.peer, &context.extensions);
        }

        fn accepted_subscription_filter(
            &self,
            requested: &rmcp::model::SubscriptionFilter,
        ) -> Option<rmcp::model::SubscriptionFilter> {
            Some($crate::listen::accepted_filter(
                requested,
                self.clients.tools.is_some(),
            ))
        }

        async fn listen(
            &self,
            subscription: rmcp::service::SubscriptionContext,
        ) -> Result<(), rmcp::ErrorData> {
            let caller = self
                .reach
                .caller(&subscription.request_context().extensions);
            $crate::listen::listen(
                &self.gateway,
                &self.clients.subscriptions,
                caller,
                self.clients.tools.as_ref(),
                subscription,
            )
            .await
        }
    };
}
pub(crate) use serve_offers;

/// The MCP routes' [`crate::route::Surface`] for a surface with `reach: Reach` and
/// `clients: Clients`: a session whose client is ready is told of listing changes.
macro_rules! routed_surface {
    ($surface:ty) => {
        impl $crate::route::Surface for $surface {
            fn session_ready(
                &self,
                peer: rmcp::Peer<rmcp::service::RoleServer>,
                extensions: &rmcp::model::Extensions,
            ) {
                let scope = self.reach.scope(extensions);
                self.clients.peers.add(peer, scope);
            }
        }
    };
}
pub(crate) use routed_surface;
