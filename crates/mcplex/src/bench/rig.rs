//! The benchmarks' test rig: in one process, a fixture upstream on stateless streamable HTTP, a
//! gateway in front of it (the production routes behind the production guard, as an anonymous
//! loopback caller), and one client (mcplex's own upstream client) with a path straight to the
//! fixture (`direct`) and one per gateway route asked for.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use mcplex_config::{Config, RoutingMode, ServerConfig, Transport};
use mcplex_fixtures::{Fixture, FixtureOptions, serve_http};
use mcplex_upstream::{UpstreamEvent, UpstreamState, Upstreams};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::commands::{Core, start_core};

pub struct Rig {
    pub client: Arc<Upstreams>,
    core: Core,
    shutdown: CancellationToken,
}

fn http_server(name: &str, url: String) -> ServerConfig {
    ServerConfig::new(
        name,
        Transport::Http {
            url,
            headers: Default::default(),
            fallback_to_sse: false,
        },
    )
}

impl Rig {
    /// Starts everything; `routes` are (client server name, gateway path) pairs.
    pub async fn start(routes: &[(&str, &str)]) -> Result<Rig> {
        let fixture = Fixture::new(FixtureOptions::kit("fixture"));
        let upstream_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let upstream_url = format!("http://{}/mcp", upstream_listener.local_addr()?);
        tokio::spawn(serve_http(fixture, upstream_listener));

        let core = start_core(
            Config::with_servers(vec![http_server("fixture", upstream_url.clone())]),
            None,
        );
        // The gateway's own upstream must be in its catalog before anyone calls through it.
        let mut published = core.gateway.snapshot_changes();
        tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let ready = core
                    .gateway
                    .snapshot()
                    .servers()
                    .get("fixture")
                    .is_some_and(|v| v.status == mcplex_catalog::ServerStatus::Ready);
                if ready || published.changed().await.is_err() {
                    return;
                }
            }
        })
        .await
        .context("the gateway's upstream was not ready within 30s")?;
        let shutdown = CancellationToken::new();
        let gateway_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let gateway_base = format!("http://{}", gateway_listener.local_addr()?);
        let guard = mcplex_surface::Guard {
            trusted_hosts: Arc::default(),
            require_auth: false,
            max_body_bytes: mcplex_config::DEFAULT_MAX_BODY_BYTES,
            auth: Arc::new(NoCredentials),
        };
        let defaults = Config::with_servers(Vec::new());
        let app = mcplex_surface::router(mcplex_surface::Routes {
            gateway: core.gateway.clone(),
            options: mcplex_surface::SurfaceOptions::default(),
            routing_mode: RoutingMode::Direct,
            profiles: Vec::new(),
            max_body_bytes: mcplex_config::DEFAULT_MAX_BODY_BYTES,
            max_sessions: defaults.listener.max_sessions,
            session_idle_timeout: defaults.listener.session_idle_timeout,
            shutdown: shutdown.clone(),
            // The rig has no store.
            store_reachable: Arc::new(std::sync::atomic::AtomicBool::new(true)),
        })
        .layer(axum::middleware::from_fn_with_state(
            guard,
            mcplex_surface::guard,
        ));
        tokio::spawn(mcplex_surface::serve_http(
            gateway_listener,
            app,
            mcplex_surface::ListenerLimits::from_config(&defaults),
            shutdown.clone(),
        ));

        let mut servers = vec![http_server("direct", upstream_url)];
        servers.extend(
            routes
                .iter()
                .map(|(name, path)| http_server(name, format!("{gateway_base}{path}"))),
        );
        let names: Vec<String> = servers.iter().map(|s| s.name.clone()).collect();
        let (events_tx, mut events) = mpsc::unbounded_channel();
        let client = Arc::new(Upstreams::start(
            &Config::with_servers(servers),
            None,
            events_tx,
        ));
        wait_ready(&mut events, &names).await?;
        Ok(Rig {
            client,
            core,
            shutdown,
        })
    }

    pub async fn stop(self) {
        self.client.shutdown().await;
        self.shutdown.cancel();
        self.core.shutdown().await;
    }
}

async fn wait_ready(
    events: &mut mpsc::UnboundedReceiver<UpstreamEvent>,
    servers: &[String],
) -> Result<()> {
    let mut ready = std::collections::BTreeSet::new();
    tokio::time::timeout(Duration::from_secs(30), async {
        while ready.len() < servers.len() {
            match events.recv().await {
                Some(UpstreamEvent {
                    server,
                    state: UpstreamState::Ready { .. },
                }) => {
                    ready.insert(server);
                }
                Some(UpstreamEvent {
                    server,
                    state: UpstreamState::Failed { reason },
                }) => {
                    anyhow::bail!("{server} failed: {reason}");
                }
                Some(_) => {}
                None => anyhow::bail!("client stopped"),
            }
        }
        Ok(())
    })
    .await
    .context("paths not ready within 30s")?
}

/// The rig's gateway accepts no credentials; its client is the anonymous local user.
struct NoCredentials;

impl mcplex_surface::Authenticator for NoCredentials {
    fn agent(&self, _token: &str) -> Option<mcplex_surface::Caller> {
        None
    }

    fn is_admin(&self, _key: &str) -> bool {
        false
    }
}
