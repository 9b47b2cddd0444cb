//! The HTTP routes: `/mcp` (the configured routing mode), `/mcp/all` (direct), `/mcp/call`
//! (retrieve), `/mcp/code` (code execution) and `/mcp/p/<profile>` (the routing mode, narrowed
//! to the profile's servers);
//! `/healthz` and `/readyz`. Each MCP route is a [`crate::route::Route`] around its surface,
//! with sessions counted gateway-wide; the listener itself is `listener.rs`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{any, get};
use axum::{Json, Router};
use mcplex_dispatch::Gateway;
use mcplex_protocol::ServerHealth;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use mcplex_config::{Profile, RoutingMode};

use crate::access::ReadyDetail;
use crate::door::Lanes;
use crate::route::{Route, Surface};
use crate::sessions::SessionBook;
use crate::{CodeSurface, DirectSurface, Reach, RetrieveSurface, SurfaceOptions};

/// What the routes are built from.
pub struct Routes {
    pub gateway: Arc<Gateway>,
    pub options: SurfaceOptions,
    pub routing_mode: RoutingMode,
    /// Each is served at `/mcp/p/<name>` in `routing_mode`.
    pub profiles: Vec<Profile>,
    /// MCP request bodies over this are cut with 413 while streaming.
    pub max_body_bytes: usize,
    /// Open sessions over all routes; past it `initialize` gets 503.
    pub max_sessions: usize,
    /// Open sessions of one credential; past it its `initialize` gets 429.
    pub max_sessions_per_caller: usize,
    /// A session with no request or stream open for this long is ended.
    pub session_idle_timeout: Duration,
    /// Ends every session when cancelled.
    pub shutdown: CancellationToken,
    /// Whether the store answers (kept by the gateway's follower); `/readyz` is 503 without it.
    pub store_reachable: Arc<AtomicBool>,
    /// Which callers are still in force: a revoked token's sessions end.
    pub auth: Arc<dyn crate::Authenticator>,
}

/// The gateway's MCP routes, `/healthz`, `/readyz` and `/metrics`, and the MCP routes' POST
/// lanes. The caller adds its own routes (each family under a prefix its [`crate::Family`]
/// guards) and serves it all through a [`crate::Door`], which puts the guard in front of
/// everything.
pub fn router(routes: Routes) -> McpRoutes {
    let Routes {
        gateway,
        options,
        routing_mode,
        profiles,
        max_body_bytes,
        max_sessions,
        max_sessions_per_caller,
        session_idle_timeout,
        shutdown,
        store_reachable,
        auth,
    } = routes;
    let limits = Limits {
        shutdown,
        max_body_bytes,
        book: SessionBook::new(
            max_sessions,
            max_sessions_per_caller,
            session_idle_timeout,
            Some(auth),
        ),
    };
    let direct = limits.service(DirectSurface::new(
        gateway.clone(),
        options.clone(),
        Reach::http(None),
    ));
    let retrieve = limits.service(RetrieveSurface::new(
        gateway.clone(),
        &options,
        Reach::http(None),
    ));
    let code = limits.service(CodeSurface::new(
        gateway.clone(),
        &options,
        Reach::http(None),
    ));
    let mut mcp = McpRoutes::default();
    match routing_mode {
        RoutingMode::Direct => mcp.serve("/mcp", direct.clone()),
        RoutingMode::RetrieveTools => mcp.serve("/mcp", retrieve.clone()),
        RoutingMode::CodeExecution => mcp.serve("/mcp", code.clone()),
    }
    for profile in profiles {
        let reach = Reach::http(Some(profile.servers));
        let path = format!("/mcp/p/{}", profile.name);
        match routing_mode {
            RoutingMode::Direct => mcp.serve(
                &path,
                limits.service(DirectSurface::new(gateway.clone(), options.clone(), reach)),
            ),
            RoutingMode::RetrieveTools => mcp.serve(
                &path,
                limits.service(RetrieveSurface::new(gateway.clone(), &options, reach)),
            ),
            RoutingMode::CodeExecution => mcp.serve(
                &path,
                limits.service(CodeSurface::new(gateway.clone(), &options, reach)),
            ),
        }
    }
    mcp.serve("/mcp/all", direct);
    mcp.serve("/mcp/call", retrieve);
    mcp.serve("/mcp/code", code);
    // A profile name that is not configured must not fall through to `/mcp` and serve more
    // than the caller asked for.
    let unknown_profile = || async {
        (
            StatusCode::NOT_FOUND,
            Json(json!({"error": "no such profile"})),
        )
    };
    mcp.router = mcp
        .router
        .route("/mcp/p/{*rest}", any(unknown_profile))
        .route("/mcp/p", any(unknown_profile))
        .route("/healthz", get(|| async { "ok" }))
        .route("/metrics", get(metrics))
        .route(
            "/readyz",
            get(readyz).with_state(Readiness {
                gateway,
                store_reachable,
            }),
        );
    mcp
}

/// The MCP routes: a router, and the lanes their POSTs take past it.
#[derive(Default)]
pub struct McpRoutes {
    pub router: Router,
    pub lanes: Lanes,
}

impl McpRoutes {
    /// Serves `route` at `path`: every method through the router, POST also by its lane.
    fn serve<S: Surface>(&mut self, path: &str, route: Route<S>) {
        self.lanes.add(path, route.clone());
        self.router = std::mem::take(&mut self.router).nest_service(path, route);
    }
}

struct Limits {
    shutdown: CancellationToken,
    max_body_bytes: usize,
    book: Arc<SessionBook>,
}

impl Limits {
    /// One MCP route around one server instance.
    fn service<S: Surface>(&self, surface: S) -> Route<S> {
        Route::new(
            surface,
            self.book.clone(),
            self.max_body_bytes,
            self.shutdown.clone(),
        )
    }
}

/// The Prometheus text exposition.
async fn metrics() -> impl IntoResponse {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        mcplex_telemetry::render(),
    )
}

/// What `/readyz` looks at: the upstreams (through the snapshot) and the store.
#[derive(Clone)]
struct Readiness {
    gateway: Arc<Gateway>,
    store_reachable: Arc<AtomicBool>,
}

/// 200 when ready (below); otherwise 503. Where the guard allows the detail
/// (no authentication required, or the admin API key presented) the body lists each server's
/// status, so an operator sees which upstreams are not ready and why, and, while the startup
/// wait holds listings, for which servers and how much longer; otherwise it says only
/// `{"ready": …}`.
///
/// Ready means this gateway can take traffic: its store answers and the startup wait is over (its
/// first listings are as complete as they will be). An upstream that is down is not counted: it
/// is most often down for every replica alike, and a load balancer that took them all out over
/// it would stop every other server's tools too. `?all` also asks every enabled server to be ready (for
/// deploy scripts and tests that wait for a complete gateway). Each server's state is in the body.
async fn readyz(State(readiness): State<Readiness>, request: Request) -> impl IntoResponse {
    let Readiness {
        gateway,
        store_reachable,
    } = readiness;
    let detail = request
        .extensions()
        .get::<ReadyDetail>()
        .is_none_or(|detail| detail.0);
    let every_server = request.uri().query().is_some_and(asks_for_every_server);
    let snapshot = gateway.snapshot();
    let store = store_reachable.load(Ordering::Relaxed);
    let startup_pending = gateway.startup_pending();
    let mut ready = store && startup_pending.is_none();
    let servers: serde_json::Map<String, serde_json::Value> = snapshot
        .servers()
        .iter()
        .map(|(name, view)| {
            if every_server {
                ready &= matches!(view.status, ServerHealth::Ready | ServerHealth::Disabled);
            }
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
    if !detail {
        return (status, Json(json!({"ready": ready})));
    }
    let store = if store { "reachable" } else { "unreachable" };
    let mut body = json!({"ready": ready, "store": store, "servers": servers});
    if let Some((waiting_for, left)) = startup_pending {
        // Listings are held for these servers (startup_wait), for at most this long.
        body["startup_wait"] = json!({
            "waiting_for": waiting_for,
            "seconds_left": (left.as_secs_f64() * 10.0).ceil() / 10.0,
        });
    }
    (status, Json(body))
}

/// `all`, `all=1` or `all=true` among the query's parameters.
fn asks_for_every_server(query: &str) -> bool {
    query.split('&').any(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        key == "all" && matches!(value, "" | "1" | "true")
    })
}
