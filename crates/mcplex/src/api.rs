//! The management API under `/api/v1`, on the gateway's own listener, behind the admin API key
//! (checked by the surface guard). JSON in, JSON out; errors are `{"error": "..."}` with a 4xx/5xx
//! status. Approvals go to the live catalog task (the one owner of approvals); tokens go to the
//! store and the in-memory token table is refreshed.
//!
//! - `GET  /api/v1/servers`, `POST /api/v1/servers/{name}/approve|quarantine`
//! - `GET  /api/v1/tools`, `POST /api/v1/tools/{id}/approve[?hash=H]|block`
//! - `GET  /api/v1/approvals` (what waits for the operator)
//! - `GET  /api/v1/tokens`, `POST /api/v1/tokens`, `DELETE /api/v1/tokens/{name}`

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use mcplex_catalog::Snapshot;
use mcplex_config::Config;
use mcplex_dispatch::Gateway;
use mcplex_state::{TokenRecord, TokenSpec, now_unix};
use mcplex_trust::Permissions;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot, watch};

use crate::auth::Access;
use mcplex_runtime::{Refusal, TrustAction, TrustRequest};

#[derive(Clone)]
pub struct ApiState {
    pub gateway: Arc<Gateway>,
    pub access: Arc<Access>,
    pub trust: mpsc::Sender<TrustRequest>,
    pub config: watch::Receiver<Arc<Config>>,
}

pub fn router(state: ApiState, max_body_bytes: usize) -> Router {
    Router::new()
        .route("/api/v1/servers", get(servers))
        .route("/api/v1/servers/{name}/{action}", post(server_action))
        .route("/api/v1/tools", get(tools))
        .route("/api/v1/tools/{id}/{action}", post(tool_action))
        .route("/api/v1/approvals", get(approvals))
        .route("/api/v1/tokens", get(tokens).post(create_token))
        .route("/api/v1/tokens/{name}", axum::routing::delete(revoke_token))
        .layer(axum::extract::DefaultBodyLimit::max(max_body_bytes))
        .with_state(state)
}

/// A write the store refused: the caller's mistake (400), or the store's (503: nothing was
/// saved, nothing changed; the caller may try again).
fn store_error(e: mcplex_state::StateError) -> Response {
    match e {
        mcplex_state::StateError::Invalid(why) => error(StatusCode::BAD_REQUEST, why),
        other => error(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not saved, nothing changed: {other}"),
        ),
    }
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({"error": message.into()}))).into_response()
}

async fn servers(State(state): State<ApiState>) -> Json<Value> {
    Json(json!({"servers": servers_json(&state.gateway.snapshot())}))
}

pub fn servers_json(snapshot: &Snapshot) -> Vec<Value> {
    snapshot
        .servers()
        .iter()
        .map(|(name, view)| {
            let withheld = snapshot
                .withheld()
                .iter()
                .filter(|w| *w.id.server == **name)
                .count();
            json!({
                "name": name,
                "state": if view.quarantined { "quarantined" } else { "approved" },
                "status": view.status.to_string(),
                "tools": view.tool_count,
                "withheld": withheld,
            })
        })
        .collect()
}

async fn server_action(
    State(state): State<ApiState>,
    Path((name, action)): Path<(String, String)>,
) -> Response {
    let action = match action.as_str() {
        "approve" => TrustAction::ApproveServer(name),
        "quarantine" => TrustAction::QuarantineServer(name),
        other => return error(StatusCode::NOT_FOUND, format!("unknown action {other:?}")),
    };
    ask(&state, action).await
}

async fn tools(State(state): State<ApiState>) -> Json<Value> {
    Json(json!({"tools": tools_json(&state.gateway.snapshot())}))
}

/// Every tool offered, served or withheld, with its status and pin.
pub fn tools_json(snapshot: &Snapshot) -> Vec<Value> {
    let served = snapshot.tools().iter().map(|t| {
        json!({
            "id": t.id.to_string(), "name": t.display_name, "status": "approved",
            "permission": t.permission.as_str(), "pin": t.pin, "deferred": t.deferred,
        })
    });
    let withheld = snapshot.withheld().iter().map(|w| {
        json!({
            "id": w.id.to_string(), "status": w.verdict.as_str(), "reason": w.reason.as_str(),
            "permission": w.permission.as_str(), "pin": w.pin,
            "description": w.raw.get("description").cloned().unwrap_or(Value::Null),
        })
    });
    let mut all: Vec<Value> = served.chain(withheld).collect();
    all.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    all
}

/// `?hash=H` on an approval: approve only the definition that hashes to `H`.
#[derive(Deserialize)]
struct Expected {
    hash: Option<String>,
}

async fn tool_action(
    State(state): State<ApiState>,
    Path((id, action)): Path<(String, String)>,
    Query(expected): Query<Expected>,
) -> Response {
    let action = match action.as_str() {
        "approve" => TrustAction::ApproveTool {
            id,
            hash: expected.hash,
        },
        "block" => TrustAction::BlockTool(id),
        other => return error(StatusCode::NOT_FOUND, format!("unknown action {other:?}")),
    };
    ask(&state, action).await
}

async fn approvals(State(state): State<ApiState>) -> Json<Value> {
    let snapshot = state.gateway.snapshot();
    let servers: Vec<&String> = snapshot
        .servers()
        .iter()
        .filter(|(_, v)| v.quarantined)
        .map(|(name, _)| name)
        .collect();
    let tools: Vec<Value> = tools_json(&snapshot)
        .into_iter()
        .filter(|t| t.get("reason").is_some())
        .collect();
    Json(json!({"servers": servers, "tools": tools}))
}

/// Sends `action` to the live task and answers with its outcome.
async fn ask(state: &ApiState, action: TrustAction) -> Response {
    // The snapshot that reflects the change is published right after the reply; wait for it so
    // a listing right after this answer already shows the change. Subscribed before asking, so
    // a quick publish is not missed (the wait would then run into its timeout).
    let mut published = state.gateway.snapshot_changes();
    published.mark_unchanged();
    let (reply, outcome) = oneshot::channel();
    if state
        .trust
        .send(TrustRequest { action, reply })
        .await
        .is_err()
    {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "the gateway is shutting down",
        );
    }
    match outcome.await {
        Ok(Ok(message)) => {
            let _ =
                tokio::time::timeout(std::time::Duration::from_secs(2), published.changed()).await;
            (
                StatusCode::OK,
                Json(json!({"ok": true, "message": message})),
            )
                .into_response()
        }
        Ok(Err(refusal @ Refusal::Invalid(_))) => {
            error(StatusCode::BAD_REQUEST, refusal.to_string())
        }
        Ok(Err(refusal @ Refusal::NotSaved(_))) => {
            error(StatusCode::SERVICE_UNAVAILABLE, refusal.to_string())
        }
        Err(_) => error(
            StatusCode::SERVICE_UNAVAILABLE,
            "the gateway is shutting down",
        ),
    }
}

async fn tokens(State(state): State<ApiState>) -> Response {
    match state.access.store().tokens() {
        Ok(tokens) => Json(json!({"tokens": tokens.iter().map(token_json).collect::<Vec<_>>()}))
            .into_response(),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// A token as the API and the CLI show it: never its secret, never its hash.
pub fn token_json(token: &TokenRecord) -> Value {
    json!({
        "name": token.spec.name,
        "servers": token.spec.servers.as_ref().map(|s| s.iter().collect::<Vec<_>>()),
        "permissions": token.spec.permissions.to_string(),
        "profile": token.spec.profile,
        "created_at": token.created_at,
        "expires_at": token.spec.expires_at,
        "status": token.status(now_unix()),
    })
}

/// The body of `POST /api/v1/tokens`, also what `mcplex token create` sends.
#[derive(Debug, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct CreateToken {
    pub name: String,
    /// Omitted: every server.
    #[serde(default)]
    pub servers: Option<Vec<String>>,
    pub permissions: String,
    #[serde(default)]
    pub profile: Option<String>,
    /// A duration such as `30d` or `12h`.
    #[serde(default)]
    pub expires: Option<String>,
}

/// Validates a token request against the config.
pub fn token_spec(request: &CreateToken, config: &Config) -> Result<TokenSpec, String> {
    let permissions = Permissions::parse(&request.permissions)?;
    let servers = match &request.servers {
        None => None,
        Some(names) => {
            let mut set = BTreeSet::new();
            for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
                if !config.servers.iter().any(|s| s.name == name) {
                    return Err(format!("no server named {name:?} in the config"));
                }
                set.insert(name.to_owned());
            }
            Some(set)
        }
    };
    if let Some(profile) = &request.profile
        && !config.profiles.iter().any(|p| p.name == *profile)
    {
        return Err(format!("no profile named {profile:?} in the config"));
    }
    let expires_at = match &request.expires {
        None => None,
        Some(text) => {
            let after = mcplex_config::parse_duration(text)
                .map_err(|e| format!("expires {text:?}: {e}"))?;
            let seconds = i64::try_from(after.as_secs()).unwrap_or(i64::MAX);
            Some(now_unix().saturating_add(seconds))
        }
    };
    Ok(TokenSpec {
        name: request.name.clone(),
        servers,
        permissions,
        profile: request.profile.clone(),
        expires_at,
    })
}

async fn create_token(State(state): State<ApiState>, Json(request): Json<CreateToken>) -> Response {
    let config = state.config.borrow().clone();
    let spec = match token_spec(&request, &config) {
        Ok(spec) => spec,
        Err(why) => return error(StatusCode::BAD_REQUEST, why),
    };
    let created = match state.access.store().create_token(spec) {
        Ok(created) => created,
        Err(mcplex_state::StateError::TokenExists(name)) => {
            return error(
                StatusCode::CONFLICT,
                format!("a token named {name:?} already exists"),
            );
        }
        Err(e) => return store_error(e),
    };
    if let Err(e) = state.access.reload_tokens() {
        return error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string());
    }
    let mut body = token_json(&created.record);
    body["token"] = Value::String(created.token);
    (StatusCode::CREATED, Json(body)).into_response()
}

async fn revoke_token(State(state): State<ApiState>, Path(name): Path<String>) -> Response {
    match state.access.store().revoke_token(&name) {
        Ok(true) => {
            if let Err(e) = state.access.reload_tokens() {
                return error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string());
            }
            Json(json!({"ok": true, "message": format!("token {name} revoked")})).into_response()
        }
        Ok(false) => error(
            StatusCode::NOT_FOUND,
            format!("no active token named {name:?}"),
        ),
        Err(e) => store_error(e),
    }
}
