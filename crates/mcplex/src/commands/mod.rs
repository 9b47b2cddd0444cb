//! One module per command; `run` picks one.

mod activity;
mod call;
mod check;
mod manage;
mod review;
mod serve;
mod start;
mod tools;

pub use start::Core;

/// Starts the gateway core (upstreams + live catalog); for benchmarks.
pub fn start_core(
    config: mcplex_config::Config,
    builtin: Option<mcplex_upstream::BuiltinConnector>,
) -> Core {
    Core::start(config, builtin, std::time::Duration::ZERO, None)
}

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::{
    BenchCommand, Cli, Command, ConfigCommand, ServersCommand, TokenCommand, ToolsCommand,
};
use crate::trust::TrustAction;

pub async fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Serve(args) => serve::run(args).await,
        Command::Tools {
            command:
                ToolsCommand::List {
                    config,
                    server,
                    json,
                    demo,
                },
        } => tools::list(&config, server.as_deref(), json, demo).await,
        Command::Tools {
            command: ToolsCommand::Show { config, id, json },
        } => review::show(&config, &id, json).await,
        Command::Tools {
            command: ToolsCommand::Approve { config, id, hash },
        } => review::approve(&config, id, hash).await,
        Command::Tools {
            command: ToolsCommand::Block { config, id },
        } => manage::act(&config, TrustAction::BlockTool(id)).await,
        Command::Servers { command } => match command {
            ServersCommand::List { config, json } => manage::servers(&config, json).await,
            ServersCommand::Approve { config, name } => {
                manage::act(&config, TrustAction::ApproveServer(name)).await
            }
            ServersCommand::Quarantine { config, name } => {
                manage::act(&config, TrustAction::QuarantineServer(name)).await
            }
        },
        Command::Token { command } => match command {
            TokenCommand::Create {
                config,
                name,
                servers,
                permissions,
                profile,
                expires,
            } => {
                let request = mcplex_api::CreateToken {
                    name,
                    servers,
                    permissions,
                    profile,
                    expires,
                };
                manage::create_token(&config, request).await
            }
            TokenCommand::List { config, json } => manage::tokens(&config, json).await,
            TokenCommand::Revoke { config, name } => manage::revoke_token(&config, &name).await,
        },
        Command::Call(args) => call::run(args).await,
        Command::Activity {
            config,
            limit,
            token,
            tool,
            json,
        } => activity::run(&config, limit, token, tool, json),
        Command::Config {
            command: ConfigCommand::Check { config },
        } => check::run(&config),
        Command::Bench {
            command: BenchCommand::Overhead { calls, out },
        } => crate::bench::overhead::run(calls, &out).await,
        Command::Bench {
            command:
                BenchCommand::Retrieval {
                    corpus,
                    queries,
                    model,
                    rounds,
                    out,
                },
        } => crate::bench::retrieval::run(&corpus, &queries, model.as_deref(), rounds, &out),
        Command::Bench {
            command: BenchCommand::Cache { corpus, turns, out },
        } => crate::bench::cache::run(&corpus, turns, &out),
        Command::Bench {
            command: BenchCommand::Code { repeats, out },
        } => crate::bench::code::run(repeats, &out).await,
        Command::Bench {
            command:
                BenchCommand::Control {
                    replicas,
                    rounds,
                    store,
                    out,
                },
        } => crate::bench::control::run(replicas, rounds, store, &out).await,
        Command::Bench {
            command:
                BenchCommand::Load {
                    sessions,
                    calls,
                    url: Some(url),
                    tool,
                    out,
                    ..
                },
        } => crate::bench::load::run_against(&url, &tool, sessions, calls, &out).await,
        Command::Bench {
            command:
                BenchCommand::Load {
                    sessions,
                    calls,
                    corpus,
                    soak,
                    out,
                    ..
                },
        } => {
            let soak = soak
                .map(|s| mcplex_config::parse_duration(&s).map_err(anyhow::Error::msg))
                .transpose()?;
            crate::bench::load::run(crate::bench::load::LoadArgs {
                sessions,
                calls,
                corpus,
                soak,
                out,
            })
            .await
        }
    }
}
