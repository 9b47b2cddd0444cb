//! `mcplex serve`: HTTP (default) or stdio, until SIGINT/SIGTERM or the stdio client leaves.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use mcplex_config::Overrides;
use mcplex_config::RoutingMode;
use mcplex_surface::{
    CodeSurface, DirectSurface, Guard, ListenerLimits, Reach, RetrieveSurface, Routes,
    SurfaceOptions, router, serve_http, serve_stdio,
};

use crate::api::ApiState;
use crate::auth::Access;
use crate::trust::Trust;
use tokio_util::sync::CancellationToken;

use super::start::{Core, settle, settle_limit};
use crate::cli::ServeArgs;

pub async fn run(args: ServeArgs) -> Result<ExitCode> {
    let overrides = Overrides {
        listen: args.listen.clone(),
        call_timeout: None,
        routing_mode: args.routing_mode.clone(),
        direct_tool_response_mode: args.direct_tool_response_mode.clone(),
        tool_response_mode: args.tool_response_mode.clone(),
        data_dir: args.config.data_dir.clone(),
        store: args.config.store.clone(),
    };
    let (config, builtin, source) = if args.demo {
        let mut config = crate::demo::config(args.listen.clone());
        if let Some(mode) = &args.direct_tool_response_mode {
            // The demo has no file; the flag is validated the same way a file value is.
            let probe = Overrides {
                direct_tool_response_mode: Some(mode.clone()),
                ..Overrides::default()
            };
            config.direct_tool_response_mode =
                mcplex_config::parse_config("{}", "--demo", &probe)?.direct_tool_response_mode;
        }
        // The demo keeps its approvals apart from the user's own installation.
        config.data_dir = Some(
            args.config
                .data_dir
                .clone()
                .unwrap_or_else(|| mcplex_state::default_data_dir().join("demo")),
        );
        config.store = args
            .config
            .store
            .as_deref()
            .map(mcplex_config::StoreUrl::parse)
            .transpose()
            .map_err(|why| anyhow::anyhow!("--store {why}"))?;
        (config, Some(crate::demo::connector()), None)
    } else {
        let loaded = crate::load::load_with_source(&args.config, overrides)?;
        let source = loaded.path.map(|path| (path, loaded.overrides));
        (loaded.config, None, source)
    };
    let config = Arc::new(config);
    let listen = config.listen.clone();
    // Bind first: a port in use is reported before any upstream starts or anything is written.
    let listener = if args.stdio {
        None
    } else {
        Some(bind(&listen).await?)
    };
    let limit = settle_limit(&config);
    let servers = config.servers.len();
    // A spawning stdio client lists once, at once: give slow servers a moment. Over HTTP a slow
    // server never delays the others; clients learn of late arrivals through list_changed.
    let grace = if args.stdio {
        mcplex_dispatch::STARTUP_GRACE
    } else {
        std::time::Duration::ZERO
    };
    // The store first: a store that cannot be opened stops the start before anything runs.
    let (store, opened) = crate::load::open_store(&config)?;
    let store = Arc::new(store);
    let trust = Trust::load(store.clone(), &config)?;
    if opened.created {
        tracing::info!(
            "new installation in {}: the {servers} configured server(s) start approved",
            store.location()
        );
    }
    let semantic = crate::semantic::load(&config, store.clone())?;
    let core = Core::start((*config).clone(), builtin, grace, Some(trust));
    if let Some(semantic) = semantic {
        core.gateway.search_semantically(semantic);
    }
    let options = SurfaceOptions::from_config(&config);
    // Kept alive for as long as the gateway serves.
    let _reloader = match source {
        Some((path, overrides)) => {
            match crate::reload::watch(path, overrides, core.config.clone(), core.gateway.clone()) {
                Ok(reloader) => Some(reloader),
                Err(e) => {
                    tracing::warn!("config hot reload is off: {e:#}");
                    None
                }
            }
        }
        None => None,
    };

    if args.stdio {
        let replica = format!("{}:stdio", crate::follow::host_name());
        crate::audit::start(store.clone(), &core.gateway, config.audit, replica);
        let result = match config.routing_mode {
            RoutingMode::Direct => {
                serve_stdio(DirectSurface::new(
                    core.gateway.clone(),
                    options,
                    Reach::stdio(),
                ))
                .await
            }
            RoutingMode::RetrieveTools => {
                serve_stdio(RetrieveSurface::new(
                    core.gateway.clone(),
                    &options,
                    Reach::stdio(),
                ))
                .await
            }
            RoutingMode::CodeExecution => {
                serve_stdio(CodeSurface::new(
                    core.gateway.clone(),
                    &options,
                    Reach::stdio(),
                ))
                .await
            }
        };
        core.shutdown().await;
        result.map_err(anyhow::Error::msg)?;
        return Ok(ExitCode::SUCCESS);
    }

    let shutdown = CancellationToken::new();
    // Listening for signals before anything can see the gateway: a SIGTERM right after start
    // still shuts down cleanly (upstreams terminated, the registration removed).
    cancel_on_signal(shutdown.clone());
    let listener = listener.context("no listener was bound")?;
    let address = listener.local_addr().context("listener has no address")?;
    // No call can arrive before the listener exists; the audit log names this replica.
    let replica = format!("{}:{}", crate::follow::host_name(), address.port());
    crate::audit::start(store.clone(), &core.gateway, config.audit, replica);
    let require_auth = config
        .http
        .require_auth
        .unwrap_or(!address.ip().is_loopback());
    if !address.ip().is_loopback() && !require_auth {
        tracing::warn!(
            "listening on {address} with require_auth: false: anyone who can reach it can use every tool"
        );
    }
    let api_key = store.api_key()?;
    let store_location = store.location().clone();
    let access = Arc::new(Access::load(store.clone(), api_key, &config)?);
    // Registered under the address it really bound, so the CLI finds it whatever set it.
    let store_reachable = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let follower = crate::follow::start(
        store,
        access.clone(),
        core.store_generation.clone(),
        address.to_string(),
        store_reachable.clone(),
    )?;
    let api = crate::api::router(
        ApiState {
            gateway: core.gateway.clone(),
            access: access.clone(),
            trust: core.trust.clone(),
            config: core.config.subscribe(),
        },
        config.http.max_body_bytes,
    );
    let guard = Guard {
        trusted_hosts: Arc::new(config.http.trusted_hosts.clone()),
        require_auth,
        max_body_bytes: config.http.max_body_bytes,
        auth: access,
    };
    let app = router(Routes {
        gateway: core.gateway.clone(),
        options,
        routing_mode: config.routing_mode,
        profiles: config.profiles.clone(),
        max_body_bytes: config.http.max_body_bytes,
        max_sessions: config.listener.max_sessions,
        session_idle_timeout: config.listener.session_idle_timeout,
        shutdown: shutdown.clone(),
        store_reachable,
    })
    .merge(api)
    .layer(axum::middleware::from_fn_with_state(
        guard,
        mcplex_surface::guard,
    ));
    // The URL goes to stdout so scripts can read it; everything else is logged on stderr.
    println!(
        "mcplex: serving {servers} server(s) at http://{address}/mcp ({} surface; direct at /mcp/all, retrieve at /mcp/call)",
        config.routing_mode.as_str()
    );
    tracing::info!(
        "listening on http://{address}/mcp; management API at /api/v1 (key in {})",
        api_key_place(&store_location)
    );
    if std::io::stderr().is_terminal() {
        let gateway = Arc::clone(&core.gateway);
        tokio::spawn(async move { settle(&gateway, limit).await });
    }
    let limits = ListenerLimits::from_config(&config);
    let served = serve_http(listener, app, limits, shutdown.clone()).await;
    follower.stop().await;
    tracing::info!("shutting down: terminating upstream servers");
    core.shutdown().await;
    served.context("HTTP server failed")?;
    Ok(ExitCode::SUCCESS)
}

/// Binds the HTTP listener; a port in use says how to choose another.
async fn bind(listen: &str) -> Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(listen).await.map_err(|e| {
        let hint = if e.kind() == std::io::ErrorKind::AddrInUse {
            "; another program (another gateway?) uses it: choose another port with \
             --listen host:port, MCPLEX_LISTEN or \"listen\" in the config"
        } else {
            ""
        };
        anyhow::anyhow!("cannot listen on {listen}: {e}{hint}")
    })
}

/// Where an operator finds the admin API key.
fn api_key_place(location: &mcplex_state::Location) -> String {
    match location {
        mcplex_state::Location::Directory(dir) => {
            dir.join(mcplex_state::API_KEY_FILE).display().to_string()
        }
        mcplex_state::Location::Postgres(_) => {
            format!("the store {location}, table meta, key api_key")
        }
    }
}

/// Cancels `stop` on SIGINT or SIGTERM. The handlers are installed before this returns, so a
/// signal that arrives at once is not lost to the default action (which would kill the process
/// without shutting anything down).
fn cancel_on_signal(stop: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let (term, interrupt) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    );
    tokio::spawn(async move {
        match (term, interrupt) {
            (Ok(mut term), Ok(mut interrupt)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = interrupt.recv() => {}
                }
            }
            (Err(e), _) | (_, Err(e)) => {
                tracing::warn!("cannot listen for SIGTERM/SIGINT: {e}");
                std::future::pending::<()>().await;
            }
        }
        stop.cancel();
    });
}
