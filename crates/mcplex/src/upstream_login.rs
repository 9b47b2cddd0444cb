//! An operator's OAuth login to an upstream from the browser (the dashboard's "Log in"), the
//! same login `mcplex auth login` makes from a terminal: `POST /api/v1/servers/{name}/login`
//! (behind the API key or a dashboard session) begins it and answers the URL to open; the
//! authorization server sends the browser back to `GET /ui/oauth/callback`, which finishes it
//! and stores the login, where every gateway of the store finds it. What was begun waits in the
//! store (sealed, single use, ten minutes), so the callback may reach any replica; its `state`
//! is what ties the callback to the operator who began it. A caller's own login to a
//! `per_user` server (`connect.rs`) begins here too and comes back to the same callback, which
//! stores it as that caller's.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use mcplex_api::{LoginStarted, paths};
use mcplex_config::{ServerConfig, Transport};
use mcplex_oauth::{LoginKey, LoginStore, PENDING_FOR_SECS, PendingLogin};
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
    let Some(origin) = crate::origin::request_origin(&headers) else {
        return error(
            StatusCode::BAD_REQUEST,
            "the request names no Origin or Host to send the browser back to",
        );
    };
    match begin_login(state.access.store(), server, &origin, None).await {
        Ok(url) => Json(LoginStarted { url }).into_response(),
        Err((status, why)) => error(status, why),
    }
}

/// A caller's own login: whose, and the keyed hash of the cookie of the browser that begins it.
pub(crate) struct ForCaller<'a> {
    pub caller: &'a str,
    pub bound_to: String,
}

/// Begins a login to URL server `server` whose answer comes back to `origin`'s callback, for
/// `caller` (its own login to a `per_user` server; `None`: the gateway's): what was begun is
/// kept in the store; the answer is the URL to open.
pub(crate) async fn begin_login(
    store: &Arc<Store>,
    server: &ServerConfig,
    origin: &str,
    caller: Option<ForCaller<'_>>,
) -> Result<String, (StatusCode, String)> {
    let url = match &server.transport {
        Transport::Http { url, .. } | Transport::Sse { url, .. } => url.clone(),
        _ => {
            return Err((
                StatusCode::BAD_REQUEST,
                format!("{} is not a URL server: it has no OAuth login", server.name),
            ));
        }
    };
    let http = mcplex_oauth::http_client()
        .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    let oauth = server.oauth.clone().unwrap_or_default();
    let redirect_uri = format!("{origin}{CALLBACK_PATH}");
    let challenge = mcplex_upstream::oauth_challenge(&url).await;
    let target = mcplex_oauth::LoginTarget {
        server: &server.name,
        server_url: &url,
        challenge: challenge.as_deref(),
        redirect_uri: &redirect_uri,
        caller: caller.as_ref().map(|c| c.caller),
    };
    let mut begun = mcplex_oauth::begin(&http, &target, &oauth)
        .await
        .map_err(|e| (StatusCode::BAD_GATEWAY, e.to_string()))?;
    begun.pending.bound_to = caller.map(|c| c.bound_to);
    let bytes = serde_json::to_vec(&begun.pending)
        .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    let pending_state = begun.pending.state.clone();
    let kept = off_runtime(store, move |store| {
        store.put_pending_login(&pending_state, &bytes, PENDING_FOR_SECS)
    })
    .await;
    match kept {
        Ok(Ok(())) => Ok(begun.url.to_string()),
        Ok(Err(e)) => Err((
            StatusCode::SERVICE_UNAVAILABLE,
            format!("the login could not be kept in the store: {e}"),
        )),
        Err(_) => Err((
            StatusCode::INTERNAL_SERVER_ERROR,
            "the store's worker failed".to_owned(),
        )),
    }
}

#[derive(Deserialize)]
struct CallbackQuery {
    state: Option<String>,
    code: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

async fn callback(
    State(store): State<Arc<Store>>,
    headers: HeaderMap,
    Query(query): Query<CallbackQuery>,
) -> Response {
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
    if let Some(caller) = &pending.caller
        && let Err(refused) = caller_may_finish(&store, &headers, &pending, caller).await
    {
        return refused;
    }
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
    let key = LoginKey {
        server: pending.server.clone(),
        caller: pending.caller.clone(),
    };
    let logins = StoreLogins(store.clone());
    let saved = tokio::task::spawn_blocking(move || logins.save(&key, &login)).await;
    match saved {
        Ok(Ok(())) => match &pending.caller {
            None => {
                tracing::info!(server = %pending.server, "logged in from the dashboard");
                Redirect::to("/ui/#/servers").into_response()
            }
            Some(caller) => {
                tracing::info!(server = %pending.server, caller = %caller, "a caller connected its own account");
                page(
                    StatusCode::OK,
                    &format!(
                        "Connected: {caller}'s calls to {} now go out with this account. You can close this page and call the tool again.",
                        pending.server
                    ),
                )
            }
        },
        Ok(Err(e)) => page(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!("The login could not be stored: {e}"),
        ),
        Err(e) => page(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

/// Whether `caller`'s login may finish here: in the browser that began it (a URL of the flow
/// passed to someone else would tie their account to the caller), and only for a caller not
/// connected yet (another account never silently replaces the one it has).
async fn caller_may_finish(
    store: &Arc<Store>,
    headers: &HeaderMap,
    pending: &PendingLogin,
    caller: &str,
) -> Result<(), Response> {
    let same_browser = pending
        .bound_to
        .as_deref()
        .is_some_and(|bound_to| crate::connect::same_browser(store, headers, bound_to));
    if !same_browser {
        tracing::warn!(server = %pending.server, caller, "a caller's login came back to another browser than the one that began it; refused");
        return Err(page(
            StatusCode::FORBIDDEN,
            "This login was begun in another browser: open the link you were given in this one.",
        ));
    }
    let (server, who) = (pending.server.clone(), caller.to_owned());
    match off_runtime(store, move |store| store.caller_login(&server, &who)).await {
        Ok(Ok(None)) => Ok(()),
        Ok(Ok(Some(_))) => Err(page(
            StatusCode::CONFLICT,
            &format!(
                "{caller} is connected to {} already: it disconnects first (DELETE /api/v1/connections/{}), or the operator revokes its login, before another account replaces it.",
                pending.server, pending.server
            ),
        )),
        Ok(Err(e)) => Err(page(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!("The store did not answer: {e}"),
        )),
        Err(failed) => Err(failed),
    }
}
