//! The HTTP routes: `/mcp` (the configured routing mode) and `/mcp/all` (direct), both served by
//! one rmcp streamable HTTP service so they share one server instance.

use std::sync::Arc;

use axum::Router;
use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use tokio_util::sync::CancellationToken;

use crate::DirectSurface;

/// The gateway's MCP routes. `shutdown` ends every session when cancelled.
pub fn router(surface: DirectSurface, shutdown: CancellationToken) -> Router {
    let mut config = StreamableHttpServerConfig::default();
    config.cancellation_token = shutdown;
    // Session-era clients get sessions, the GET stream and 404 for unknown sessions; 2026-07-28
    // requests are served statelessly by rmcp whatever this says.
    config.legacy_session_mode = true;
    let service = StreamableHttpService::new(
        move || Ok(surface.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    Router::new().nest_service("/mcp", service.clone()).nest_service("/mcp/all", service)
}

