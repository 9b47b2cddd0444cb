//! The fixture over stateless streamable HTTP: each POST is answered with one JSON body.
//! Notifications the fixture would send are dropped (there is no stream to carry them). Or a
//! server that refuses everyone and echoes what it was sent (a careless upstream's 401 page), or
//! one whose error page never ends.

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::Fixture;

/// Serves `fixture` at `/mcp` on `listener` until the process ends.
pub async fn serve_http(fixture: Arc<Fixture>, listener: TcpListener) -> std::io::Result<()> {
    let app = Router::new()
        .route("/mcp", post(handle))
        .with_state(fixture);
    axum::serve(listener, app).await
}

async fn handle(
    State(fixture): State<Arc<Fixture>>,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let Ok(mut message) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    // For `trace_context` (`--trace-echo`): the header as the tool sees it.
    if let Some(traceparent) = headers.get("traceparent").and_then(|v| v.to_str().ok())
        && let Some(params) = message.get_mut("params").and_then(Value::as_object_mut)
        && let Some(meta) = params
            .entry("_meta")
            .or_insert_with(|| serde_json::json!({}))
            .as_object_mut()
    {
        meta.insert(
            crate::tools::HTTP_TRACEPARENT.to_owned(),
            Value::from(traceparent),
        );
    }
    if message.get("id").is_none_or(Value::is_null) {
        fixture.notification(&message);
        return StatusCode::ACCEPTED.into_response();
    }
    let (out, _dropped) = mpsc::unbounded_channel();
    let response = fixture.request(message, &out).await;
    axum::Json(response).into_response()
}

/// Answers every request with 401 and a body that echoes the request line and every header, as
/// careless servers do, so that tests can check the gateway never repeats what it is echoed.
pub async fn serve_denying(listener: TcpListener) -> std::io::Result<()> {
    let app = Router::new().fallback(deny_and_echo);
    axum::serve(listener, app).await
}

async fn deny_and_echo(request: axum::extract::Request) -> Response {
    let mut body = format!("unauthorized: {} {}", request.method(), request.uri());
    for (name, value) in request.headers() {
        body.push_str(&format!(
            "; {name}={}",
            String::from_utf8_lossy(value.as_bytes())
        ));
    }
    (StatusCode::UNAUTHORIZED, body).into_response()
}

/// Answers every request with 500 and a body that never ends (a chunk every few milliseconds), so
/// that tests can check the gateway reads only the start of an error page.
pub async fn serve_endless_error(listener: TcpListener) -> std::io::Result<()> {
    let app = Router::new().fallback(endless_error);
    axum::serve(listener, app).await
}

async fn endless_error() -> Response {
    let chunks = futures::stream::unfold(0u64, |sent| async move {
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        let chunk = format!("internal error, line {sent}: {}\n", "x".repeat(1000));
        Some((Ok::<_, std::convert::Infallible>(chunk), sent + 1))
    });
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        axum::body::Body::from_stream(chunks),
    )
        .into_response()
}
