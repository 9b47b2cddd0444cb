//! The `/api/v1` routes the dashboard reads besides the CLI's (`api.rs`), behind the same
//! guard (the API key, or a dashboard session): what the operator reviews, in the gateway's
//! own words, so the page shows what the CLI and every replica see.
//!
//! - `GET  /api/v1/tools/{id}/review`: the pinned and the latest observed definition, by hash
//!   (approving sends that hash back: `POST /api/v1/tools/{id}/approve?hash=H`).
//! - `GET  /api/v1/activity?token=&tool=&status=&offset=&limit=`: the audit log, newest first.
//! - `GET  /api/v1/activity/export?format=&since=&token=&tool=&status=`: all of it, oldest
//!   first, streamed as JSON Lines or CSV (`activity_export.rs`).
//! - `GET  /api/v1/stats`: calls and errors per server in the last hour, restarts.
//! - `POST /api/v1/search`: the catalog ranked exactly as `tool_search`/`retrieve_tools` rank
//!   it (the same `Gateway::search`), with the scores.
//! - `GET  /api/v1/config`: the effective config redacted (`config_view.rs`), its warnings and
//!   the catalog's diagnostics.
//! - `GET  /api/v1/servers/{name}/stderr`: the server's stderr tail on this gateway, redacted.

use std::collections::BTreeMap;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use mcplex_api::{
    ActivityAnswer, ActivityEntry, ActivityExportQuery, ActivityFilter, ConfigAnswer,
    DiagnosticEntry, Ranking, SearchAnswer, SearchHit, SearchRequest, SearchStatus, ServerStats,
    StatsAnswer, StderrAnswer, paths,
};
use mcplex_catalog::Match;
use mcplex_dispatch::{RankBy, ToolQuery};

use crate::activity_export::{Export, ExportFormat};
use mcplex_names::ToolId;
use mcplex_state::{Activity, ActivityQuery};
use mcplex_surface::Caller;
use serde_json::Value;

use crate::api::{ApiState, error, off_runtime};

/// Activity rows per page by default, and the most one page may hold.
const ACTIVITY_PAGE: usize = 50;
const ACTIVITY_MAX_PAGE: usize = 500;
/// Search matches by default, and the most one search may return.
const SEARCH_DEFAULT: usize = 10;
const SEARCH_MAX: usize = 50;

pub fn router(state: ApiState) -> Router {
    Router::new()
        .route(paths::TOOL_REVIEW, get(tool_review))
        .route(paths::ACTIVITY, get(activity))
        .route(paths::ACTIVITY_EXPORT, get(activity_export))
        .route(paths::STATS, get(stats))
        .route(paths::SEARCH, post(search))
        .route(paths::CONFIG, get(config))
        .route(paths::SERVER_STDERR, get(stderr))
        .with_state(state)
}

async fn tool_review(
    State(state): State<ApiState>,
    caller: Option<Extension<Caller>>,
    viewer: Option<Extension<crate::api_session::Viewer>>,
    Path(id): Path<String>,
) -> Response {
    let Some(parsed) = ToolId::parse(&id) else {
        return error(
            StatusCode::BAD_REQUEST,
            format!("{id:?} is not a tool id (server:tool)"),
        );
    };
    // Out of a viewer's reach (its server, or its permission as the tools list shows it), a
    // tool is as unknown as one that does not exist; a tool the catalog does not hold is
    // reviewed by operators alone (an agent route never reaches here).
    let reach = crate::api::reach(caller);
    let snapshot = state.gateway.snapshot();
    let permission = snapshot
        .tool(&parsed)
        .map(|t| t.permission)
        .or_else(|| snapshot.withheld_tool(&parsed).map(|w| w.permission));
    let reached = match permission {
        Some(permission) => reach.admits(&parsed.server, permission),
        None => viewer.is_none(),
    };
    if !reached {
        return error(StatusCode::NOT_FOUND, format!("no tool {id:?}"));
    }
    let review = off_runtime(state.access.store(), move |store| {
        store.review(&parsed.server, &parsed.tool)
    })
    .await;
    match review {
        Ok(Ok(review)) => Json(crate::commands::review::review_of(&id, &review)).into_response(),
        Ok(Err(e)) => error(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
        Err(failed) => failed,
    }
}

async fn activity(State(state): State<ApiState>, Query(filter): Query<ActivityFilter>) -> Response {
    let limit = filter
        .limit
        .unwrap_or(ACTIVITY_PAGE)
        .clamp(1, ACTIVITY_MAX_PAGE);
    let blank = |text: Option<String>| text.filter(|t| !t.trim().is_empty());
    // One row more than the page says whether older rows exist.
    let query = ActivityQuery {
        limit: limit + 1,
        token: blank(filter.token),
        tool: blank(filter.tool),
        status: blank(filter.status),
        offset: filter.offset.unwrap_or(0),
        since_ms: None,
    };
    match off_runtime(state.access.store(), move |store| store.activity(&query)).await {
        Ok(Ok(mut rows)) => {
            let more = rows.len() > limit;
            rows.truncate(limit);
            let entries = rows.into_iter().map(entry_of).collect();
            Json(ActivityAnswer { entries, more }).into_response()
        }
        Ok(Err(e)) => error(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
        Err(failed) => failed,
    }
}

/// Every row the query selects, oldest first, streamed page by page (each page read on a
/// blocking thread) as JSON Lines or CSV. A store failure after the first page ends the body
/// early (the status is already sent): the client sees a truncated export, never a wrong one.
async fn activity_export(
    State(state): State<ApiState>,
    Query(query): Query<ActivityExportQuery>,
) -> Response {
    let format = match ExportFormat::parse(query.format.as_deref().unwrap_or("jsonl")) {
        Ok(format) => format,
        Err(why) => return error(StatusCode::BAD_REQUEST, why),
    };
    let blank = |text: Option<String>| text.filter(|t| !t.trim().is_empty());
    let since_ms = match blank(query.since)
        .map(|since| crate::activity_export::since_ms(&since, std::time::SystemTime::now()))
        .transpose()
    {
        Ok(since_ms) => since_ms,
        Err(why) => return error(StatusCode::BAD_REQUEST, format!("since: {why}")),
    };
    let selected = ActivityQuery {
        token: blank(query.token),
        tool: blank(query.tool),
        status: blank(query.status),
        since_ms,
        ..ActivityQuery::default()
    };
    let store = state.access.store().clone();
    let pages = futures::stream::unfold(Some(Export::new(selected, format)), move |export| {
        let store = store.clone();
        async move {
            let mut export = export?;
            let read = tokio::task::spawn_blocking(move || {
                let chunk = export.next_chunk(&store);
                (export, chunk)
            })
            .await;
            match read {
                Ok((export, Ok(Some(chunk)))) => {
                    Some((Ok::<_, std::io::Error>(chunk), Some(export)))
                }
                Ok((_, Ok(None))) => None,
                Ok((_, Err(e))) => {
                    tracing::warn!("activity export ended early: {e}");
                    Some((Err(std::io::Error::other(e.to_string())), None))
                }
                Err(e) => Some((Err(std::io::Error::other(e.to_string())), None)),
            }
        }
    });
    let mut response = axum::body::Body::from_stream(pages).into_response();
    response.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static(format.content_type()),
    );
    response
}

/// A stored row as the API and `mcplex activity --json` show it.
pub fn entry_of(a: Activity) -> ActivityEntry {
    ActivityEntry {
        at_ms: a.at_ms,
        request_id: a.request_id,
        token: a.token,
        tool: a.tool,
        status: a.status,
        duration_us: a.duration_us,
        request_bytes: a.request_bytes,
        response_bytes: a.response_bytes,
        arguments: a.arguments,
        replica: a.replica,
        method: a.method,
    }
}

async fn stats(State(state): State<ApiState>, caller: Option<Extension<Caller>>) -> Response {
    let reach = crate::api::reach(caller);
    let since_ms = mcplex_state::now_unix()
        .saturating_sub(3600)
        .saturating_mul(1000);
    let counts = match off_runtime(state.access.store(), move |store| {
        store.activity_counts(since_ms)
    })
    .await
    {
        Ok(Ok(counts)) => counts,
        Ok(Err(e)) => return error(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
        Err(failed) => return failed,
    };
    let snapshot = state.gateway.snapshot();
    let mut servers: BTreeMap<String, ServerStats> = snapshot
        .servers()
        .keys()
        .filter(|name| reach.admits_server(name))
        .map(|name| {
            let stats = ServerStats {
                server: name.clone(),
                calls: 0,
                errors: 0,
                restarts: mcplex_telemetry::upstream_restarts(name),
            };
            (name.clone(), stats)
        })
        .collect();
    for count in counts {
        // `server:tool` for tool calls, `server:` and a subject for other requests.
        let Some((server, _)) = count.tool.split_once(':') else {
            continue;
        };
        if let Some(stats) = servers.get_mut(server) {
            let n = u64::try_from(count.count).unwrap_or(0);
            stats.calls += n;
            if count.status != "ok" {
                stats.errors += n;
            }
        }
    }
    Json(StatsAnswer {
        since_ms,
        servers: servers.into_values().collect(),
    })
    .into_response()
}

async fn search(
    State(state): State<ApiState>,
    caller: Option<Extension<Caller>>,
    Json(request): Json<SearchRequest>,
) -> Response {
    let reach = crate::api::reach(caller);
    let limit = request.limit.unwrap_or(SEARCH_DEFAULT).clamp(1, SEARCH_MAX);
    let snapshot = state.gateway.snapshot();
    let query = ToolQuery {
        text: &request.query,
        server: request.server.as_deref(),
        limit,
        rank_by: RankBy::Meaning,
    };
    // The operator sees every served tool, as the API key does on `/mcp`; a viewer what their
    // reach admits.
    let found = state
        .gateway
        .search(&snapshot, query, |tool| {
            reach.admits(&tool.id.server, tool.permission)
        })
        .await;
    let ranking = if found.hybrid {
        Ranking::Hybrid
    } else {
        Ranking::Bm25
    };
    let matches = found.matches;
    let tools = matches
        .tools
        .iter()
        .map(|&Match { tool, score, .. }| SearchHit {
            id: tool.id.to_string(),
            name: tool.display_name.clone(),
            server: tool.id.server.to_string(),
            score: (f64::from(score) * 1000.0).round() / 1000.0,
            description: tool
                .raw
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            deferred: tool.deferred,
        })
        .collect();
    Json(SearchAnswer {
        tools,
        total: matches.total,
        ranking,
    })
    .into_response()
}

async fn config(State(state): State<ApiState>) -> Json<ConfigAnswer> {
    let config = state.config.borrow().clone();
    let diagnostics = state
        .gateway
        .diagnostics()
        .iter()
        .map(|d| DiagnosticEntry {
            server: d.server.clone(),
            message: d.message.clone(),
        })
        .collect();
    let model = state.gateway.semantic_model();
    let search = SearchStatus {
        ranking: if model.is_some() && state.gateway.snapshot().has_vectors() {
            Ranking::Hybrid
        } else {
            Ranking::Bm25
        },
        model: model.map(str::to_owned),
        instructions: model
            .and(crate::semantic::instructions())
            .map(str::to_owned),
        without_model: state.without_model.clone(),
        embedding_failed: state
            .semantic
            .as_ref()
            .and_then(|semantic| semantic.embedding_failure()),
    };
    Json(ConfigAnswer {
        config: crate::config_view::config_view(&config),
        warnings: config.warnings.clone(),
        diagnostics,
        refused_edit: state.gateway.refused_edit(),
        store_reachable: state
            .store_reachable
            .load(std::sync::atomic::Ordering::Relaxed),
        search,
    })
}

async fn stderr(State(state): State<ApiState>, Path(name): Path<String>) -> Response {
    let config = state.config.borrow().clone();
    if !config.servers.iter().any(|s| s.name == name) {
        return error(StatusCode::NOT_FOUND, format!("no server named {name:?}"));
    }
    Json(StderrAnswer {
        lines: mcplex_upstream::stderr_tail(&name),
        server: name,
    })
    .into_response()
}
