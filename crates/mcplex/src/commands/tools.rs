//! `mcplex tools list`: connect to the configured servers, print their tools, disconnect.

use std::process::ExitCode;

use anyhow::{Result, bail};
use mcplex_api::ListedTool;
use mcplex_config::Overrides;
use mcplex_protocol::ServerHealth;
use serde_json::Value;

use mcplex_dispatch::GatewaySetup;

use super::start::{Core, settle, settle_limit};
use crate::cli::ConfigArgs;
use crate::output::{outln, rowln};

pub async fn list(
    args: &ConfigArgs,
    server: Option<&str>,
    as_json: bool,
    demo: bool,
) -> Result<ExitCode> {
    let (mut config, builtin) = if demo {
        (crate::demo::config(None), Some(crate::demo::connector()))
    } else {
        (crate::load::load(args, Overrides::default())?, None)
    };
    if let Some(server) = server {
        if !config.servers.iter().any(|s| s.name == server) {
            bail!("no server named {server:?} in the config");
        }
        config.servers.retain(|s| s.name == server);
    }
    let limit = settle_limit(&config);
    let logins = crate::logins::for_command(&config);
    // The demo's servers are built in: no process, no store to read approvals from.
    let isolation = if demo {
        crate::isolation::for_config(&config)
    } else {
        crate::isolation::for_command(&config)
    };
    let core = Core::start(
        config,
        GatewaySetup {
            builtin,
            logins,
            ..GatewaySetup::new(isolation)
        },
        None,
        None,
    );
    settle(&core.gateway, limit).await;
    let snapshot = core.gateway.snapshot();
    let mut failed = false;
    for (name, view) in snapshot.servers() {
        if !matches!(view.status, ServerHealth::Ready | ServerHealth::Disabled) {
            eprintln!("server {name}: {}", view.status);
            failed = true;
        }
    }
    if as_json {
        let tools: Vec<ListedTool> = snapshot
            .tools()
            .iter()
            .map(|tool| ListedTool {
                id: tool.id.to_string(),
                server: tool.id.server.to_string(),
                tool: Value::Object((*tool.raw).clone()),
            })
            .collect();
        outln!("{}", serde_json::to_string_pretty(&tools)?)?;
    } else {
        let width = snapshot
            .tools()
            .iter()
            .map(|t| t.id.to_string().len())
            .max()
            .unwrap_or(2)
            .max(2);
        outln!("{:width$}  DESCRIPTION", "ID")?;
        for tool in snapshot.tools() {
            let description = tool
                .raw
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let first_line: String = description
                .lines()
                .next()
                .unwrap_or_default()
                .chars()
                .take(80)
                .collect();
            rowln!("{:width$}  {first_line}", tool.id.to_string())?;
        }
        eprintln!(
            "{} tool(s) from {} server(s)",
            snapshot.tools().len(),
            snapshot.servers().len()
        );
    }
    core.shutdown().await;
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
