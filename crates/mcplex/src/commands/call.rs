//! `mcplex call TOOL --args '{...}'`: one call through the dispatch path, no gateway. TOOL is a
//! canonical id (`server:tool`) or the display name a listing shows.

use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use mcplex_config::Overrides;
use mcplex_dispatch::{CallContext, GatewaySetup, ToolCall};
use mcplex_names::ToolId;
use serde_json::{Map, Value};

use super::start::{Core, settle, settle_limit};
use crate::cli::CallArgs;
use crate::output::outln;

pub async fn run(args: CallArgs) -> Result<ExitCode> {
    let arguments: Map<String, Value> =
        serde_json::from_str(&args.args).context("--args must be a JSON object")?;
    let overrides = Overrides {
        call_timeout: args.call_timeout.clone(),
        ..Overrides::default()
    };
    let (mut config, builtin) = if args.demo {
        let mut demo = crate::demo::config(None);
        // The demo has no file; the flag is validated as a file value would be.
        demo.call_timeout = mcplex_config::parse_config("{}", "--demo", &overrides)?.call_timeout;
        (demo, Some(crate::demo::connector()))
    } else {
        (crate::load::load(&args.config, overrides)?, None)
    };
    // A canonical id names its server: only that one is started. A display name (what a
    // listing shows) is resolved by the catalog, so every server is started.
    if let Some(id) = ToolId::parse(&args.tool) {
        if !config.servers.iter().any(|s| *s.name == *id.server) {
            bail!("no server named {:?} in the config", id.server);
        }
        config.servers.retain(|s| *s.name == *id.server);
    }
    let limit = settle_limit(&config);
    let logins = crate::logins::for_command(&config);
    // The demo's servers are built in: no process, no store to read approvals from.
    let isolation = if args.demo {
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
    let outcome = core
        .gateway
        .call(
            ToolCall {
                name: args.tool.clone(),
                arguments: Some(arguments),
            },
            // The operator's own command: every tool the config offers.
            CallContext {
                scope: mcplex_catalog::Scope::full(),
                token: None,
                credential: None,
                cancel: Default::default(),
                progress: None,
                relay: std::sync::Arc::new(mcplex_upstream::NoClient::default()),
            },
        )
        .await;
    core.shutdown().await;
    let result = outcome?;
    outln!("{}", serde_json::to_string_pretty(&result)?)?;
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Ok(if is_error {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
