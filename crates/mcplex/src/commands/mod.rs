//! One module per command; `run` picks one.

mod call;
mod check;
mod serve;
mod start;
mod tools;

pub use start::Core;

/// Starts the gateway core (upstreams + live catalog); for benchmarks.
pub fn start_core(
    config: mcplex_config::Config,
    builtin: Option<mcplex_upstream::BuiltinConnector>,
) -> Core {
    Core::start(config, builtin, std::time::Duration::ZERO)
}

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::{BenchCommand, Cli, Command, ConfigCommand, ToolsCommand};

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
        Command::Call(args) => call::run(args).await,
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
                    out,
                },
        } => crate::bench::retrieval::run(&corpus, &queries, &out),
        Command::Bench {
            command: BenchCommand::Cache { corpus, turns, out },
        } => crate::bench::cache::run(&corpus, turns, &out),
    }
}
