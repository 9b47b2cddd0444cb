//! Upstreams that are child processes. Each child runs in its own process group (npx and uvx
//! fork grandchildren that a plain kill of the child would orphan); shutdown sends SIGTERM to the
//! whole group, waits briefly, then SIGKILLs what is left. The child's stderr becomes log lines
//! with configured secrets redacted, and the server's stderr tail (`stderr_tail.rs`). Stdout
//! carries only JSON-RPC. The child gets the allow-listed part of the gateway's environment
//! (`environment.rs`) and its own `env`, nothing else. It starts inside the sandbox its
//! [`Isolation`](crate::Isolation) decides (through the sandbox helper), in a private temp
//! directory that is removed when it exits.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use super::bounded_lines::{BoundedLines, Line};
use mcplex_config::{InheritEnv, Redactor, Sandbox};
use mcplex_sandbox::Report;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::lines::{LinesSender, lines_wire};
use super::{BoxFuture, SendError, Wire, WireSend};
use crate::ConnectError;
use crate::isolation::{Denied, Isolation, Prepared, Start, denial_hint, looks_denied};
use libc::{SIGKILL, SIGTERM};
use mcplex_sandbox::signal_group;

/// How long a process group gets between SIGTERM and SIGKILL.
const TERMINATE_GRACE: Duration = Duration::from_secs(2);
/// How long a shutdown waits, after SIGKILL, for the child to be reaped.
const KILL_WAIT: Duration = Duration::from_secs(2);

/// What to run.
pub(crate) struct StdioSpec<'a> {
    pub command: &'a str,
    pub args: &'a [String],
    pub env: &'a BTreeMap<String, String>,
    pub working_dir: Option<&'a PathBuf>,
    pub inherit_env: &'a InheritEnv,
    pub sandbox: &'a Sandbox,
}

/// The command that starts the server as `prepared` says (the sandbox helper, or the server
/// itself): `environment` only, three pipes, its own session and process group, no other
/// descriptor, killed with the gateway.
fn command_of(
    prepared: &Prepared,
    environment: BTreeMap<std::ffi::OsString, std::ffi::OsString>,
    working_dir: Option<&PathBuf>,
) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(&prepared.program);
    command
        .args(&prepared.args)
        .env_clear()
        .envs(environment)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(dir) = working_dir {
        command.current_dir(dir);
    }
    mcplex_sandbox::detach_child(command.as_std_mut(), false);
    command
}

/// Waits for the server's process to exit, logs how, and then removes its private temp directory
/// and cancels `ended` (the process exited; the wire is closed).
async fn wait_for_exit<T>(
    server: Arc<str>,
    mut child: tokio::process::Child,
    pid: u32,
    temp: T,
    exit: Arc<OnceLock<String>>,
    ended: [CancellationToken; 2],
) {
    match child.wait().await {
        Ok(status) => {
            tracing::info!(server = %server, "process {pid} exited: {status}");
            let _ = exit.set(status.to_string());
        }
        Err(e) => tracing::warn!(server = %server, "cannot wait for process {pid}: {e}"),
    }
    // The private temp directory goes with the process.
    drop(temp);
    for token in ended {
        token.cancel();
    }
}

/// The longest stderr line logged and kept in the tail as written; a longer one is told by its
/// size.
const MAX_STDERR_LINE_BYTES: usize = 16 * 1024;

/// Logs the server's stderr line by line, redacted, keeps its tail for the operator, and keeps
/// the last line that looks like the sandbox refusing something (with the fix, said once).
async fn read_stderr(
    server: Arc<str>,
    redactor: Arc<Redactor>,
    stderr: tokio::process::ChildStderr,
    denied: Denied,
) {
    let mut lines = BoundedLines::new(stderr, MAX_STDERR_LINE_BYTES);
    let mut hinted = false;
    while let Ok(Some(line)) = lines.next_line().await {
        let line = match line {
            Line::Whole(line) => redactor.redact(&String::from_utf8_lossy(&line)),
            Line::TooLong { bytes } => format!("(a line of {bytes} bytes, not shown)"),
        };
        crate::stderr_tail::push(&server, &line);
        tracing::info!(target: "mcplex::upstream::stderr", server = %server, "{line}");
        if looks_denied(&line) {
            // Kept as the tail keeps it: an upstream's line is never stored unbounded.
            *denied
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) =
                Some(crate::stderr_tail::shortened(&line));
            if !hinted {
                hinted = true;
                let hint = denial_hint(&server);
                crate::stderr_tail::push(&server, &hint);
                tracing::warn!(server = %server, "{hint}");
            }
        }
    }
}

/// Spawns the server in its sandbox and returns its wire and its isolation. `denied` receives
/// the last stderr line that looks like the sandbox refusing it something.
pub(crate) async fn spawn(
    server: Arc<str>,
    spec: &StdioSpec<'_>,
    redactor: Arc<Redactor>,
    isolation: &Isolation,
    denied: Denied,
) -> Result<(Wire, Report), ConnectError> {
    let mut environment = super::environment::inherited(std::env::vars_os(), spec.inherit_env);
    environment.extend(spec.env.iter().map(|(k, v)| (k.into(), v.into())));
    let variable = |name: &str| {
        environment
            .get(std::ffi::OsStr::new(name))
            .and_then(|v| v.to_str())
            .map(str::to_owned)
    };
    let (home, cache_home) = (variable("HOME"), variable("XDG_CACHE_HOME"));
    // The helper would start and then fail to execute it: say it here, as a spawn would.
    if spec.sandbox.enabled
        && !findable(
            spec.command,
            variable("PATH").as_deref(),
            spec.working_dir.map(PathBuf::as_path),
        )
    {
        return Err(ConnectError::NotFound {
            command: spec.command.to_owned(),
        });
    }
    let prepared = isolation
        .prepare(&Start {
            server: &server,
            sandbox: spec.sandbox,
            command: spec.command,
            args: spec.args,
            working_dir: spec.working_dir.map(PathBuf::as_path),
            home: home.as_deref(),
            cache_home: cache_home.as_deref(),
        })
        .await?;
    if let Some(temp) = &prepared.temp {
        for name in ["TMPDIR", "TMP", "TEMP"] {
            environment.insert(name.into(), temp.path().into());
        }
    }
    if prepared.report.level == mcplex_sandbox::Level::Off && !spec.sandbox.enabled {
        tracing::warn!(server = %server, "\"sandbox\": false: this server runs with the gateway's authority (it can read the gateway's secrets)");
    } else {
        tracing::info!(server = %server, "isolation: {}", prepared.report.summary());
    }
    let mut command = command_of(&prepared, environment, spec.working_dir);
    let mut child = command.spawn().map_err(|e| ConnectError::Spawn {
        command: spec.command.to_owned(),
        reason: e.to_string(),
    })?;
    let temp = prepared.temp;
    let pid = child.id().ok_or(ConnectError::ExitedAtOnce)?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(ConnectError::NoPipes);
    };

    let closed = CancellationToken::new();
    let exited = CancellationToken::new();
    let exit = Arc::new(OnceLock::new());
    tokio::spawn(read_stderr(
        server.clone(),
        redactor.clone(),
        stderr,
        denied,
    ));
    tokio::spawn(wait_for_exit(
        server.clone(),
        child,
        pid,
        temp,
        exit.clone(),
        [exited.clone(), closed.clone()],
    ));
    let (lines, incoming) = lines_wire(server, redactor, stdout, stdin, closed.clone());
    let sender = Arc::new(StdioSender {
        lines,
        group: ProcessGroup {
            pgid: pid,
            terminated: AtomicBool::new(false),
        },
        exited,
        exit,
    });
    Ok((
        Wire {
            sender,
            incoming,
            closed,
            transport: mcplex_trace::Transport::Stdio,
        },
        prepared.report,
    ))
}

/// Whether `command` names a file: a path (relative to `working_dir`), or a name on `path`.
fn findable(command: &str, path: Option<&str>, working_dir: Option<&std::path::Path>) -> bool {
    if command.contains('/') {
        let command = std::path::Path::new(command);
        return match working_dir {
            Some(dir) if command.is_relative() => dir.join(command).is_file(),
            _ => command.is_file(),
        };
    }
    // With no PATH, execvp searches the system's default one.
    std::env::split_paths(path.unwrap_or("/usr/bin:/bin")).any(|dir| dir.join(command).is_file())
}

/// The process group of one child. Dropping it without `terminate` still SIGKILLs the group.
struct ProcessGroup {
    pgid: u32,
    terminated: AtomicBool,
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if !self.terminated.load(Ordering::SeqCst) {
            signal_group(self.pgid, SIGKILL);
        }
    }
}

struct StdioSender {
    lines: Arc<LinesSender>,
    group: ProcessGroup,
    exited: CancellationToken,
    /// How the process ended, once it was reaped.
    exit: Arc<OnceLock<String>>,
}

/// How long a lost connection's reason waits for its process to be reaped (its stdout closes
/// a moment before `wait` returns).
const EXIT_WAIT: Duration = Duration::from_millis(500);

impl WireSend for StdioSender {
    fn send(&self, message: Value) -> BoxFuture<'_, Result<(), SendError>> {
        Box::pin(async move { self.lines.write(&message).await })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if self.group.terminated.swap(true, Ordering::SeqCst) {
                return;
            }
            // Closing stdin is the polite request (the MCP stdio spec's first step).
            let _ = self.lines.shutdown().await;
            signal_group(self.group.pgid, SIGTERM);
            let _ = tokio::time::timeout(TERMINATE_GRACE, self.exited.cancelled()).await;
            // Grandchildren may outlive the child or ignore SIGTERM: kill whatever is left,
            // and see the child reaped, so that what it held (a lock, a port) is let go before
            // a successor starts (`succession.rs`); a SIGKILLed process still takes a moment to
            // die on a loaded machine.
            signal_group(self.group.pgid, SIGKILL);
            let _ = tokio::time::timeout(KILL_WAIT, self.exited.cancelled()).await;
        })
    }

    fn exit(&self) -> BoxFuture<'_, Option<String>> {
        Box::pin(async move {
            let _ = tokio::time::timeout(EXIT_WAIT, self.exited.cancelled()).await;
            self.exit.get().cloned()
        })
    }
}
