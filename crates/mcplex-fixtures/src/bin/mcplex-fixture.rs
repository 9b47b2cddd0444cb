//! `mcplex-fixture`: a fixture MCP server on stdio (default) or HTTP, for tests and benchmarks.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use mcplex_fixtures::{
    Fixture, FixtureOptions, Writes, load_corpus, serve_denying, serve_endless_error, serve_http,
    serve_lines, serve_lines_writing,
};

#[derive(Parser)]
#[command(about = "An MCP server that misbehaves on demand (tests and benchmarks of mcplex)")]
struct Args {
    /// serverInfo.name
    #[arg(long, default_value = "fixture")]
    name: String,
    /// Serve the tools of this corpus file (shared/corpora/*.tools.json), validating and echoing calls.
    #[arg(long)]
    corpus: Option<std::path::PathBuf>,
    /// With --corpus: only the rows of this server.
    #[arg(long)]
    corpus_server: Option<String>,
    /// Leave out the kit tools (echo, add, slow, crash, ...).
    #[arg(long)]
    no_kit: bool,
    /// Serve tools/list in pages of this size.
    #[arg(long)]
    page_size: Option<usize>,
    /// Repeat the same nextCursor forever (a broken server).
    #[arg(long)]
    stuck_cursor: bool,
    /// Offer `weather`, whose description turns malicious after its first call (a rug pull).
    #[arg(long)]
    rug_pull: bool,
    /// Offer `probe`, which tries to read, write, signal and connect as a malicious server would.
    #[arg(long)]
    hostile: bool,
    /// At start, before serving, make the `probe` attempts this JSON object names and write the
    /// answer to stderr (`mcplex-fixture attack: {…}`).
    #[arg(long)]
    attack_at_start: Option<String>,
    /// Log each call with the gateway's request id to stderr.
    #[arg(long)]
    log_calls: bool,
    /// Offer `trace_context`, which answers with the W3C trace context it was sent.
    #[arg(long)]
    trace_echo: bool,
    /// Serve the tool definitions of this file (a JSON array) exactly as they are. A call answers
    /// with a definition's `x-fixture-result` when it has one, else echoes its arguments.
    #[arg(long)]
    raw_tools: Option<std::path::PathBuf>,
    /// After initialize, send this many list_changed notifications per second.
    #[arg(long)]
    flood_list_changed: Option<u32>,
    /// After initialize, write a non-JSON line every this many milliseconds.
    #[arg(long)]
    garbage_every_ms: Option<u64>,
    /// Answer the first tools/list, then send list_changed and never answer another tools/list.
    #[arg(long)]
    stall_relist: bool,
    /// Print this environment variable's value to stderr at start (redaction tests).
    #[arg(long)]
    print_env: Option<String>,
    /// Serve stateless streamable HTTP on this address instead of stdio.
    #[arg(long)]
    http: Option<String>,
    /// Serve stdio as rmcp's stdio transport does: through tokio's stdin and stdout (each read
    /// and write a hand-off to a thread of the blocking pool), every answer written and flushed
    /// on its own. A costlier upstream for benchmarks (the default reads and writes pipes through
    /// the reactor and writes answers that are ready together at once).
    #[arg(long)]
    rmcp_like_stdio: bool,
    /// With --http: refuse every request with 401, echoing its target and headers in the body.
    #[arg(long)]
    deny_echo: bool,
    /// With --http: answer every request with 500 and a body that never ends.
    #[arg(long)]
    endless_error: bool,
    /// Hold an exclusive lock on this (existing) file while the process runs, and exit with 4
    /// at once, saying so on stderr, when another process holds it: a server owning something
    /// (a port, a database file) that the next one needs.
    #[arg(long)]
    exclusive: Option<PathBuf>,
    /// On stdio: once stdin closes, go on this long before exiting, ignoring SIGTERM
    /// meanwhile: a server slow to shut down.
    #[arg(long)]
    linger_ms: Option<u64>,
}

/// The file at `path`, locked exclusively for this process (released when it ends).
fn exclusive(path: &Path) -> Result<std::fs::File, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => {
            Err(format!("{} is held by another process", path.display()))
        }
        Err(std::fs::TryLockError::Error(e)) => Err(format!("{}: {e}", path.display())),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(name) = &args.print_env {
        eprintln!(
            "fixture env {name}={}",
            std::env::var(name).unwrap_or_default()
        );
    }
    let corpus = match &args.corpus {
        None => Vec::new(),
        Some(path) => match std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|t| load_corpus(&t))
        {
            Ok(tools) => tools
                .into_iter()
                .filter(|t| args.corpus_server.as_ref().is_none_or(|s| &t.server == s))
                .collect(),
            Err(e) => {
                eprintln!("mcplex-fixture: {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        },
    };
    let raw_tools = match &args.raw_tools {
        None => Vec::new(),
        Some(path) => match std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|t| {
                serde_json::from_str::<Vec<serde_json::Value>>(&t).map_err(|e| e.to_string())
            }) {
            Ok(tools) => tools,
            Err(e) => {
                eprintln!("mcplex-fixture: {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        },
    };
    if let Some(attempts) = &args.attack_at_start {
        match serde_json::from_str(attempts) {
            Ok(attempts) => mcplex_fixtures::attack_at_start(&attempts),
            Err(e) => eprintln!("mcplex-fixture: --attack-at-start: {e}"),
        }
    }
    let fixture = Fixture::new(FixtureOptions {
        name: args.name,
        kit: !args.no_kit,
        corpus,
        page_size: args.page_size,
        stuck_cursor: args.stuck_cursor,
        rug_pull: args.rug_pull,
        hostile: args.hostile,
        log_calls: args.log_calls,
        trace_echo: args.trace_echo,
        raw_tools,
        sabotage: mcplex_fixtures::Sabotage {
            flood_list_changed: args.flood_list_changed,
            garbage_every: args.garbage_every_ms.map(std::time::Duration::from_millis),
            stall_relist: args.stall_relist,
        },
    });
    if let Some(address) = args.http {
        let listener = match tokio::net::TcpListener::bind(&address).await {
            Ok(listener) => listener,
            Err(e) => {
                eprintln!("mcplex-fixture: cannot listen on {address}: {e}");
                return ExitCode::FAILURE;
            }
        };
        if let Ok(local) = listener.local_addr() {
            eprintln!("mcplex-fixture: listening on http://{local}/mcp");
        }
        let served = if args.deny_echo {
            serve_denying(listener).await
        } else if args.endless_error {
            serve_endless_error(listener).await
        } else {
            serve_http(fixture, listener).await
        };
        return match served {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("mcplex-fixture: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let _held = match args.exclusive.as_deref().map(exclusive).transpose() {
        Ok(held) => held,
        Err(e) => {
            eprintln!("mcplex-fixture: --exclusive: {e}");
            return ExitCode::from(4);
        }
    };
    // Registering a handler replaces SIGTERM's default action (ending the process) for good.
    let _sigterm_ignored = args.linger_ms.and_then(|_| {
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok()
    });
    if args.rmcp_like_stdio {
        let (input, output) = blocking_stdio();
        serve_lines_writing(fixture.clone(), input, output, Writes::EachAlone).await;
    } else {
        let (input, output) = stdio();
        serve_lines(fixture.clone(), input, output).await;
    }
    if fixture.crash.is_cancelled() {
        std::process::exit(3);
    }
    if let Some(linger) = args.linger_ms {
        tokio::time::sleep(Duration::from_millis(linger)).await;
    }
    ExitCode::SUCCESS
}

/// Standard input and output through the runtime's reactor where they allow it; tokio's own
/// stdio hands every read and write to a thread of its blocking pool, which costs a benchmark's
/// upstream more than the call it serves. Pipes (as a gateway spawns us) are opened again through
/// `/proc/self/fd`, so the non-blocking mode is set on descriptions of our own, never on the ones
/// we were given (a parent or a sibling may share those); sockets (as node spawns us) cannot be
/// opened again and are made non-blocking as they are. Anything else keeps tokio's stdio.
fn stdio() -> (
    Box<dyn tokio::io::AsyncRead + Unpin + Send>,
    Box<dyn tokio::io::AsyncWrite + Unpin + Send>,
) {
    use tokio::net::unix::pipe;
    let reopened = (
        pipe::OpenOptions::new().open_receiver("/proc/self/fd/0"),
        pipe::OpenOptions::new().open_sender("/proc/self/fd/1"),
    );
    if let (Ok(input), Ok(output)) = reopened {
        return (Box::new(input), Box::new(output));
    }
    // Both or neither: a stream made non-blocking and then read through tokio's stdio would fail.
    if let (Some(input), Some(output)) = (socket(std::io::stdin()), socket(std::io::stdout()))
        && let (Ok(input), Ok(output)) = (reactor(input), reactor(output))
    {
        return (Box::new(input), Box::new(output));
    }
    blocking_stdio()
}

/// A copy of `stream`'s descriptor, if it is a Unix socket.
fn socket(stream: impl std::os::fd::AsFd) -> Option<std::os::unix::net::UnixStream> {
    use std::os::unix::fs::FileTypeExt;
    let file = std::fs::File::from(stream.as_fd().try_clone_to_owned().ok()?);
    let is_socket = file.metadata().ok()?.file_type().is_socket();
    is_socket.then(|| std::os::fd::OwnedFd::from(file).into())
}

/// `socket` as a stream of the runtime's reactor.
fn reactor(socket: std::os::unix::net::UnixStream) -> std::io::Result<tokio::net::UnixStream> {
    socket.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(socket)
}

/// Standard input and output through tokio's blocking pool.
fn blocking_stdio() -> (
    Box<dyn tokio::io::AsyncRead + Unpin + Send>,
    Box<dyn tokio::io::AsyncWrite + Unpin + Send>,
) {
    (Box::new(tokio::io::stdin()), Box::new(tokio::io::stdout()))
}
