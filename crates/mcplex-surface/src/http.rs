//! The HTTP routes: `/mcp` (the configured routing mode), `/mcp/all` (direct) and `/mcp/call`
//! (retrieve); every direct route shares one server instance, as does every retrieve route.
//! `/healthz` and `/readyz`.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::serve::ListenerExt;
use axum::{Json, Router};
use mcplex_catalog::ServerStatus;
use mcplex_dispatch::Gateway;
use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use mcplex_config::RoutingMode;

use crate::{DirectSurface, RetrieveSurface, SurfaceOptions};

/// The gateway's MCP routes. `shutdown` ends every session when cancelled.
pub fn router(
    gateway: Arc<Gateway>,
    options: SurfaceOptions,
    routing_mode: RoutingMode,
    shutdown: CancellationToken,
) -> Router {
    let direct = service(
        DirectSurface::new(gateway.clone(), options.clone()),
        shutdown.clone(),
    );
    let retrieve = service(RetrieveSurface::new(gateway.clone(), &options), shutdown);
    let main = match routing_mode {
        RoutingMode::Direct => Router::new().nest_service("/mcp", direct.clone()),
        RoutingMode::RetrieveTools => Router::new().nest_service("/mcp", retrieve.clone()),
    };
    main.nest_service("/mcp/all", direct)
        .nest_service("/mcp/call", retrieve)
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz).with_state(gateway))
}

/// One rmcp streamable HTTP service around one server instance (cloned per session).
fn service<S: rmcp::ServerHandler + Clone>(
    surface: S,
    shutdown: CancellationToken,
) -> StreamableHttpService<S, LocalSessionManager> {
    let mut config = StreamableHttpServerConfig::default();
    config.cancellation_token = shutdown;
    // Session-era clients get sessions, the GET stream and 404 for unknown sessions; 2026-07-28
    // requests are served statelessly by rmcp whatever this says.
    config.legacy_session_mode = true;
    StreamableHttpService::new(
        move || Ok(surface.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

/// Serves `app` on `listener` until `shutdown` is cancelled. Sockets get TCP_NODELAY: SSE answers
/// are written in several small pieces, and Nagle's algorithm against the client's delayed ACK
/// would hold each answer back ~40 ms.
pub async fn serve_http(
    listener: tokio::net::TcpListener,
    app: Router,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY: {e}");
        }
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
}

/// 200 when every enabled server is ready; otherwise 503. Either way the body lists each server's
/// status, so an operator sees which upstreams are not ready and why.
async fn readyz(State(gateway): State<Arc<Gateway>>) -> impl IntoResponse {
    let snapshot = gateway.snapshot();
    let mut ready = true;
    let servers: serde_json::Map<String, serde_json::Value> = snapshot
        .servers()
        .iter()
        .map(|(name, view)| {
            ready &= matches!(view.status, ServerStatus::Ready | ServerStatus::Disabled);
            (
                name.clone(),
                json!({"status": view.status.to_string(), "tools": view.tool_count}),
            )
        })
        .collect();
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(json!({"ready": ready, "servers": servers})))
}
