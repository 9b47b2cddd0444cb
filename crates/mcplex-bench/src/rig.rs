//! The benchmarks' test rig: a fixture upstream on stateless streamable HTTP in this process, a
//! gateway in front of it (`mcplex serve`, a process of its own: the production binary with its
//! production wiring, reached as an anonymous loopback caller), and one client of this process
//! (mcplex's own upstream client, its own instance) with a path straight to the fixture
//! (`direct`) and one per gateway route asked for.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use mcplex_config::{Config, ServerConfig, Transport};
use mcplex_fixtures::{Fixture, FixtureOptions, serve_http};
use mcplex_protocol::ServerHealth;
use mcplex_upstream::{UpstreamEvent, UpstreamReport, Upstreams};
use serde_json::json;
use tokio::sync::mpsc;

use crate::Host;
use crate::gateway::GatewayProcess;

pub struct Rig {
    pub client: Arc<Upstreams>,
    gateway: GatewayProcess,
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
    pub async fn start(host: &Host, routes: &[(&str, &str)]) -> Result<Rig> {
        let fixture = Fixture::new(FixtureOptions::kit("fixture"));
        let upstream_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let upstream_url = format!("http://{}/mcp", upstream_listener.local_addr()?);
        tokio::spawn(serve_http(fixture, upstream_listener));

        let settings = json!({"mcpServers": {"fixture": {"url": upstream_url, "type": "http"}}});
        let mut gateway = GatewayProcess::start(
            &host.gateway,
            settings.as_object().cloned().unwrap_or_default(),
        )?;
        // The gateway's own upstream must be in its catalog before anyone calls through it.
        gateway.wait_ready(Duration::from_secs(30)).await?;

        let mut servers = vec![http_server("direct", upstream_url)];
        servers.extend(
            routes
                .iter()
                .map(|(name, path)| http_server(name, format!("{}{path}", gateway.base))),
        );
        let names: Vec<String> = servers.iter().map(|s| s.name.clone()).collect();
        let (events_tx, mut events) = mpsc::unbounded_channel();
        let client = Arc::new(Upstreams::start(
            &Config::with_servers(servers),
            None,
            None,
            events_tx,
            mcplex_upstream::Isolation::unavailable(),
        ));
        wait_ready(&mut events, &names).await?;
        Ok(Rig { client, gateway })
    }

    pub async fn stop(self) {
        self.client.shutdown().await;
        drop(self.gateway);
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
                    report: UpstreamReport::Listed { .. },
                }) => {
                    ready.insert(server);
                }
                Some(UpstreamEvent {
                    server,
                    report: UpstreamReport::Health(ServerHealth::Unhealthy { reason }),
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
