//! The live catalog driven by upstream events made by hand (no upstream process runs): what the
//! published snapshot shows as servers connect, list, fail and come back; diagnostics reported
//! once; restarts counted.

use mcplex_protocol::ServerHealth;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use mcplex_catalog::Snapshot;
use mcplex_config::{Config, InheritEnv, ServerConfig, Transport};
use mcplex_dispatch::Gateway;
use mcplex_protocol::Offer;
use mcplex_upstream::{UpstreamEvent, UpstreamReport};
use serde_json::{Value, json};

use crate::live::LiveCatalog;
use crate::trust::Trust;

/// A configured stdio server; nothing is ever spawned for it (the gateway below starts none).
pub(crate) fn server(name: &str) -> ServerConfig {
    let transport = Transport::Stdio {
        command: "never-started".to_owned(),
        args: Vec::new(),
        env: BTreeMap::new(),
        working_dir: None,
        inherit_env: InheritEnv::default(),
        sandbox: Default::default(),
    };
    ServerConfig::new(name, transport)
}

pub(crate) fn config(servers: &[&str]) -> Arc<Config> {
    Arc::new(Config::with_servers(
        servers.iter().map(|name| server(name)).collect(),
    ))
}

pub(crate) fn tool(name: &str, description: &str) -> Value {
    json!({"name": name, "description": description, "inputSchema": {"type": "object"}})
}

pub(crate) fn ready(server: &str, tools: Vec<Value>) -> UpstreamEvent {
    let report = UpstreamReport::Listed {
        tools: Arc::new(tools),
        offer: Arc::new(Offer::default()),
    };
    UpstreamEvent {
        server: server.to_owned(),
        report,
    }
}

pub(crate) fn event(server: &str, health: ServerHealth) -> UpstreamEvent {
    UpstreamEvent {
        server: server.to_owned(),
        report: UpstreamReport::Health(health),
    }
}

/// A live catalog of `config` publishing to a gateway that runs no upstream.
pub(crate) fn live(config: Arc<Config>, trust: Option<Trust>) -> (LiveCatalog, Arc<Gateway>) {
    let (events, _) = tokio::sync::mpsc::unbounded_channel();
    let nothing = Config::with_servers(Vec::new());
    let setup = mcplex_dispatch::GatewaySetup::new(mcplex_upstream::Isolation::unavailable());
    let gateway = Arc::new(Gateway::start(&nothing, events, setup));
    (LiveCatalog::new(gateway.clone(), config, trust), gateway)
}

pub(crate) fn served(snapshot: &Snapshot) -> Vec<String> {
    snapshot.tools().iter().map(|t| t.id.to_string()).collect()
}

fn status(snapshot: &Snapshot, server: &str) -> Option<ServerHealth> {
    snapshot
        .servers()
        .get(server)
        .map(|view| view.status.clone())
}

fn up(server: &str) -> i64 {
    let label = mcplex_telemetry::server(server);
    mcplex_telemetry::metrics()
        .upstream_up
        .get_or_create(&label)
        .get()
}

#[tokio::test]
async fn a_server_is_connecting_until_it_lists_its_tools() {
    let (mut live, gateway) = live(config(&["alpha", "beta"]), None);
    live.publish();
    let first = gateway.snapshot();
    assert_eq!(status(&first, "alpha"), Some(ServerHealth::Connecting));
    assert!(served(&first).is_empty());

    live.fold(ready(
        "alpha",
        vec![tool("echo", "Echo"), tool("add", "Add")],
    ));
    live.publish();
    let listed = gateway.snapshot();
    assert_eq!(status(&listed, "alpha"), Some(ServerHealth::Ready));
    assert_eq!(status(&listed, "beta"), Some(ServerHealth::Connecting));
    assert_eq!(served(&listed), ["alpha:add", "alpha:echo"]);
    assert!(listed.generation() > first.generation());
}

#[tokio::test]
async fn a_failing_server_keeps_its_last_tools_and_one_restart_is_counted() {
    let name = "live-restarting";
    let (mut live, gateway) = live(config(&[name]), None);
    live.fold(event(name, ServerHealth::Connecting));
    live.fold(event(
        name,
        ServerHealth::Unhealthy {
            reason: "spawn failed".into(),
        },
    ));
    assert_eq!(
        mcplex_telemetry::upstream_restarts(name),
        0,
        "a server never ready has not restarted"
    );

    live.fold(ready(name, vec![tool("echo", "Echo")]));
    assert_eq!(up(name), 1);
    live.fold(event(
        name,
        ServerHealth::Unhealthy {
            reason: "closed its output".into(),
        },
    ));
    live.publish();
    let failed = gateway.snapshot();
    assert_eq!(
        status(&failed, name),
        Some(ServerHealth::Unhealthy {
            reason: "closed its output".into()
        })
    );
    assert_eq!(served(&failed), [format!("{name}:echo")]);
    assert_eq!(mcplex_telemetry::upstream_restarts(name), 1);
    assert_eq!(up(name), 0);

    // Reconnecting and failing again before it is ready is the same restart.
    live.fold(event(name, ServerHealth::Connecting));
    live.fold(ready(name, vec![tool("echo", "Echo"), tool("new", "New")]));
    live.publish();
    assert_eq!(mcplex_telemetry::upstream_restarts(name), 1);
    assert_eq!(up(name), 1);
    assert_eq!(served(&gateway.snapshot()).len(), 2);
}

#[tokio::test]
async fn a_diagnostic_is_reported_once_however_many_rebuilds_see_it() {
    let (mut live, _gateway) = live(config(&["alpha", "beta"]), None);
    let broken = json!({"name": "broken"});
    live.fold(ready("alpha", vec![tool("echo", "Echo"), broken.clone()]));
    let first = live.publish();
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(first[0].server, "alpha");
    assert!(first[0].message.contains("broken"), "{first:?}");

    // An unrelated server's listing rebuilds; the same diagnostic is not new.
    live.fold(ready("beta", vec![tool("other", "Other")]));
    assert!(live.publish().is_empty());

    // Fixed, then broken again: reported again.
    live.fold(ready("alpha", vec![tool("echo", "Echo")]));
    assert!(live.publish().is_empty());
    live.fold(ready("alpha", vec![broken]));
    assert_eq!(live.publish().len(), 1);
}

#[tokio::test]
async fn a_config_change_forgets_removed_servers_and_shows_new_ones() {
    let (mut live, gateway) = live(config(&["alpha", "beta"]), None);
    live.fold(ready("alpha", vec![tool("echo", "Echo")]));
    live.fold(ready("beta", vec![tool("other", "Other")]));
    live.publish();
    assert_eq!(served(&gateway.snapshot()), ["alpha:echo", "beta:other"]);

    live.apply_config(config(&["beta", "gamma"]));
    live.publish();
    let snapshot = gateway.snapshot();
    assert_eq!(served(&snapshot), ["beta:other"]);
    assert_eq!(status(&snapshot, "alpha"), None);
    assert_eq!(status(&snapshot, "gamma"), Some(ServerHealth::Connecting));

    // A server added back starts from nothing: its old tools were forgotten.
    live.apply_config(config(&["alpha", "beta"]));
    live.publish();
    assert_eq!(
        status(&gateway.snapshot(), "alpha"),
        Some(ServerHealth::Connecting)
    );
    assert_eq!(served(&gateway.snapshot()), ["beta:other"]);
}

#[tokio::test]
async fn the_task_publishes_at_start_and_after_each_burst() {
    let (events_tx, events) = tokio::sync::mpsc::unbounded_channel();
    let (catalog, gateway) = live(config(&["alpha"]), None);
    let (_configs, configs) = tokio::sync::watch::channel(config(&["alpha"]));
    let (_requests_tx, requests) = tokio::sync::mpsc::channel(1);
    let (_generation, store_changes) = tokio::sync::watch::channel(0);
    let inputs = crate::live::Inputs {
        configs,
        requests,
        store_changes,
    };
    let mut published = gateway.snapshot_changes();
    let task = crate::live::start(catalog, events, inputs);
    // Published before `start` returned: every configured server is in it.
    assert_eq!(
        status(&gateway.snapshot(), "alpha"),
        Some(ServerHealth::Connecting)
    );
    published.mark_unchanged();
    events_tx
        .send(ready("alpha", vec![tool("echo", "Echo")]))
        .expect("the task listens");
    tokio::time::timeout(Duration::from_secs(5), published.changed())
        .await
        .expect("a publish")
        .expect("the gateway is alive");
    assert_eq!(served(&gateway.snapshot()), ["alpha:echo"]);
    // Every supervisor gone: the task ends.
    drop(events_tx);
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("the task ends")
        .expect("no panic");
}
