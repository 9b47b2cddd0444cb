//! `GET /api/v1/trends`: the audit log over time for the dashboard's charts (calls, failures,
//! median, 95th percentile and longest latency; all calls, one server's or one tool's), every
//! replica's, in about 48 buckets with the empty ones filled in, so a chart needs no arithmetic
//! of its own.

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use mcplex_api::{TrendPoint, TrendsAnswer, TrendsQuery, paths};
use mcplex_state::TrendScope;

use crate::api::{ApiState, error, off_runtime};

/// About this many buckets, whatever the span.
const BUCKETS: i64 = 48;

pub fn router(state: ApiState) -> Router {
    Router::new()
        .route(paths::TRENDS, get(trends))
        .with_state(state)
}

async fn trends(State(state): State<ApiState>, Query(query): Query<TrendsQuery>) -> Response {
    let hours = i64::from(query.hours.unwrap_or(24).clamp(1, 168));
    let span_ms = hours * 3_600_000;
    // Whole minutes, at least five.
    let bucket_ms = (span_ms / BUCKETS).max(300_000) / 60_000 * 60_000;
    let now_ms = mcplex_state::now_unix().saturating_mul(1000);
    let last = now_ms / bucket_ms * bucket_ms;
    let since_ms = last - (span_ms / bucket_ms - 1) * bucket_ms;
    let rows = match off_runtime(state.access.store(), move |store| {
        let scope = match (&query.tool, &query.server) {
            (Some(tool), _) => TrendScope::Tool(tool),
            (None, Some(server)) => TrendScope::Server(server),
            (None, None) => TrendScope::All,
        };
        store.activity_trend(since_ms, bucket_ms, scope)
    })
    .await
    {
        Ok(Ok(rows)) => rows,
        Ok(Err(e)) => return error(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
        Err(failed) => return failed,
    };
    let count = |n: i64| u64::try_from(n).unwrap_or(0);
    let micros = |us: i64| u64::try_from(us).unwrap_or(0);
    let buckets = (0..)
        .map(|i| since_ms + i * bucket_ms)
        .take_while(|start| *start <= last)
        .map(
            |start_ms| match rows.iter().find(|r| r.start_ms == start_ms) {
                Some(row) => TrendPoint {
                    start_ms,
                    calls: count(row.calls),
                    errors: count(row.errors),
                    p50_us: micros(row.p50_duration_us),
                    p95_us: micros(row.p95_duration_us),
                    max_us: micros(row.max_duration_us),
                },
                None => TrendPoint {
                    start_ms,
                    calls: 0,
                    errors: 0,
                    p50_us: 0,
                    p95_us: 0,
                    max_us: 0,
                },
            },
        )
        .collect();
    Json(TrendsAnswer {
        since_ms,
        bucket_ms,
        buckets,
    })
    .into_response()
}
