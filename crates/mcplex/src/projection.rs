//! The routes an agent's application uses besides MCP, on the management API's prefix but
//! authenticated like MCP (agent token or API key; the guard attaches the [`Caller`]):
//!
//! - `GET  /api/v1/projection/{anthropic|openai}[?profile=P&search=provider|client]`: the tools
//!   the caller may see as that API's `tools` array (`mcplex-projection`).
//! - `POST /api/v1/projection/{anthropic|openai}/search`: mcplex's search over the deferred
//!   tools the caller may see, as the API's client-side search answer.
//! - `POST /api/v1/call`: a call by the name the model emitted, through `Gateway::call` with the
//!   caller's scope (the same resolution, checks, audit and metrics as `tools/call` on `/mcp`).

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use mcplex_api::{CallRequest, ProjectionAnswer, ProjectionQuery, ProjectionSearch, paths};
use mcplex_catalog::{Scope, Snapshot};
use mcplex_config::Config;
use mcplex_dispatch::{CallContext, DispatchError, RankBy, ToolCall, ToolQuery};
use mcplex_projection::{Provider, SearchBy};
use mcplex_surface::Caller;
use mcplex_upstream::UpstreamError;
use tokio_util::sync::CancellationToken;

use crate::api::{ApiState, error};

/// Matches a search returns when the request names no limit, and the most it may ask for.
const DEFAULT_LIMIT: usize = 5;
const MAX_LIMIT: usize = 50;

pub fn router(state: ApiState) -> Router {
    Router::new()
        .route(paths::PROJECTION, get(projection))
        .route(paths::PROJECTION_SEARCH, post(search))
        .route(paths::CALL, post(call))
        .with_state(state)
}

/// The tools `scope` (narrowed by `profile`) may see, as `provider`'s definitions.
pub fn project(
    snapshot: &Snapshot,
    config: &Config,
    scope: Scope,
    provider: Provider,
    query: &ProjectionQuery,
) -> Result<Vec<serde_json::Value>, String> {
    let scope = narrowed(config, scope, query.profile.as_deref())?;
    let search = match query.search.as_deref() {
        None => SearchBy::Provider,
        Some(text) => SearchBy::parse(text)
            .ok_or_else(|| format!("search is {text:?}; expected provider or client"))?,
    };
    Ok(mcplex_projection::tools(snapshot, &scope, provider, search))
}

fn narrowed(config: &Config, scope: Scope, profile: Option<&str>) -> Result<Scope, String> {
    let Some(name) = profile else {
        return Ok(scope);
    };
    let profile = config
        .profiles
        .iter()
        .find(|p| p.name == name)
        .ok_or_else(|| format!("no profile named {name:?}"))?;
    Ok(scope.within(&profile.servers))
}

/// The caller the guard attached; a request without one sees nothing.
fn scope_of(caller: Option<Extension<Caller>>) -> (Scope, Option<Arc<str>>) {
    match caller {
        Some(Extension(caller)) => (caller.scope, caller.token),
        None => (Scope::nothing(), None),
    }
}

fn unknown_provider(segment: &str) -> Response {
    error(
        StatusCode::NOT_FOUND,
        format!("unknown provider {segment:?}; expected anthropic or openai"),
    )
}

async fn projection(
    State(state): State<ApiState>,
    caller: Option<Extension<Caller>>,
    Path(segment): Path<String>,
    Query(query): Query<ProjectionQuery>,
) -> Response {
    let Some(provider) = Provider::parse(&segment) else {
        return unknown_provider(&segment);
    };
    let (scope, _) = scope_of(caller);
    let config = state.config.borrow().clone();
    match project(&state.gateway.snapshot(), &config, scope, provider, &query) {
        Ok(tools) => Json(ProjectionAnswer { tools }).into_response(),
        Err(why) => error(StatusCode::NOT_FOUND, why),
    }
}

async fn search(
    State(state): State<ApiState>,
    caller: Option<Extension<Caller>>,
    Path(segment): Path<String>,
    Query(query): Query<ProjectionQuery>,
    Json(request): Json<ProjectionSearch>,
) -> Response {
    let Some(provider) = Provider::parse(&segment) else {
        return unknown_provider(&segment);
    };
    let (scope, _) = scope_of(caller);
    let config = state.config.borrow().clone();
    let scope = match narrowed(&config, scope, query.profile.as_deref()) {
        Ok(scope) => scope,
        Err(why) => return error(StatusCode::NOT_FOUND, why),
    };
    let limit = request.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
    let snapshot = state.gateway.snapshot();
    let query = ToolQuery {
        text: &request.query,
        server: None,
        limit,
        rank_by: RankBy::Meaning,
    };
    // Only deferred tools: the loaded ones are in the request already.
    let matches = state
        .gateway
        .search(&snapshot, query, |tool| {
            tool.deferred && snapshot.visible(tool, &scope)
        })
        .await
        .matches;
    let tools: Vec<_> = matches.tools.iter().map(|found| found.tool).collect();
    let answer = mcplex_projection::search_answer(provider, &tools, request.call_id.as_deref());
    Json(answer).into_response()
}

async fn call(
    State(state): State<ApiState>,
    caller: Option<Extension<Caller>>,
    Json(request): Json<CallRequest>,
) -> Response {
    let credential = caller.as_ref().and_then(|c| c.credential.clone());
    let (scope, token) = scope_of(caller);
    let call = ToolCall {
        name: request.name,
        arguments: request.arguments,
    };
    let cx = CallContext {
        scope,
        token,
        credential,
        cancel: CancellationToken::new(),
        progress: None,
        relay: Arc::new(mcplex_upstream::NoClient::default()),
    };
    match state.gateway.call(call, cx).await {
        Ok(result) => Json(result).into_response(),
        Err(e) => call_error(e),
    }
}

/// A tool result the gateway wrote itself (the tool was not called), marked so in
/// `X-Mcplex-Answered-By: gateway`: the same body as on `/mcp`, told apart from the tool's own
/// error by a reader that looks.
fn by_the_gateway(result: impl IntoResponse) -> Response {
    let mut response = result.into_response();
    response.headers_mut().insert(
        "x-mcplex-answered-by",
        axum::http::HeaderValue::from_static("gateway"),
    );
    response
}

/// A refused or failed call. Argument errors are the tool result `/mcp` gives (the model reads
/// it and fixes the call); the rest are HTTP errors whose text is the same as on `/mcp`.
fn call_error(e: DispatchError) -> Response {
    let message = e.to_string();
    match e {
        DispatchError::InvalidArguments {
            name,
            problems,
            input_schema,
        } => by_the_gateway(Json(mcplex_surface::invalid_arguments_result(
            &name,
            &problems.to_string(),
            input_schema,
        ))),
        DispatchError::UnknownTool { .. } => error(StatusCode::NOT_FOUND, message),
        DispatchError::Unavailable { .. } => error(StatusCode::CONFLICT, message),
        DispatchError::Limited(limited) => {
            let mut response = error(StatusCode::TOO_MANY_REQUESTS, message);
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from(limited.retry_after.as_secs().max(1)),
            );
            response
        }
        // The tool result `/mcp` gives: the model shows its user the link.
        DispatchError::Upstream(UpstreamError::NotConnected {
            server,
            caller,
            link,
        }) => by_the_gateway(Json(mcplex_surface::not_connected_result(
            &server,
            &caller,
            link.as_deref(),
            &message,
        ))),
        DispatchError::Upstream(UpstreamError::Timeout { .. }) => {
            error(StatusCode::GATEWAY_TIMEOUT, message)
        }
        DispatchError::Upstream(_) => error(StatusCode::BAD_GATEWAY, message),
    }
}
