//! `mcplex export --format anthropic|openai [--profile P] [--search provider|client]`: the
//! tools as a model API's `tools` array (`{"tools": [...]}`, the body of
//! `GET /api/v1/projection/{provider}`). Through the running gateway's API when one answers
//! (what it serves now, approvals applied), else by connecting to the configured servers as a
//! gateway would, with the store's approvals.

use std::process::ExitCode;

use anyhow::{Result, anyhow};
use mcplex_api::{ProjectionAnswer, ProjectionQuery, encode_segment, paths};
use mcplex_catalog::Scope;
use mcplex_projection::Provider;

use super::manage::{Target, open_offline, target};
use mcplex_dispatch::GatewaySetup;

use super::start::{Core, settle, settle_limit};
use crate::cli::ExportArgs;
use crate::output::outln;

pub async fn run(args: ExportArgs) -> Result<ExitCode> {
    let provider = Provider::parse(&args.format).ok_or_else(|| {
        anyhow!(
            "--format is {:?}; expected anthropic or openai",
            args.format
        )
    })?;
    let query = ProjectionQuery {
        profile: args.profile,
        search: Some(args.search),
    };
    let (config, target) = target(&args.config).await?;
    let tools = match target {
        Target::Running(api) => {
            let path = with_query(&paths::projection(provider.as_str()), &query);
            api.get::<ProjectionAnswer>(&path).await?.tools
        }
        Target::Store { .. } => {
            let (store, trust) = open_offline(&config)?;
            let limit = settle_limit(&config);
            let logins = crate::logins::logins(store);
            let core = Core::start(
                config.clone(),
                GatewaySetup {
                    logins,
                    ..GatewaySetup::new(crate::isolation::for_command(&config))
                },
                Some(trust),
                None,
            );
            settle(&core.gateway, limit).await;
            let snapshot = core.gateway.snapshot();
            core.shutdown().await;
            crate::projection::project(&snapshot, &config, Scope::full(), provider, &query)
                .map_err(|why| anyhow!(why))?
        }
    };
    outln!(
        "{}",
        serde_json::to_string_pretty(&ProjectionAnswer { tools })?
    )?;
    Ok(ExitCode::SUCCESS)
}

fn with_query(path: &str, query: &ProjectionQuery) -> String {
    let mut pairs = Vec::new();
    if let Some(profile) = &query.profile {
        pairs.push(format!("profile={}", encode_segment(profile)));
    }
    if let Some(search) = &query.search {
        pairs.push(format!("search={}", encode_segment(search)));
    }
    if pairs.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{}", pairs.join("&"))
    }
}
