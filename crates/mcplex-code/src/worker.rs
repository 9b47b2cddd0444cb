//! The worker process's side: [`serve_worker`] serves exactly one run on stdin/stdout and
//! returns, and the process exits with it. The sandbox is created before the run arrives (a
//! pooled worker is warm). A thread reads stdin throughout and ends the process the moment stdin
//! closes (the gateway went away), whatever the script is doing; another ends it shortly after
//! the run's own deadline, should the gateway's kill never come.

use mcplex_protocol::ErrorType;
use std::io::{BufRead, Read, Write};
use std::process::ExitCode;
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::bounds::{MAX_BATCH_BYTES, MAX_MESSAGE_BYTES, too_large};
use crate::protocol::{CallOutcomesText, FromWorker, RunRequest, ToolCall, WorkerOutcome, raw};
use crate::sandbox::{Bridge, Sandbox};
use mcplex_protocol::json_len;

/// How long after its deadline a worker ends itself (the gateway kills it at the deadline).
const GRACE: Duration = Duration::from_secs(2);

/// A worker's data (heap and private writable mappings) may be this many times its run's
/// JavaScript heap (the heap, the result's text as JavaScript and as UTF-8, its tree)…
const DATA_PER_HEAP_BYTE: u64 = 4;
/// …plus this much over what it maps when its run arrives: the engine, the threads' stacks,
/// the allocator's bookkeeping.
const DATA_HEADROOM: u64 = 256 * 1024 * 1024;

/// The worker's main: reads the run request, runs it, writes the outcome. Meant to be called by
/// the binary's hidden worker subcommand before anything else starts (no async runtime, no
/// logging: stdout is the protocol, stderr goes nowhere).
pub fn serve_worker() -> ExitCode {
    // Read once the run arrives, to bound the data; opened now, while files can be opened.
    let status = std::fs::File::open("/proc/self/status").ok();
    // A script that escapes QuickJS finds nothing to act on: no file, socket, program, other
    // process or capability. Before any thread starts, so that every thread is confined.
    if let Err(e) = mcplex_sandbox::confine_to_compute() {
        send(&FromWorker::Done(WorkerOutcome::Internal(format!(
            "the worker cannot confine itself: {e}"
        ))));
        return ExitCode::FAILURE;
    }
    let (lines, replies) = channel::<String>();
    thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
        // stdin closed: the gateway is done with this worker (or gone).
        std::process::exit(0);
    });
    let bridge = Arc::new(Pipe {
        replies: Mutex::new(replies),
    });
    let sandbox = Sandbox::new(bridge.clone());
    let Some(line) = bridge.next_line() else {
        return ExitCode::SUCCESS;
    };
    let request: RunRequest = match serde_json::from_str(&line) {
        Ok(request) => request,
        Err(e) => {
            send(&FromWorker::Done(WorkerOutcome::Internal(format!(
                "the worker could not read its run: {e}"
            ))));
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = bound_data(status, request.memory_bytes) {
        send(&FromWorker::Done(WorkerOutcome::Internal(format!(
            "the worker could not bound its memory: {e}"
        ))));
        return ExitCode::FAILURE;
    }
    let lifetime = Duration::from_millis(request.timeout_ms) + GRACE;
    thread::spawn(move || {
        thread::sleep(lifetime);
        std::process::exit(3);
    });
    let outcome = match sandbox {
        Ok(sandbox) => sandbox.run(&request),
        Err(e) => WorkerOutcome::Internal(e.to_string()),
    };
    send(&FromWorker::Done(outcome));
    ExitCode::SUCCESS
}

/// Bounds the worker's data from its run's memory limit, before anything of the run starts: a
/// runaway (the engine's own allocations outside the JavaScript heap, a result's text) dies at
/// the bound instead of taking the machine's memory. The bound is over what the process already
/// maps (an allocator that reserves an arena up front has the kernel count the reservation: the
/// gateway's binary tells its allocator not to); a kernel without `/proc` leaves the worker
/// unbounded.
fn bound_data(status: Option<std::fs::File>, memory_bytes: usize) -> std::io::Result<()> {
    let Some(mapped) = status
        .and_then(|mut file| {
            let mut text = String::new();
            file.read_to_string(&mut text).ok().map(|_| text)
        })
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmData:"))?
                .split_whitespace()
                .next()?
                .parse::<u64>()
                .ok()
        })
    else {
        return Ok(());
    };
    let data = mapped
        .saturating_mul(1024)
        .saturating_add(
            u64::try_from(memory_bytes)
                .unwrap_or(u64::MAX)
                .saturating_mul(DATA_PER_HEAP_BYTE),
        )
        .saturating_add(DATA_HEADROOM);
    mcplex_sandbox::limit_data(data)
}

/// Writes one message line; a gateway that stopped listening ends the worker.
fn send(message: &FromWorker) {
    let Ok(mut line) = serde_json::to_vec(message) else {
        std::process::exit(1);
    };
    line.push(b'\n');
    let mut stdout = std::io::stdout().lock();
    if stdout
        .write_all(&line)
        .and_then(|()| stdout.flush())
        .is_err()
    {
        std::process::exit(1);
    }
}

/// Tool calls over the pipes: a `calls` line out, the outcomes line back.
struct Pipe {
    replies: Mutex<Receiver<String>>,
}

impl Pipe {
    fn next_line(&self) -> Option<String> {
        self.replies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .recv()
            .ok()
    }
}

impl Pipe {
    /// Sends calls the gateway will take and reads their outcomes.
    fn exchange(&self, calls: Vec<ToolCall>) -> CallOutcomesText {
        let count = calls.len();
        send(&FromWorker::Calls(calls));
        let outcomes = self
            .next_line()
            .and_then(|line| serde_json::from_str::<CallOutcomesText>(&line).ok())
            .filter(|outcomes| outcomes.len() == count);
        outcomes.unwrap_or_else(|| vec![Err(unreadable()); count])
    }
}

fn unreadable() -> Box<RawValue> {
    raw(
        &json!({"error": "the gateway's answer to the tool calls was unreadable", "error_type": ErrorType::Internal}),
    )
}

impl Bridge for Pipe {
    /// Calls too large to send (their arguments, or the batch so far) are answered here with a
    /// clear error; the others go to the gateway, which checks the same bounds.
    fn call_batch(&self, calls: Vec<ToolCall>) -> CallOutcomesText {
        let mut refused: Vec<Option<Value>> = Vec::with_capacity(calls.len());
        let mut sent = Vec::new();
        let mut total = 0usize;
        for call in calls {
            // The call as the line carries it, and its comma.
            let size = json_len(&call, MAX_BATCH_BYTES).saturating_add(1);
            if call
                .args
                .as_ref()
                .is_some_and(|args| args.get().len() > MAX_MESSAGE_BYTES)
            {
                refused.push(Some(too_large(
                    "a tool call's arguments",
                    MAX_MESSAGE_BYTES,
                )));
            } else if total.saturating_add(size) > MAX_BATCH_BYTES {
                refused.push(Some(too_large(
                    "a batch of tool calls (names and arguments together)",
                    MAX_BATCH_BYTES,
                )));
            } else {
                total += size;
                refused.push(None);
                sent.push(call);
            }
        }
        let mut answers = if sent.is_empty() {
            Vec::new().into_iter()
        } else {
            self.exchange(sent).into_iter()
        };
        refused
            .into_iter()
            .map(|refusal| match refusal {
                Some(body) => Err(raw(&body)),
                None => answers.next().unwrap_or_else(|| Err(unreadable())),
            })
            .collect()
    }
}
