//! The gateway's side of one worker process: how it is started ([`WorkerCommand`]: only the
//! environment it names, its own session and process group, no inherited descriptors, `no_new_privs`,
//! stdin and stdout piped, stderr discarded, killed with the gateway and when dropped), and its JSON lines (reads are bounded, so a worker cannot make the gateway buffer
//! without end).

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// The program that serves one run as a worker (the binary hands it to the engine: its own
/// executable and its hidden worker subcommand).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerCommand {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// Its whole environment (nothing of the gateway's is passed on).
    pub env: Vec<(OsString, OsString)>,
}

/// A started worker.
pub(crate) struct Worker {
    child: Child,
    /// Its pid, which is also its process group's id (kept: a reaped child has no id).
    group: Option<u32>,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Worker {
    pub(crate) fn spawn(command: &WorkerCommand) -> io::Result<Worker> {
        let mut child = Command::new(&command.program);
        child
            .args(&command.args)
            .env_clear()
            .envs(command.env.iter().map(|(name, value)| (name, value)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        mcplex_sandbox::detach_child(child.as_std_mut(), true);
        let mut child = child.spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(io::Error::other("the worker's pipes are missing"));
        };
        Ok(Worker {
            group: child.id(),
            child,
            stdin,
            stdout: BufReader::new(stdout),
        })
    }

    /// Whether the process is still running (an idle worker may have been killed from outside).
    pub(crate) fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Writes `line` and a newline.
    pub(crate) async fn send(&mut self, line: &[u8]) -> io::Result<()> {
        self.stdin.write_all(line).await?;
        self.stdin.write_all(b"\n").await?;
        self.stdin.flush().await
    }

    /// The next line, without its newline; `None` once the worker closed its stdout. A line
    /// longer than `max` bytes is an error.
    pub(crate) async fn receive(&mut self, max: usize) -> io::Result<Option<Vec<u8>>> {
        let mut line = Vec::new();
        loop {
            let available = self.stdout.fill_buf().await?;
            if available.is_empty() {
                return Ok(None);
            }
            let (end, used) = match available.iter().position(|&b| b == b'\n') {
                Some(at) => (Some(at), at + 1),
                None => (None, available.len()),
            };
            line.extend_from_slice(&available[..end.unwrap_or(used)]);
            self.stdout.consume(used);
            if line.len() > max {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("a line of more than {max} bytes"),
                ));
            }
            if end.is_some() {
                return Ok(Some(line));
            }
        }
    }

    /// When the process has ended.
    pub(crate) async fn exited(&mut self) {
        let _ = self.child.wait().await;
    }

    /// SIGKILL now, to the worker and whatever it started (its process group; nothing of the
    /// run goes on after this returns); the exit is reaped in the background, off the run's
    /// answer.
    pub(crate) fn kill(mut self) {
        // Only while the worker is unreaped: a reaped worker's pid (its group's id) may already
        // name another process's group.
        if let (Some(group), Ok(None)) = (self.group, self.child.try_wait()) {
            mcplex_sandbox::signal_group(group, libc::SIGKILL);
        }
        let _ = self.child.start_kill();
        tokio::spawn(async move {
            let _ = self.child.wait().await;
        });
    }
}
