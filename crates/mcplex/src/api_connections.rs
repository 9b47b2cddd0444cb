//! Callers' own logins to `per_user` servers, for the operator and for the callers themselves:
//! who is connected (a field of each such server in `GET /api/v1/servers`), an operator's
//! revocation (`DELETE /api/v1/servers/{name}/logins/{caller}`, audited like every operator
//! action), and a caller's own disconnection (`DELETE /api/v1/connections/{name}`, with the
//! agent's token, on the agent routes). A removed login ends the caller's connection at its next
//! request, on every replica (the store's generation moves).

use std::collections::HashMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::delete;
use axum::{Extension, Json, Router};
use mcplex_api::{ConnectedCaller, Done, paths};
use mcplex_surface::Caller;

use crate::api::{ApiState, error, off_runtime};

/// The operator's route (behind the management guard and the audit layer).
pub fn router(state: ApiState) -> Router {
    Router::new()
        .route(paths::CALLER_LOGIN, delete(revoke))
        .with_state(state)
}

/// The caller's own route (authenticated like MCP: the guard attaches the [`Caller`]).
pub fn caller_router(state: ApiState) -> Router {
    Router::new()
        .route(paths::CONNECTION, delete(disconnect))
        .with_state(state)
}

/// The callers connected to each `per_user` server (only to `only`, when named: one server's
/// page asks the store for its rows alone); a store that does not answer shows none.
pub async fn connected(
    state: &ApiState,
    only: Option<&str>,
) -> HashMap<String, Vec<ConnectedCaller>> {
    let per_user: Vec<String> = state
        .config
        .borrow()
        .servers
        .iter()
        .filter(|s| only.is_none_or(|name| s.name == name))
        .filter(|s| s.oauth.as_ref().is_some_and(|o| o.own_logins()))
        .map(|s| s.name.clone())
        .collect();
    if per_user.is_empty() {
        return HashMap::new();
    }
    let only = only.map(str::to_owned);
    let rows = off_runtime(state.access.store(), move |store| match only {
        Some(server) => store.caller_logins_to(&server),
        None => store.caller_logins(),
    });
    let rows = match rows.await {
        Ok(Ok(rows)) => rows,
        _ => Vec::new(),
    };
    let mut by_server: HashMap<String, Vec<ConnectedCaller>> = per_user
        .into_iter()
        .map(|name| (name, Vec::new()))
        .collect();
    for row in rows {
        if let Some(callers) = by_server.get_mut(&row.server) {
            callers.push(ConnectedCaller {
                caller: row.caller,
                updated_at: row.updated_at,
            });
        }
    }
    by_server
}

async fn revoke(
    State(state): State<ApiState>,
    Path((name, caller)): Path<(String, String)>,
) -> Response {
    forget(&state, name, caller, "revoked").await
}

async fn disconnect(
    State(state): State<ApiState>,
    caller: Option<Extension<Caller>>,
    Path(name): Path<String>,
) -> Response {
    let Some(who) = caller.and_then(|Extension(caller)| caller.token) else {
        return error(
            StatusCode::BAD_REQUEST,
            "the operator's login is the gateway's own: `mcplex auth logout` forgets it",
        );
    };
    forget(&state, name, who.to_string(), "disconnected").await
}

async fn forget(state: &ApiState, server: String, caller: String, done: &str) -> Response {
    let message = format!("{caller} {done} from {server}");
    match off_runtime(state.access.store(), move |store| {
        store.delete_caller_login(&server, &caller)
    })
    .await
    {
        Ok(Ok(true)) => Json(Done::new(message)).into_response(),
        Ok(Ok(false)) => error(StatusCode::NOT_FOUND, "no such login".to_owned()),
        Ok(Err(e)) => error(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("the store did not take it: {e}"),
        ),
        Err(failed) => failed,
    }
}
