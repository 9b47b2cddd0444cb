//! `mcplex serve`: HTTP (default) or stdio, until SIGINT/SIGTERM or the stdio client leaves.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};
use mcplex_api::WithoutModel;
use mcplex_config::{Config, Overrides, RoutingMode};
use mcplex_dispatch::GatewaySetup;
use mcplex_runtime::reload::Reloader;
use mcplex_runtime::{AddedServers, Trust};
use mcplex_state::Store;
use mcplex_surface::{
    CodeSurface, DirectSurface, Door, Guard, ListenerLimits, Reach, RetrieveSurface, Routes,
    SurfaceOptions, router, serve_http, serve_stdio,
};
use mcplex_upstream::BuiltinConnector;
use tokio_util::sync::CancellationToken;

use super::start::{Core, report_startup_wait, settle, settle_limit};
use crate::api::ApiState;
use crate::auth::Access;
use crate::cli::ServeArgs;
use crate::operator_audit::Actions;

pub async fn run(args: ServeArgs) -> Result<ExitCode> {
    if std::process::id() == 1 {
        // A container's first process inherits every orphan: a stdio server's grandchildren,
        // a sandboxed server whose helper was killed. The gateway waits only for its own
        // children, so the rest would stay zombies, one or more per server restart.
        tracing::warn!(
            "running as process 1 (a container without an init): orphaned processes of stdio servers will not be reaped; run under an init (`docker run --init`, tini; the image in deploy/ has one)"
        );
    }
    let setup = if args.demo {
        demo_setup(&args)?
    } else {
        file_setup(&args)?
    };
    let config = Arc::new(setup.config);
    // Bind first: a port in use is reported before any upstream starts or anything is written.
    let listener = if args.stdio {
        None
    } else {
        Some(bind(&config.listen).await?)
    };
    // The audit log names this replica: its host, and its port or stdio.
    let replica = match &listener {
        None => format!("{}:stdio", mcplex_runtime::follow::host_name()),
        Some(listener) => {
            let port = listener
                .local_addr()
                .context("listener has no address")?
                .port();
            format!("{}:{port}", mcplex_runtime::follow::host_name())
        }
    };
    if listener.is_none() && config.audit.sink == Some(mcplex_config::AuditSink::Stdout) {
        anyhow::bail!(
            "audit_sink \"stdout\" cannot be used with --stdio: stdout carries the MCP messages; give a file path"
        );
    }
    // A key the operator gives is read and checked before anything starts (and noted for the
    // sandbox to hide); stdio serving has no API.
    let given_key = match (&listener, &args.api_key_file) {
        (Some(_), Some(file)) => Some(crate::given_api_key::from_file(file)?),
        (None, Some(_)) => {
            tracing::warn!("--api-key-file is not read with --stdio: it serves no management API");
            None
        }
        (_, None) => None,
    };
    let bound = match &listener {
        Some(listener) => Some(listener.local_addr().context("listener has no address")?),
        None => None,
    };
    let started = start(&config, setup.builtin, replica, bound)?;
    // Kept alive for as long as the gateway serves.
    let _reloader = setup
        .source
        .and_then(|(path, overrides)| watch_config(path, overrides, &started));
    match listener {
        None => serve_on_stdio(&config, started).await,
        Some(listener) => serve_on_http(&config, started, listener, given_key).await,
    }
}

/// What the gateway serves from: its config, the built-in fleet (`--demo`), and the file to
/// follow with the flags and variables applied on top of it (none for the demo).
struct Setup {
    config: Config,
    builtin: Option<BuiltinConnector>,
    source: Option<(PathBuf, Overrides)>,
}

/// The config file, with the flags and variables on top.
fn file_setup(args: &ServeArgs) -> Result<Setup> {
    let overrides = Overrides {
        listen: args.listen.clone(),
        call_timeout: args.call_timeout.clone(),
        startup_wait: args.startup_wait.clone(),
        routing_mode: args.routing_mode.clone(),
        direct_tool_response_mode: args.direct_tool_response_mode.clone(),
        tool_response_mode: args.tool_response_mode.clone(),
        data_dir: args.config.data_dir.clone(),
        store: args.config.store.clone(),
    };
    let loaded = crate::load::load_with_source(&args.config, overrides)?;
    Ok(Setup {
        config: loaded.config,
        builtin: None,
        source: loaded.path.map(|path| (path, loaded.overrides)),
    })
}

/// The built-in demo fleet, with its approvals kept apart from the user's own installation.
fn demo_setup(args: &ServeArgs) -> Result<Setup> {
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
    Ok(Setup {
        config,
        builtin: Some(crate::demo::connector()),
        source: None,
    })
}

/// A started gateway and the store it follows.
struct Started {
    core: Core,
    store: Arc<Store>,
    /// The servers added from the dashboard, merged into every config the gateway runs.
    added: AddedServers,
    /// Why searches are BM25F alone, when no model loaded.
    without_model: Option<WithoutModel>,
    /// Where the operators' actions go in the audit log (`None`: it is off).
    actions: Option<crate::audit::ActionLog>,
}

/// Opens the store (a store that cannot be opened stops the start before anything runs), loads
/// the approvals and the search model, and starts the upstreams and the live catalog.
fn start(
    config: &Arc<Config>,
    builtin: Option<BuiltinConnector>,
    replica: String,
    bound: Option<SocketAddr>,
) -> Result<Started> {
    let (store, opened) = crate::load::open_store(config)?;
    let store = Arc::new(store);
    let trust = Trust::load(store.clone(), config).context("cannot load the approvals")?;
    if opened.created {
        tracing::info!(
            "new installation in {}: the {} configured server(s) start approved",
            store.location(),
            config.servers.len()
        );
    }
    // The servers added from the dashboard start with the file's, registered alike.
    let added =
        AddedServers::load(&store).context("cannot read the servers added from the dashboard")?;
    let config = &Arc::new(added.merged(config));
    let semantic = crate::semantic::load(config, store.clone());
    let without_model = semantic.as_ref().err().cloned();
    // Most clients list once, at once, and never re-list on list_changed: the first listings
    // wait up to startup_wait for servers still starting. Calls to ready servers never wait.
    let grace = config.startup_wait;
    let logins = crate::logins::serving(store.clone(), config);
    let audit = crate::audit::start(store.clone(), config.audit.clone(), replica)?;
    let actions = audit.as_ref().map(|log| log.actions.clone());
    let setup = GatewaySetup {
        builtin,
        logins: logins.clone(),
        startup_wait: grace,
        audit: audit.map(|log| log.calls),
        ..GatewaySetup::new(crate::isolation::serving(config, bound))
    };
    let core = Core::start((**config).clone(), setup, Some(trust), semantic.ok());
    if let Some(logins) = logins {
        follow_logins(&core, logins);
    }
    report_startup_wait(Arc::clone(&core.gateway), grace);
    mcplex_runtime::added::follow(
        store.clone(),
        core.store_generation.subscribe(),
        added.clone(),
        core.config.clone(),
        core.gateway.clone(),
        core.search_tools_listed,
    );
    Ok(Started {
        core,
        store,
        added,
        without_model,
        actions,
    })
}

/// When the store's generation moves (a login or logout in the CLI, another replica's refresh),
/// the logins read the store again and servers waiting for a login try again.
fn follow_logins(core: &Core, logins: Arc<mcplex_upstream::Logins>) {
    let mut generations = core.store_generation.subscribe();
    tokio::spawn(async move {
        while generations.changed().await.is_ok() {
            logins.store_changed();
        }
    });
}

/// Follows the config file; a watch that cannot start leaves the gateway serving without it.
fn watch_config(path: PathBuf, overrides: Overrides, started: &Started) -> Option<Reloader> {
    let watched = path.display().to_string();
    let core = &started.core;
    let configs = core.config.clone();
    let added = started.added.clone();
    let listed = core.search_tools_listed;
    match mcplex_runtime::reload::watch(
        path,
        overrides,
        configs,
        core.gateway.clone(),
        added,
        listed,
    ) {
        Ok(reloader) => Some(reloader),
        Err(e) => {
            tracing::warn!("config hot reload is off: cannot watch {watched}: {e}");
            None
        }
    }
}

/// Serves the one client on stdin/stdout until it leaves.
async fn serve_on_stdio(config: &Config, started: Started) -> Result<ExitCode> {
    let Started { core, .. } = started;
    let options = SurfaceOptions::from_config(config, core.search_tools_listed);
    let gateway = core.gateway.clone();
    let result = match config.routing_mode {
        RoutingMode::Direct => {
            serve_stdio(DirectSurface::new(gateway, options, Reach::stdio())).await
        }
        RoutingMode::RetrieveTools => {
            serve_stdio(RetrieveSurface::new(gateway, &options, Reach::stdio())).await
        }
        RoutingMode::CodeExecution => {
            serve_stdio(CodeSurface::new(gateway, &options, Reach::stdio())).await
        }
    };
    core.shutdown().await;
    result.map_err(anyhow::Error::msg)?;
    Ok(ExitCode::SUCCESS)
}

/// The guard in front of every route: the edge checks, the MCP routes' admission, and the
/// families of routes beside them, each behind its own guard (`actions` is where the `/api`
/// guard writes a change it refused a signed-in viewer).
fn http_guard(
    config: &Config,
    require_auth: bool,
    access: &Arc<Access>,
    actions: Option<Actions>,
) -> Result<Guard> {
    Ok(Guard {
        trusted_hosts: Arc::new(config.http.trusted_hosts.clone()),
        require_auth,
        max_body_bytes: config.http.max_body_bytes,
        auth: access.clone(),
        oauth: resource_server(config)?,
        families: Arc::new(vec![
            crate::api_guard::family(access.clone(), actions),
            crate::ui::family(),
        ]),
    })
}

/// Serves HTTP on `listener` until SIGINT/SIGTERM, registered in the store and following it.
async fn serve_on_http(
    config: &Config,
    started: Started,
    listener: tokio::net::TcpListener,
    given_key: Option<String>,
) -> Result<ExitCode> {
    let Started {
        core,
        store,
        without_model,
        actions,
        added: _,
    } = started;
    let shutdown = CancellationToken::new();
    // Listening for signals before anything can see the gateway: a SIGTERM right after start
    // still shuts down cleanly (upstreams terminated, the registration removed).
    cancel_on_signal(shutdown.clone());
    let address = listener.local_addr().context("listener has no address")?;
    let require_auth = require_auth(config, address);
    let api_key_place = api_key_place(store.location(), given_key.is_some());
    let admin = admin_key(&store, given_key.as_deref())?;
    if matches!(store.location(), mcplex_state::Location::Postgres(_))
        && std::env::var(mcplex_state::TOKEN_KEY_ENV).is_err()
    {
        tracing::warn!(
            "{} is not set: dashboard sessions are signed with secrets the database holds, so a reader of it could make one; give every replica the same key",
            mcplex_state::TOKEN_KEY_ENV
        );
    }
    let access = Arc::new(Access::load(
        store.clone(),
        admin.verifier,
        config,
        core.gateway.limits().clone(),
    )?);
    // Registered under the address it really bound, so the CLI finds it whatever set it.
    let store_reachable = Arc::new(AtomicBool::new(true));
    let follower = mcplex_runtime::follow::start(
        store,
        access.clone(),
        core.store_generation.clone(),
        address.to_string(),
        store_reachable.clone(),
    )
    .context("cannot register the gateway in its store")?;
    // Limits per caller count every replica's calls: the counts go through the store.
    let usage = mcplex_runtime::usage::share(
        access.store().clone(),
        follower.instance().to_owned(),
        core.gateway.limits().clone(),
        shutdown.clone(),
    );
    let actions = actions.map(|log| Actions::new(log, &address.to_string()));
    let guard = http_guard(config, require_auth, &access, actions.clone())?;
    let login_link = dashboard_link(address, &access);
    let api = ApiState {
        gateway: core.gateway.clone(),
        access,
        trust: core.trust.clone(),
        config: core.config.subscribe(),
        without_model,
        semantic: core.semantic.clone(),
        address: address.to_string(),
        instance: follower.instance().to_owned(),
        store_reachable: store_reachable.clone(),
        actions,
    };
    let app = app(config, &core, api, store_reachable, shutdown.clone(), guard)?;
    announce(config, address, &api_key_place, login_link.as_deref());
    if let Some(key) = &admin.created {
        // A new PostgreSQL store keeps only the key's hash: this is the one time it is shown
        // (stdout only, never the log).
        let _ = crate::output::outln!(
            "mcplex: the API key of this new store, shown once (the store keeps only its hash; `mcplex apikey rotate` makes a new one): {key}"
        );
    }
    if std::io::stderr().is_terminal() {
        let (gateway, limit) = (Arc::clone(&core.gateway), settle_limit(config));
        tokio::spawn(async move { settle(&gateway, limit).await });
    }
    let limits = ListenerLimits::from_config(config);
    let served = serve_http(listener, app, limits, shutdown).await;
    usage.abort();
    follower.stop().await;
    tracing::info!("shutting down: terminating upstream servers");
    core.shutdown().await;
    served.context("HTTP server failed")?;
    Ok(ExitCode::SUCCESS)
}

/// OAuth access tokens accepted beside agent tokens, when `auth` is configured.
fn resource_server(config: &Config) -> Result<Option<Arc<mcplex_surface::ResourceServer>>> {
    let Some(auth) = &config.auth else {
        return Ok(None);
    };
    let tokens = crate::oauth::OAuthTokens::new(auth, &config.profiles)?;
    tracing::info!(
        "accepting OAuth access tokens of {} for audience {}",
        auth.issuer,
        auth.audience
    );
    Ok(Some(Arc::new(tokens.serve(auth))))
}

/// Whether requests to a listener on `address` need a key or token: as configured, else off
/// loopback or when `auth` is configured (a gateway that names an issuer means its clients to
/// log in there).
pub(crate) fn auth_required(config: &Config, address: SocketAddr) -> bool {
    config
        .http
        .require_auth
        .unwrap_or(!address.ip().is_loopback() || config.auth.is_some())
}

/// [`auth_required`], with a warning when anyone who can reach a listener off loopback could
/// use it.
fn require_auth(config: &Config, address: SocketAddr) -> bool {
    let require_auth = auth_required(config, address);
    if !address.ip().is_loopback() && !require_auth {
        tracing::warn!(
            "listening on {address} with require_auth: false: anyone who can reach it can use every tool"
        );
    }
    require_auth
}

/// The MCP routes, the management API (`api`) and the dashboard, behind `guard`.
fn app(
    config: &Config,
    core: &Core,
    api: ApiState,
    store_reachable: Arc<AtomicBool>,
    shutdown: CancellationToken,
    guard: Guard,
) -> Result<Door> {
    let sign_in = match &config.auth {
        Some(auth) => crate::ui::SignIn::new(auth, &config.profiles, api.access.clone())?,
        None => None,
    };
    let logins = crate::upstream_login::callback_router(api.access.store().clone()).merge(
        crate::connect::router(api.access.store().clone(), api.config.clone()),
    );
    let dashboard = crate::ui::router(api.access.clone(), sign_in, logins);
    let api = crate::api::router(api, config.http.max_body_bytes);
    let mcp = router(Routes {
        gateway: core.gateway.clone(),
        options: SurfaceOptions::from_config(config, core.search_tools_listed),
        routing_mode: config.routing_mode,
        profiles: config.profiles.clone(),
        max_body_bytes: config.http.max_body_bytes,
        max_sessions: config.listener.max_sessions,
        max_sessions_per_caller: config.listener.max_sessions_per_caller,
        session_idle_timeout: config.listener.session_idle_timeout,
        shutdown,
        store_reachable,
        auth: guard.auth.clone(),
    });
    Ok(Door::new(
        mcp.router.merge(api).merge(dashboard),
        mcp.lanes,
        guard,
    ))
}

/// The URL goes to stdout so scripts can read it; everything else is logged on stderr.
fn announce(config: &Config, address: SocketAddr, api_key_place: &str, login_link: Option<&str>) {
    // A reader that closed stdout (`mcplex serve | head -1`) leaves the gateway serving.
    let _ = crate::output::outln!(
        "mcplex: serving {} server(s) at http://{address}/mcp ({} surface; direct at /mcp/all, retrieve at /mcp/call, code at /mcp/code)",
        config.servers.len(),
        config.routing_mode.as_str()
    );
    tracing::info!(
        "listening on http://{address}/mcp; management API at /api/v1 and dashboard at /ui/ (key in {api_key_place})"
    );
    // The link is a credential for one login within minutes: stdout only, never the log.
    if let Some(link) = login_link {
        let _ = crate::output::outln!(
            "mcplex: dashboard at http://{address}/ui/; one-time login link (valid {} minutes): http://{address}{link}",
            crate::ui::LINK_LIFETIME.as_secs() / 60
        );
    }
}

/// A one-time dashboard login link, when the listener is on loopback (whoever reads this
/// process's output is on this machine); elsewhere the API key is pasted on the page.
fn dashboard_link(address: SocketAddr, access: &Access) -> Option<String> {
    if !address.ip().is_loopback() {
        return None;
    }
    match crate::ui::login_link_path(access) {
        Ok(path) => Some(path),
        Err(why) => {
            tracing::warn!("no dashboard login link: {why}");
            None
        }
    }
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

/// The store's admin key: the one the operator gives in `--api-key-file`, which the store takes
/// (in place of another, as a rotation does), or the store's own, made at its first start.
fn admin_key(store: &Store, given: Option<&str>) -> Result<mcplex_state::AdminKey> {
    use mcplex_state::GivenKey;
    let Some(given) = given else {
        return Ok(store.admin_key()?);
    };
    let (key, taken) = store.give_admin_key(given)?;
    match taken {
        GivenKey::First => {
            tracing::info!("the store's admin API key is the one the API key file gives");
        }
        GivenKey::Same => {}
        GivenKey::Replaced => tracing::warn!(
            "the store held another admin API key: it now takes the one the API key file gives, and the old key and every dashboard session opened with it stop working on every gateway of the store (give every replica the same file)"
        ),
    }
    Ok(key)
}

/// Where an operator finds the admin API key.
fn api_key_place(location: &mcplex_state::Location, given: bool) -> String {
    match location {
        _ if given => "the API key file, as given".to_owned(),
        mcplex_state::Location::Directory(dir) => {
            dir.join(mcplex_state::API_KEY_FILE).display().to_string()
        }
        mcplex_state::Location::Postgres(_) => format!(
            "the output of the gateway that created the store {location} (it keeps only its hash); `mcplex apikey rotate` makes a new one"
        ),
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
