//! `GET /api/v1/servers/{name}`: one server's page for the dashboard: its row as the servers
//! list has it, its config entry as the Config page shows it (secrets replaced), and what
//! happened to it on this replica (connecting, ready, failed, lost, restarted), oldest first.
//! Operators only: the guard lets no viewer reach it. `DELETE` on the same path removes a server
//! added from the dashboard (`api_added_servers.rs`).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use mcplex_api::{ServerDetail, paths};
use mcplex_catalog::Scope;

use crate::api::{ApiState, error, server_rows};

pub fn router(state: ApiState) -> Router {
    Router::new()
        .route(
            paths::SERVER,
            get(server_page).delete(crate::api_added_servers::remove),
        )
        .with_state(state)
}

async fn server_page(State(state): State<ApiState>, Path(name): Path<String>) -> Response {
    let found = state
        .config
        .borrow()
        .servers
        .iter()
        .find(|s| s.name == name)
        .map(|entry| {
            (
                entry.origin == mcplex_config::ServerOrigin::Added,
                crate::config_view::server_view(entry),
            )
        });
    let Some((added, entry)) = found else {
        return error(StatusCode::NOT_FOUND, format!("no server named {name:?}"));
    };
    let Some(server) = server_rows(&state, &Scope::full(), Some(&name), true)
        .await
        .into_iter()
        .next()
    else {
        return error(StatusCode::NOT_FOUND, format!("no server named {name:?}"));
    };
    let history = state.gateway.history(&name).unwrap_or_default();
    Json(ServerDetail {
        server,
        config: entry,
        history,
        added,
    })
    .into_response()
}
