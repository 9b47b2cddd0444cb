//! The management API's routes for limits per caller: `GET /api/v1/limits` (the config's
//! defaults and every limited caller's recent use, on every replica) and
//! `PUT /api/v1/tokens/{name}/limits` (a token's own limits, replaced whole; in force on every
//! gateway of the store within the control plane's second). Also how a caller's use is shown.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use axum::{Json, Router};
use mcplex_api::{CallerUsage, Done, LimitsAnswer, SetLimits, paths};
use mcplex_config::CallLimits;

use crate::api::{ApiState, error, off_runtime, reload_tokens, store_error};

pub fn router(state: ApiState) -> Router {
    Router::new()
        .route(paths::LIMITS, get(limits))
        .route(paths::TOKEN_LIMITS, put(set_token_limits))
        .with_state(state)
}

/// A caller's use as the API shows it.
pub fn caller_usage(usage: &mcplex_dispatch::CallerUsage) -> CallerUsage {
    CallerUsage {
        caller: usage.caller.clone(),
        limits: usage.limits.to_json(),
        calls_last_minute: usage.calls_last_minute,
        in_flight: usage.in_flight,
        refused_last_minute: usage.refused_last_minute,
    }
}

async fn limits(State(state): State<ApiState>) -> Json<LimitsAnswer> {
    let defaults = state.config.borrow().limits.to_json();
    let callers = state
        .gateway
        .limits()
        .usage()
        .iter()
        .map(caller_usage)
        .collect();
    Json(LimitsAnswer { defaults, callers })
}

async fn set_token_limits(
    State(state): State<ApiState>,
    Path(name): Path<String>,
    Json(request): Json<SetLimits>,
) -> Response {
    let limits = match CallLimits::from_json(&request.limits, "the request") {
        Ok(limits) => limits,
        Err(why) => return error(StatusCode::BAD_REQUEST, why.to_string()),
    };
    let set = {
        let name = name.clone();
        off_runtime(state.access.store(), move |store| {
            store.set_token_limits(&name, &limits)
        })
        .await
    };
    match set {
        Ok(Ok(true)) => match reload_tokens(&state).await {
            Ok(()) => {
                let said = if limits.is_empty() {
                    format!("token {name} has the config's limits alone")
                } else {
                    format!("token {name} limited to {}", limits.to_json())
                };
                Json(Done::new(said)).into_response()
            }
            Err(failed) => failed,
        },
        Ok(Ok(false)) => error(StatusCode::NOT_FOUND, format!("no token named {name:?}")),
        Ok(Err(e)) => store_error(e),
        Err(failed) => failed,
    }
}
