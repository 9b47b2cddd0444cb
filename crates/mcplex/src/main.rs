//! `mcplex`: the gateway binary. Parses flags, sets up logging (always stderr: stdout may be a
//! JSON-RPC channel), wires config → upstreams → catalog → surfaces, and maps failures to exit
//! codes. Everything with logic of its own lives in the library crates.

mod activity_export;
mod api;
mod api_added_servers;
mod api_connections;
mod api_guard;
mod api_limits;
mod api_server_page;
mod api_session;
mod api_trends;
mod api_views;
mod audit;
mod auth;
mod cli;
mod commands;
mod config_view;
mod connect;
mod demo;
mod given_api_key;
mod isolation;
mod load;
mod logging;
mod logins;
mod oauth;
mod operator_audit;
mod origin;
mod output;
mod projection;
mod semantic;
mod timestamp;
mod traces;
mod ui;
mod upstream_login;

use std::process::ExitCode;

use clap::Parser;

/// mimalloc rather than the system allocator: a tool call allocates some fifty small blocks
/// across threads (the request, its JSON, the upstream's answer), and glibc's malloc and free
/// were 14 % of the gateway's CPU under load (`scripts/bench-proxy.sh`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The hidden subcommand that runs one code_execution script (the gateway starts itself with it).
const CODE_WORKER: &str = "__code-worker";

/// This executable (`program`) as a code_execution worker. Its one variable: mimalloc reserves
/// no 1 GiB arena up front (`MIMALLOC_ARENA_RESERVE=0`; it maps what it uses), since the worker
/// bounds its data over what it maps when its run arrives and the reservation would loosen
/// that bound by a gibibyte. A run costs no more for it (`bench code`).
fn code_worker(program: std::path::PathBuf) -> mcplex_code::WorkerCommand {
    mcplex_code::WorkerCommand {
        program,
        args: vec![CODE_WORKER.into()],
        env: vec![("MIMALLOC_ARENA_RESERVE".into(), "0".into())],
    }
}

fn main() -> ExitCode {
    // The sandbox helper confines one stdio server and executes it: nothing else starts first.
    if std::env::args_os().nth(1).as_deref()
        == Some(std::ffi::OsStr::new(mcplex_sandbox::HELPER_ARG))
    {
        return mcplex_sandbox::run_helper(std::env::args_os().skip(2).collect());
    }
    // A code_execution worker serves one script on stdin/stdout: nothing else starts first.
    if std::env::args_os().nth(1).as_deref() == Some(std::ffi::OsStr::new(CODE_WORKER)) {
        return mcplex_code::serve_worker();
    }
    // The gateway holds the API key, tokens and keys in memory and its environment.
    mcplex_sandbox::protect_this_process();
    if let Ok(program) = std::env::current_exe() {
        mcplex_surface::set_code_worker(code_worker(program));
    }
    let cli = cli::Cli::parse();
    // The gateway narrates its work; one-shot commands only speak up when something is wrong.
    let default_level = if matches!(cli.command, cli::Command::Serve(_)) {
        "info"
    } else {
        "warn"
    };
    // reqwest is built without a bundled TLS provider; ring is the small one. Installed first:
    // the trace exporter's HTTP client is built with the logging.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let serving = matches!(cli.command, cli::Command::Serve(_));
    // Flushes the traces at exit, after the runtime (and every span of it) is gone.
    let _exporting = logging::init(&cli.log_format, default_level, serving);
    // One socket per session, pipes per upstream: the default soft limit is too small.
    let _ = mcplex_upstream::raise_open_files_limit();
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(workers) = worker_threads() {
        builder.worker_threads(workers);
    }
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("mcplex: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(commands::run(cli)) {
        Ok(code) => code,
        // `mcplex tools list | head -1`: the reader has all it wanted.
        Err(e) if output::is_stdout_closed(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcplex: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// The runtime's worker threads: one fewer than the cores the process may use, at least one,
/// unless `TOKIO_WORKER_THREADS` names a number (tokio reads it). The gateway's own work per
/// call is small and shares the machine with the stdio servers it starts and the search
/// model's worker; a worker per core spent the difference waking idle workers. On two cores one
/// worker took a tools/call's CPU from 106-110 to 73-79 us at one connection and from 36-39 to
/// 28-29 us at 32, and answered 10-16% more calls (ARCHITECTURE.md, "The request path").
fn worker_threads() -> Option<usize> {
    if std::env::var_os("TOKIO_WORKER_THREADS").is_some() {
        return None;
    }
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    Some(cores.saturating_sub(1).max(1))
}
