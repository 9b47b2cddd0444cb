//! One module per command; `run` picks one.

mod activity;
mod auth;
mod call;
mod callback;
mod check;
mod export;
mod manage;
pub(crate) use manage::open_offline;
pub(crate) mod review;
mod serve;
pub(crate) use serve::auth_required;
mod start;
mod tools;

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::{
    ActivityCommand, ApikeyCommand, AuthCommand, Cli, Command, ConfigCommand, ServersCommand,
    TokenCommand, ToolsCommand,
};
use mcplex_runtime::TrustAction;

pub async fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Serve(args) => serve::run(args).await,
        Command::Tools { command } => tools_command(command).await,
        Command::Servers { command } => match command {
            ServersCommand::List { config, json } => manage::servers(&config, json).await,
            ServersCommand::Approve { config, name } => {
                manage::act(&config, TrustAction::ApproveServer(name)).await
            }
            ServersCommand::Quarantine { config, name } => {
                manage::act(&config, TrustAction::QuarantineServer(name)).await
            }
        },
        Command::Token { command } => token_command(command).await,
        Command::Apikey {
            command: ApikeyCommand::Rotate { config },
        } => manage::rotate_api_key(&config),
        Command::Auth { command } => match command {
            AuthCommand::Login {
                config,
                server,
                no_browser,
                timeout,
            } => auth::login(&config, &server, no_browser, &timeout).await,
            AuthCommand::Status { config, json } => auth::status(&config, json),
            AuthCommand::Logout {
                config,
                server,
                caller,
            } => auth::logout(&config, &server, caller.as_deref()),
        },
        Command::Call(args) => call::run(args).await,
        Command::Export(args) => export::run(args).await,
        Command::Activity {
            command:
                Some(ActivityCommand::Export {
                    config,
                    since,
                    format,
                    token,
                    tool,
                    status,
                }),
            ..
        } => activity::export(&config, since.as_deref(), &format, token, tool, status),
        Command::Activity {
            command: None,
            config,
            limit,
            token,
            tool,
            json,
        } => activity::run(&config, limit, token, tool, json),
        Command::Config {
            command: ConfigCommand::Check { config },
        } => check::run(&config),
        #[cfg(feature = "bench")]
        Command::Bench { command } => mcplex_bench::run(command, &bench_host()?).await,
        #[cfg(not(feature = "bench"))]
        Command::Bench { .. } => anyhow::bail!(
            "this build has no benchmarks: build mcplex with the `bench` feature, e.g. `cargo build --release --bins --features mcplex/bench`"
        ),
    }
}

/// `mcplex tools …`.
async fn tools_command(command: ToolsCommand) -> Result<ExitCode> {
    match command {
        ToolsCommand::List {
            config,
            server,
            json,
            demo,
        } => tools::list(&config, server.as_deref(), json, demo).await,
        ToolsCommand::Show { config, id, json } => review::show(&config, &id, json).await,
        ToolsCommand::Approve { config, id, hash } => review::approve(&config, id, hash).await,
        ToolsCommand::Block { config, id } => {
            manage::act(&config, TrustAction::BlockTool(id)).await
        }
    }
}

/// `mcplex token …`.
async fn token_command(command: TokenCommand) -> Result<ExitCode> {
    match command {
        TokenCommand::Create {
            config,
            name,
            servers,
            permissions,
            profile,
            expires,
            limits,
        } => {
            let limits =
                mcplex_config::CallLimits::from_assignments(&limits).map_err(anyhow::Error::msg)?;
            let request = mcplex_api::CreateToken {
                name,
                servers,
                permissions,
                profile,
                expires,
                limits: (!limits.is_empty()).then(|| limits.to_json()),
            };
            manage::create_token(&config, request).await
        }
        TokenCommand::Limit {
            config,
            name,
            limits,
        } => {
            let limits =
                mcplex_config::CallLimits::from_assignments(&limits).map_err(anyhow::Error::msg)?;
            manage::limit_token(&config, &name, limits).await
        }
        TokenCommand::List { config, json } => manage::tokens(&config, json).await,
        TokenCommand::Revoke { config, name } => manage::revoke_token(&config, &name).await,
    }
}

/// What the benchmarks need from this binary: itself, as the gateway under test and as the
/// code_execution worker.
#[cfg(feature = "bench")]
fn bench_host() -> Result<mcplex_bench::Host> {
    use anyhow::Context;
    let gateway = std::env::current_exe().context("cannot find the mcplex executable")?;
    Ok(mcplex_bench::Host {
        code_worker: crate::code_worker(gateway.clone()),
        gateway,
        store_poll_interval: mcplex_runtime::follow::POLL_INTERVAL,
        load_model: crate::semantic::load_for_bench,
    })
}
