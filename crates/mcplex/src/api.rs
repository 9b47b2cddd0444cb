//! The management API under `/api/v1`, on the gateway's own listener, behind the admin API key
//! (checked by its guard, `api_guard.rs`). JSON in, JSON out: every body is a type of `mcplex-api`,
//! which the CLI reads back; errors are `{"error": "..."}` with a 4xx/5xx status. Approvals go
//! to the live catalog task (the one owner of approvals); tokens go to the store, on a blocking
//! thread (no store call runs on an async worker), and the in-memory token table is refreshed.
//! This file maps the catalog's, the trust crate's and the store's types to the wire types.
//!
//! - `GET  /api/v1/servers`, `POST /api/v1/servers/{name}/approve|quarantine`
//! - `GET  /api/v1/tools`, `POST /api/v1/tools/{id}/approve[?hash=H]|block`
//! - `GET  /api/v1/approvals` (what waits for the operator)
//! - `GET  /api/v1/tokens`, `POST /api/v1/tokens`, `DELETE /api/v1/tokens/{name}`
//! - `GET  /api/v1/limits`, `PUT /api/v1/tokens/{name}/limits`: `api_limits.rs`
//! - the routes an agent's application uses (projection, search, call): `projection.rs`
//! - the routes the dashboard reads (review, activity, stats, search, config, stderr):
//!   `api_views.rs`

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use axum::Extension;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use mcplex_api::{
    ApprovalsAnswer, ApproveQuery, CreateToken, CreatedToken, Done, ErrorAnswer, ServedTool,
    Server, ServerAction, ServerState, ServersAnswer, Token, TokenStatus, TokensAnswer, Tool,
    ToolAction, ToolStatus, ToolsAnswer, WithheldReason, WithheldTool, WithoutModel, paths,
};
use mcplex_catalog::{Scope, Snapshot, UnavailableReason};
use mcplex_config::Config;
use mcplex_dispatch::Gateway;
use mcplex_state::{StateError, Store, TokenRecord, TokenSpec, now_unix};
use mcplex_trust::{Permission, Permissions, Verdict};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};

use crate::auth::Access;
use mcplex_runtime::{Refusal, TrustAction, TrustRequest};
use mcplex_surface::Caller;

#[derive(Clone)]
pub struct ApiState {
    pub gateway: Arc<Gateway>,
    pub access: Arc<Access>,
    pub trust: mpsc::Sender<TrustRequest>,
    pub config: watch::Receiver<Arc<Config>>,
    /// Why searches are BM25F alone, when no sentence model loaded (`search_model` is a cold
    /// setting: this holds for the process's life).
    pub without_model: Option<WithoutModel>,
    /// The search model's embedding worker (`None`: searches are BM25F).
    pub semantic: Option<Arc<mcplex_runtime::SemanticSearch>>,
    /// The address this gateway registered in the store and its registration id (its identity
    /// proofs name both).
    pub address: String,
    pub instance: String,
    /// Whether the store answers (kept by the gateway's follower).
    pub store_reachable: Arc<std::sync::atomic::AtomicBool>,
    /// Where the operators' actions go in the audit log (`None`: it is off).
    pub actions: Option<crate::operator_audit::Actions>,
}

pub fn router(state: ApiState, max_body_bytes: usize) -> Router {
    let agent_routes = crate::projection::router(state.clone())
        .merge(crate::api_connections::caller_router(state.clone()));
    // Every change is written to the audit log, whichever route takes it (an agent's too).
    let audited =
        axum::middleware::from_fn_with_state(state.clone(), crate::operator_audit::record);
    Router::new()
        .route(
            paths::SERVERS,
            get(servers).post(crate::api_added_servers::add),
        )
        .route(paths::SERVER_ACTION, post(server_action))
        .route(paths::TOOLS, get(tools))
        .route(paths::TOOL_ACTION, post(tool_action))
        .route(paths::APPROVALS, get(approvals))
        .route(paths::TOKENS, get(tokens).post(create_token))
        .route(paths::TOKEN, axum::routing::delete(revoke_token))
        .route(paths::IDENTITY, post(identity))
        .with_state(state.clone())
        .merge(crate::api_limits::router(state.clone()))
        .merge(crate::api_trends::router(state.clone()))
        .merge(crate::upstream_login::router(state.clone()))
        .merge(crate::api_connections::router(state.clone()))
        .merge(crate::api_views::router(state.clone()))
        .merge(crate::api_server_page::router(state))
        .merge(agent_routes)
        .layer(audited)
        .layer(axum::extract::DefaultBodyLimit::max(max_body_bytes))
}

/// `POST /api/v1/identity` (open): proves to a CLI that this gateway holds the API key.
async fn identity(
    State(state): State<ApiState>,
    Json(request): Json<mcplex_api::IdentityRequest>,
) -> Response {
    if !mcplex_state::well_formed_nonce(&request.nonce) {
        return error(
            StatusCode::BAD_REQUEST,
            "nonce must be 32 to 128 hex digits".to_owned(),
        );
    }
    let proof = state
        .access
        .identity_proof(&state.instance, &state.address, &request.nonce);
    Json(mcplex_api::IdentityAnswer { proof }).into_response()
}

/// A write the store refused: the caller's mistake (400), or the store's (503: nothing was
/// saved, nothing changed; the caller may try again).
pub(crate) fn store_error(e: StateError) -> Response {
    match e {
        StateError::Invalid(why) => error(StatusCode::BAD_REQUEST, why),
        other => error(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not saved, nothing changed: {other}"),
        ),
    }
}

pub(crate) fn error(status: StatusCode, message: impl Into<String>) -> Response {
    let body = ErrorAnswer {
        error: message.into(),
    };
    (status, Json(body)).into_response()
}

/// Runs `work` on the store off the async workers (SQLite and PostgreSQL calls block): a
/// request never waits on the disk on a thread that serves other requests.
pub(crate) async fn off_runtime<T: Send + 'static>(
    store: &Arc<Store>,
    work: impl FnOnce(&Store) -> T + Send + 'static,
) -> Result<T, Response> {
    let store = store.clone();
    tokio::task::spawn_blocking(move || work(&store))
        .await
        .map_err(|e| error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
}

/// What the request may see: a viewer's reach (a person signed in who is not an operator;
/// the guard lets them reach only the reads that narrow their answers by it), else everything
/// (the API key, an operator).
pub(crate) fn reach(caller: Option<Extension<Caller>>) -> Scope {
    caller.map_or_else(Scope::full, |Extension(caller)| caller.scope)
}

/// Whether a tool `id` (`server:tool`) needing `permission` is within `reach`.
pub(crate) fn reaches(reach: &Scope, id: &str, permission: mcplex_api::Permission) -> bool {
    let permission = match permission {
        mcplex_api::Permission::Read => Permission::Read,
        mcplex_api::Permission::Write => Permission::Write,
        mcplex_api::Permission::Destructive => Permission::Destructive,
    };
    id.split_once(':')
        .is_some_and(|(server, _)| reach.admits(server, permission))
}

async fn servers(
    State(state): State<ApiState>,
    caller: Option<Extension<Caller>>,
    viewer: Option<Extension<crate::api_session::Viewer>>,
) -> Json<ServersAnswer> {
    let servers = server_rows(&state, &reach(caller), None, viewer.is_none()).await;
    Json(ServersAnswer { servers })
}

/// Every server within `reach` (or only the one named `only`, for its page), as the servers
/// list shows it: state, status, tool counts, isolation, recent failures, and (for the
/// operator) who connected their own account.
pub(crate) async fn server_rows(
    state: &ApiState,
    reach: &Scope,
    only: Option<&str>,
    operator: bool,
) -> Vec<Server> {
    let mut servers = servers_of(
        &state.gateway.snapshot(),
        |name| only.is_none_or(|only| name == only) && reach.admits_server(name),
        |name| state.gateway.isolation(name).map(isolation_view),
    );
    // Who connected their own account is for the operator, not for viewers (even a viewer
    // whose rule reaches every server).
    let mut connected = if operator {
        crate::api_connections::connected(state, only).await
    } else {
        HashMap::new()
    };
    for server in &mut servers {
        server.connected = connected.remove(&server.name);
        server.failures = state
            .gateway
            .failures(&server.name)
            .filter(|f| f.recent > 0)
            .map(|f| mcplex_api::RecentFailures {
                recent: f.recent,
                last: f.last,
            });
    }
    servers
}

/// How a server's process is isolated, on the wire.
pub fn isolation_view(isolation: mcplex_upstream::ServerIsolation) -> mcplex_api::Isolation {
    let report = isolation.report;
    mcplex_api::Isolation {
        level: match report.level {
            mcplex_upstream::IsolationLevel::Full => mcplex_api::IsolationLevel::Full,
            mcplex_upstream::IsolationLevel::Partial => mcplex_api::IsolationLevel::Partial,
            mcplex_upstream::IsolationLevel::Off => mcplex_api::IsolationLevel::Off,
        },
        summary: report.summary(),
        quarantine: report.quarantine,
        network: report.network,
        mechanisms: report.mechanisms,
        missing: report.missing,
        denied: isolation.denied,
    }
}

/// Every configured server that `shown` admits, with its state, status, tool counts and
/// `isolation`.
pub fn servers_of(
    snapshot: &Snapshot,
    shown: impl Fn(&str) -> bool,
    isolation: impl Fn(&str) -> Option<mcplex_api::Isolation>,
) -> Vec<Server> {
    let mut withheld_of: HashMap<&str, usize> = HashMap::new();
    for withheld in snapshot.withheld() {
        if shown(&withheld.id.server) {
            *withheld_of.entry(&withheld.id.server).or_default() += 1;
        }
    }
    snapshot
        .servers()
        .iter()
        .filter(|(name, _)| shown(name))
        .map(|(name, view)| {
            let withheld = withheld_of.get(name.as_str()).copied().unwrap_or_default();
            Server {
                name: name.clone(),
                state: if view.quarantined {
                    ServerState::Quarantined
                } else {
                    ServerState::Approved
                },
                status: view.status.clone().into(),
                tools: Some(view.tool_count),
                withheld: Some(withheld),
                isolation: isolation(name),
                failures: None,
                connected: None,
            }
        })
        .collect()
}

async fn server_action(
    State(state): State<ApiState>,
    Path((name, action)): Path<(String, String)>,
) -> Response {
    let action = match ServerAction::parse(&action) {
        Some(ServerAction::Approve) => TrustAction::ApproveServer(name),
        Some(ServerAction::Quarantine) => TrustAction::QuarantineServer(name),
        Some(ServerAction::Restart) => {
            return if state.gateway.restart(&name).await {
                let message = format!("restarted {name} on this replica");
                (StatusCode::OK, Json(Done::new(message))).into_response()
            } else {
                error(
                    StatusCode::NOT_FOUND,
                    format!("no server named {name:?} runs here"),
                )
            };
        }
        None => return error(StatusCode::NOT_FOUND, format!("unknown action {action:?}")),
    };
    ask(&state, action).await
}

async fn tools(
    State(state): State<ApiState>,
    caller: Option<Extension<Caller>>,
) -> Json<ToolsAnswer> {
    let reach = reach(caller);
    let mut tools = tools_of(&state.gateway.snapshot());
    tools.retain(|tool| match tool {
        Tool::Served(t) => reaches(&reach, &t.id, t.permission),
        Tool::Withheld(t) => reaches(&reach, &t.id, t.permission),
    });
    Json(ToolsAnswer { tools })
}

/// Every tool offered, served or withheld, with its status and pin, sorted by id.
pub fn tools_of(snapshot: &Snapshot) -> Vec<Tool> {
    let served = snapshot.tools().iter().map(|t| {
        Tool::Served(ServedTool {
            id: t.id.to_string(),
            name: t.display_name.clone(),
            status: ToolStatus::Approved,
            permission: permission(t.permission),
            pin: t.pin.clone(),
            deferred: t.deferred,
            description: t
                .raw
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned),
        })
    });
    let withheld = withheld_of(snapshot).into_iter().map(Tool::Withheld);
    let mut all: Vec<Tool> = served.chain(withheld).collect();
    all.sort_by(|a, b| a.id().cmp(b.id()));
    all
}

fn withheld_of(snapshot: &Snapshot) -> Vec<WithheldTool> {
    snapshot
        .withheld()
        .iter()
        .map(|w| WithheldTool {
            id: w.id.to_string(),
            status: tool_status(w.verdict),
            reason: withheld_reason(w.reason),
            permission: permission(w.permission),
            pin: w.pin.clone(),
            description: w.raw.get("description").cloned().unwrap_or(Value::Null),
        })
        .collect()
}

fn permission(permission: Permission) -> mcplex_api::Permission {
    match permission {
        Permission::Read => mcplex_api::Permission::Read,
        Permission::Write => mcplex_api::Permission::Write,
        Permission::Destructive => mcplex_api::Permission::Destructive,
    }
}

fn tool_status(verdict: Verdict) -> ToolStatus {
    match verdict {
        Verdict::Approved => ToolStatus::Approved,
        Verdict::Pending => ToolStatus::Pending,
        Verdict::Changed => ToolStatus::Changed,
        Verdict::Blocked => ToolStatus::Blocked,
    }
}

fn withheld_reason(reason: UnavailableReason) -> WithheldReason {
    match reason {
        UnavailableReason::NotFound => WithheldReason::NotFound,
        UnavailableReason::ServerDisabled => WithheldReason::ServerDisabled,
        UnavailableReason::ServerInitializing => WithheldReason::ServerInitializing,
        UnavailableReason::ServerUnhealthy => WithheldReason::ServerUnhealthy,
        UnavailableReason::ServerQuarantined => WithheldReason::ServerQuarantined,
        UnavailableReason::ToolPendingApproval => WithheldReason::ToolPendingApproval,
        UnavailableReason::ToolChanged => WithheldReason::ToolChanged,
        UnavailableReason::ToolBlocked => WithheldReason::ToolBlocked,
    }
}

async fn tool_action(
    State(state): State<ApiState>,
    Path((id, action)): Path<(String, String)>,
    Query(expected): Query<ApproveQuery>,
) -> Response {
    let action = match ToolAction::parse(&action) {
        Some(ToolAction::Approve) => TrustAction::ApproveTool {
            id,
            hash: expected.hash,
        },
        Some(ToolAction::Block) => TrustAction::BlockTool(id),
        None => return error(StatusCode::NOT_FOUND, format!("unknown action {action:?}")),
    };
    ask(&state, action).await
}

async fn approvals(
    State(state): State<ApiState>,
    caller: Option<Extension<Caller>>,
) -> Json<ApprovalsAnswer> {
    let reach = reach(caller);
    let snapshot = state.gateway.snapshot();
    let servers = snapshot
        .servers()
        .iter()
        .filter(|(name, v)| v.quarantined && reach.admits_server(name))
        .map(|(name, _)| name.clone())
        .collect();
    let mut tools = withheld_of(&snapshot);
    tools.retain(|t| reaches(&reach, &t.id, t.permission));
    tools.sort_by(|a, b| a.id.cmp(&b.id));
    Json(ApprovalsAnswer { servers, tools })
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
            (StatusCode::OK, Json(Done::new(message))).into_response()
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
    match off_runtime(state.access.store(), |store| store.tokens()).await {
        Ok(Ok(tokens)) => {
            let usage = state.gateway.limits().usage();
            let used = |name: &str| {
                usage
                    .iter()
                    .find(|u| u.caller == name)
                    .map(crate::api_limits::caller_usage)
            };
            Json(TokensAnswer {
                tokens: tokens
                    .iter()
                    .map(|token| Token {
                        usage: used(&token.spec.name),
                        ..token_of(token)
                    })
                    .collect(),
            })
            .into_response()
        }
        Ok(Err(e)) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        Err(failed) => failed,
    }
}

/// A token as the API and the CLI show it: never its secret, never its hash.
pub fn token_of(token: &TokenRecord) -> Token {
    let status = if token.revoked_at.is_some() {
        TokenStatus::Revoked
    } else if token.is_active(now_unix()) {
        TokenStatus::Active
    } else {
        TokenStatus::Expired
    };
    Token {
        name: token.spec.name.clone(),
        servers: token
            .spec
            .servers
            .as_ref()
            .map(|s| s.iter().cloned().collect()),
        permissions: token.spec.permissions.to_string(),
        profile: token.spec.profile.clone(),
        created_at: token.created_at,
        expires_at: token.spec.expires_at,
        status,
        limits: (!token.spec.limits.is_empty()).then(|| token.spec.limits.to_json()),
        usage: None,
    }
}

/// Validates a token request against the config.
pub fn token_spec(request: &CreateToken, config: &Config) -> Result<TokenSpec, String> {
    let permissions = Permissions::parse(&request.permissions).map_err(|e| e.to_string())?;
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
        // A bare number would be seconds: `--expires 30` meant for days would end within a minute.
        Some(text) if text.trim().parse::<f64>().is_ok() => {
            return Err(format!(
                "expires {text:?}: needs a unit: write e.g. \"30d\", \"12h\" or \"90m\""
            ));
        }
        Some(text) => {
            let after = mcplex_config::parse_duration(text)
                .map_err(|e| format!("expires {text:?}: {e}"))?;
            let seconds = i64::try_from(after.as_secs()).unwrap_or(i64::MAX);
            Some(now_unix().saturating_add(seconds))
        }
    };
    let limits = match &request.limits {
        None => mcplex_config::CallLimits::default(),
        Some(limits) => mcplex_config::CallLimits::from_json(limits, "the request")
            .map_err(|e| e.to_string())?,
    };
    Ok(TokenSpec {
        name: request.name.clone(),
        servers,
        permissions,
        profile: request.profile.clone(),
        expires_at,
        limits,
    })
}

async fn create_token(State(state): State<ApiState>, Json(request): Json<CreateToken>) -> Response {
    let config = state.config.borrow().clone();
    let spec = match token_spec(&request, &config) {
        Ok(spec) => spec,
        Err(why) => return error(StatusCode::BAD_REQUEST, why),
    };
    let created = match off_runtime(state.access.store(), |store| store.create_token(spec)).await {
        Ok(Ok(created)) => created,
        Ok(Err(StateError::TokenExists(name))) => {
            return error(
                StatusCode::CONFLICT,
                format!("a token named {name:?} already exists"),
            );
        }
        Ok(Err(e)) => return store_error(e),
        Err(failed) => return failed,
    };
    if let Err(failed) = reload_tokens(&state).await {
        return failed;
    }
    let body = CreatedToken {
        record: token_of(&created.record),
        token: created.token,
    };
    (StatusCode::CREATED, Json(body)).into_response()
}

async fn revoke_token(State(state): State<ApiState>, Path(name): Path<String>) -> Response {
    let revoked = {
        let name = name.clone();
        off_runtime(state.access.store(), move |store| store.revoke_token(&name)).await
    };
    match revoked {
        Ok(Ok(true)) => match reload_tokens(&state).await {
            Ok(()) => Json(Done::new(format!("token {name} revoked"))).into_response(),
            Err(failed) => failed,
        },
        Ok(Ok(false)) => error(
            StatusCode::NOT_FOUND,
            format!("no active token named {name:?}"),
        ),
        Ok(Err(e)) => store_error(e),
        Err(failed) => failed,
    }
}

/// Refreshes the gateway's copy of the tokens from the store, off the async workers.
pub(crate) async fn reload_tokens(state: &ApiState) -> Result<(), Response> {
    let access = state.access.clone();
    match tokio::task::spawn_blocking(move || access.reload_tokens()).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())),
        Err(e) => Err(error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())),
    }
}
