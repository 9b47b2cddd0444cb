//! The worker process's side: [`serve_worker`] serves exactly one run on stdin/stdout and
//! returns, and the process exits with it. The sandbox is created before the run arrives (a
//! pooled worker is warm). A thread reads stdin throughout and ends the process the moment stdin
//! closes (the gateway went away), whatever the script is doing; another ends it shortly after
//! the run's own deadline, should the gateway's kill never come.

use mcplex_protocol::ErrorType;
use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};

use crate::protocol::{CallOutcomes, FromWorker, RunRequest, ToolCall, WorkerOutcome};
use crate::sandbox::{Bridge, Sandbox};

/// How long after its deadline a worker ends itself (the gateway kills it at the deadline).
const GRACE: Duration = Duration::from_secs(2);

/// The worker's main: reads the run request, runs it, writes the outcome. Meant to be called by
/// the binary's hidden worker subcommand before anything else starts (no async runtime, no
/// logging: stdout is the protocol, stderr goes nowhere).
pub fn serve_worker() -> ExitCode {
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

impl Bridge for Pipe {
    fn call_batch(&self, calls: Vec<ToolCall>) -> CallOutcomes {
        let count = calls.len();
        send(&FromWorker::Calls(calls));
        let outcomes = self
            .next_line()
            .and_then(|line| serde_json::from_str::<CallOutcomes>(&line).ok())
            .filter(|outcomes| outcomes.len() == count);
        outcomes.unwrap_or_else(|| {
            let body: Value = json!({"error": "the gateway's answer to the tool calls was unreadable", "error_type": ErrorType::Internal});
            vec![Err(body); count]
        })
    }
}
