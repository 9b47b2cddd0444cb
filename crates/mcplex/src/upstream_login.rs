//! An operator's OAuth login to an upstream from the browser (the dashboard's "Log in"), the
//! same login `mcplex auth login` makes from a terminal: `POST /api/v1/servers/{name}/login`
//! (behind the API key or a dashboard session) begins it and answers the URL to open; the
//! authorization server sends the browser back to `GET /ui/oauth/callback`, which finishes it
//! and stores the login, where every gateway of the store finds it. What was begun waits in the
//! store (sealed, single use, ten minutes), so the callback may reach any replica; its `state`
//! is what ties the callback to the operator who began it.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use mcplex_api::{LoginStarted, paths};
use mcplex_config::Transport;
use mcplex_oauth::{LoginStore, PENDING_FOR_SECS, PendingLogin};
use mcplex_state::Store;
use serde::Deserialize;

use crate::api::{ApiState, error, off_runtime};
use crate::logins::StoreLogins;
use crate::ui::text_page as page;

/// Where the authorization server sends the browser back.
pub const CALLBACK_PATH: &str = "/ui/oauth/callback";

/// The management API's route.
pub fn router(state: ApiState) -> Router {
    Router::new()
        .route(paths::SERVER_LOGIN, post(begin))
        .with_state(state)
}

/// The dashboard's route, open like every `/ui` page: the pending login's `state` is the proof.
pub fn callback_router(store: Arc<Store>) -> Router {
    Router::new()
        .route(CALLBACK_PATH, get(callback))
        .with_state(store)
}

async fn begin(
    State(state): State<ApiState>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response {
    let config = state.config.borrow().clone();
    let Some(server) = config.servers.iter().find(|s| s.name == name) else {
        return error(StatusCode::NOT_FOUND, format!("no server named {name:?}"));
    };
    let url = match &server.transport {
        Transport::Http { url, .. } | Transport::Sse { url, .. } => url.clone(),
        _ => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("{name} is not a URL server: it has no OAuth login"),
            );
        }
    };
    let Some(origin) = origin_of(&headers) else {
        return error(
            StatusCode::BAD_REQUEST,
            "the request names no Origin or Host to send the browser back to",
        );
    };
    let http = match mcplex_oauth::http_client() {
        Ok(http) => http,
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    let oauth = server.oauth.clone().unwrap_or_default();
    let redirect_uri = format!("{origin}{CALLBACK_PATH}");
    let challenge = mcplex_upstream::oauth_challenge(&url).await;
    let target = mcplex_oauth::LoginTarget {
        server: &name,
        server_url: &url,
        challenge: challenge.as_deref(),
        redirect_uri: &redirect_uri,
    };
    let begun = match mcplex_oauth::begin(&http, &target, &oauth).await {
        Ok(begun) => begun,
        Err(e) => return error(StatusCode::BAD_GATEWAY, e.to_string()),
    };
    let bytes = match serde_json::to_vec(&begun.pending) {
        Ok(bytes) => bytes,
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    let pending_state = begun.pending.state.clone();
    let kept = off_runtime(state.access.store(), move |store| {
        store.put_pending_login(&pending_state, &bytes, PENDING_FOR_SECS)
    })
    .await;
    match kept {
        Ok(Ok(())) => Json(LoginStarted {
            url: begun.url.to_string(),
        })
        .into_response(),
        Ok(Err(e)) => error(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("the login could not be kept in the store: {e}"),
        ),
        Err(failed) => failed,
    }
}

/// The browser's origin (a dashboard request always has one), else this listener's as the
/// request named it (the guard has checked the Host against the trusted hosts).
fn origin_of(headers: &HeaderMap) -> Option<String> {
    let text = |name| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty() && *v != "null")
    };
    text(header::ORIGIN)
        .map(str::to_owned)
        .or_else(|| text(header::HOST).map(|host| format!("http://{host}")))
}

#[derive(Deserialize)]
struct CallbackQuery {
    state: Option<String>,
    code: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

async fn callback(State(store): State<Arc<Store>>, Query(query): Query<CallbackQuery>) -> Response {
    let Some(state) = query.state.filter(|s| !s.is_empty() && s.len() <= 200) else {
        return page(StatusCode::BAD_REQUEST, "This login answer names no login.");
    };
    let taken = off_runtime(&store, {
        let state = state.clone();
        move |store| store.take_pending_login(&state, PENDING_FOR_SECS)
    })
    .await;
    let pending: PendingLogin = match taken {
        Ok(Ok(Some(bytes))) => match serde_json::from_slice(&bytes) {
            Ok(pending) => pending,
            Err(_) => {
                return page(
                    StatusCode::BAD_REQUEST,
                    "The begun login is unreadable: start it again.",
                );
            }
        },
        Ok(Ok(None)) => {
            return page(
                StatusCode::BAD_REQUEST,
                "No login is waiting for this answer (it was used, or began more than ten minutes ago): start it again from the dashboard.",
            );
        }
        Ok(Err(e)) => {
            return page(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!("The store did not answer: {e}"),
            );
        }
        Err(failed) => return failed,
    };
    if let Some(refused) = query.error {
        let detail = query.error_description.unwrap_or_default();
        return page(
            StatusCode::BAD_REQUEST,
            &format!(
                "The authorization server refused the login to {}: {} {}",
                pending.server,
                crate::ui::short(&refused),
                crate::ui::short(&detail)
            ),
        );
    }
    let Some(code) = query.code else {
        return page(StatusCode::BAD_REQUEST, "The answer has no code.");
    };
    let http = match mcplex_oauth::http_client() {
        Ok(http) => http,
        Err(e) => return page(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    };
    let login = match mcplex_oauth::finish(&http, &pending, &code).await {
        Ok(login) => login,
        Err(e) => {
            return page(
                StatusCode::BAD_GATEWAY,
                &format!("The login to {} failed: {e}", pending.server),
            );
        }
    };
    let server = pending.server.clone();
    let logins = StoreLogins(store.clone());
    let saved = tokio::task::spawn_blocking(move || logins.save(&server, &login)).await;
    match saved {
        Ok(Ok(())) => {
            tracing::info!(server = %pending.server, "logged in from the dashboard");
            Redirect::to("/ui/#/servers").into_response()
        }
        Ok(Err(e)) => page(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!("The login could not be stored: {e}"),
        ),
        Err(e) => page(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}
