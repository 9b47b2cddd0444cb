//! [`Engine::run`]: one script in one worker process. The engine waits for a fair slot, takes a
//! warm worker, sends it the run, answers its tool calls through the [`ToolHost`], and kills it
//! when the run ends: at its outcome, at the deadline (whatever the script is doing, a long
//! native call included), or when the client cancels. Tool calls are counted and bounded here,
//! not in the worker.

use mcplex_protocol::ErrorType;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::{CALLS_LIMIT, MEMORY_LIMIT, limit_named};
use crate::pool::Pool;
use crate::process::{Worker, WorkerCommand};
use crate::protocol::{CallOutcomes, FromWorker, RunRequest, ToolCall, WorkerOutcome};
use crate::slots::Slots;
use crate::{RunError, ToolHost, result_for_script};

/// The limits of one run.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Wall-clock time for the whole run, tool calls included.
    pub timeout: Duration,
    /// The JavaScript heap.
    pub memory_bytes: usize,
    pub max_tool_calls: usize,
    /// How many calls of one `call_tools` batch run at once.
    pub parallelism: usize,
}

/// One script to run.
#[derive(Debug, Clone)]
pub struct Run {
    /// Who asked (a token's name, or the local user): runs are bounded and shared per caller.
    pub caller: String,
    /// The body of an async function of `input`.
    pub code: String,
    pub input: Value,
    pub limits: Limits,
}

/// What a successful run returned.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The script's return value (`null` when it returned nothing).
    pub value: Value,
    pub tool_calls: usize,
}

/// How an engine runs scripts.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// The worker program (the gateway's own executable and its hidden worker subcommand).
    pub worker: WorkerCommand,
    /// Scripts that run at once; more wait their turn.
    pub concurrent_runs: usize,
    /// Scripts one caller runs at once.
    pub per_caller: usize,
    /// Workers kept started and idle.
    pub warm: usize,
}

/// The sandbox. Cheap to share; runs are independent processes.
pub struct Engine {
    pool: Arc<Pool>,
    slots: Arc<Slots>,
}

impl Engine {
    /// Must be called inside a Tokio runtime: the warm workers are started on it.
    pub fn new(options: EngineOptions) -> Engine {
        Engine {
            pool: Pool::new(options.worker, options.warm),
            slots: Slots::new(options.concurrent_runs, options.per_caller),
        }
    }

    /// Runs a script. Cancelling `cancel` (the client went away or cancelled) stops the script
    /// and its tool calls like a deadline would.
    pub async fn run(
        &self,
        run: Run,
        host: Arc<dyn ToolHost>,
        cancel: CancellationToken,
    ) -> Result<Outcome, RunError> {
        let slot = tokio::select! {
            slot = self.slots.acquire(&run.caller) => slot,
            () = cancel.cancelled() => return Err(RunError::cancelled()),
        };
        let deadline = Instant::now() + run.limits.timeout;
        let mut worker = self
            .pool
            .take()
            .map_err(|e| RunError::Internal(format!("cannot start the sandbox process: {e}")))?;
        let mut tally = Tally {
            calls: 0,
            hit: None,
        };
        let ended = tokio::select! {
            ended = drive(&mut worker, &run, host.as_ref(), &mut tally) => ended,
            () = tokio::time::sleep_until(deadline) => Err(RunError::timeout(run.limits.timeout.as_millis())),
            () = cancel.cancelled() => Err(RunError::cancelled()),
        };
        // Whatever the script left behind (pending jobs, a loop, a native call) ends here.
        worker.kill();
        drop(slot);
        self.pool.refill();
        if let Some(hit) = tally.hit {
            return Err(hit);
        }
        ended.map(|value| Outcome {
            value,
            tool_calls: tally.calls,
        })
    }
}

/// What the gateway counts of a run.
struct Tally {
    calls: usize,
    /// The first limit the gateway enforced; it decides the outcome even if the script caught
    /// the error its call got.
    hit: Option<RunError>,
}

/// Sends the run and answers the worker until its outcome.
async fn drive(
    worker: &mut Worker,
    run: &Run,
    host: &dyn ToolHost,
    tally: &mut Tally,
) -> Result<Value, RunError> {
    let request = RunRequest {
        code: run.code.clone(),
        input: run.input.clone(),
        timeout_ms: u64::try_from(run.limits.timeout.as_millis()).unwrap_or(u64::MAX),
        memory_bytes: run.limits.memory_bytes,
    };
    let lost = |e: std::io::Error| {
        RunError::Internal(format!("the sandbox process stopped answering: {e}"))
    };
    worker.send(&encode(&request)?).await.map_err(lost)?;
    // A result is JSON of at most the heap's size (UTF-16 text may grow in UTF-8).
    let max_line = run
        .limits
        .memory_bytes
        .saturating_mul(4)
        .saturating_add(1 << 20);
    loop {
        let line = match worker.receive(max_line).await {
            Ok(Some(line)) => line,
            Ok(None) => {
                return Err(RunError::Internal(
                    "the sandbox process ended without an outcome".into(),
                ));
            }
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                return Err(RunError::Limit {
                    limit: MEMORY_LIMIT,
                    message: format!(
                        "the script's result is too large: {MEMORY_LIMIT} is {} bytes",
                        run.limits.memory_bytes
                    ),
                });
            }
            Err(e) => return Err(lost(e)),
        };
        let message: FromWorker = serde_json::from_slice(&line).map_err(|e| {
            RunError::Internal(format!(
                "the sandbox process said something unreadable: {e}"
            ))
        })?;
        match message {
            FromWorker::Calls(calls) => {
                let outcomes = tally.call_batch(calls, host, &run.limits).await;
                worker.send(&encode(&outcomes)?).await.map_err(lost)?;
            }
            FromWorker::Done(outcome) => return outcome_of(outcome),
        }
    }
}

fn encode(message: &impl serde::Serialize) -> Result<Vec<u8>, RunError> {
    serde_json::to_vec(message)
        .map_err(|e| RunError::Internal(format!("cannot encode for the sandbox: {e}")))
}

fn outcome_of(outcome: WorkerOutcome) -> Result<Value, RunError> {
    match outcome {
        WorkerOutcome::Value(value) => Ok(value),
        WorkerOutcome::Limit { limit, message } => match limit_named(&limit) {
            Some(limit) => Err(RunError::Limit { limit, message }),
            None => Err(RunError::Internal(message)),
        },
        WorkerOutcome::Script {
            message,
            line,
            body,
        } => Err(RunError::Script {
            message,
            line,
            body,
        }),
        WorkerOutcome::Internal(message) => Err(RunError::Internal(message)),
    }
}

impl Tally {
    /// Records a limit hit (the first one wins) and returns the body the script's error carries.
    fn limit(&mut self, limit: &'static str, message: String) -> Value {
        let body =
            json!({"error": message, "error_type": ErrorType::LimitExceeded, "limit": limit});
        if self.hit.is_none() {
            self.hit = Some(RunError::Limit { limit, message });
        }
        body
    }

    /// Runs a batch through the host, at most `parallelism` calls at once. The deadline and
    /// cancellation are the run's: `drive` is dropped at either, and the calls in flight with it
    /// (which cancels them upstream).
    async fn call_batch(
        &mut self,
        calls: Vec<ToolCall>,
        host: &dyn ToolHost,
        limits: &Limits,
    ) -> CallOutcomes {
        let count = calls.len();
        self.calls += count;
        if self.calls > limits.max_tool_calls {
            let body = self.limit(
                CALLS_LIMIT,
                format!(
                    "the script made too many tool calls: {CALLS_LIMIT} is {}",
                    limits.max_tool_calls
                ),
            );
            return vec![Err(body); count];
        }
        futures::stream::iter(calls)
            .map(|call| host.call(call.name, call.args))
            .buffered(limits.parallelism.max(1))
            .map(|outcome| match outcome {
                Ok(raw) => result_for_script(&raw),
                Err(body) => Err(body),
            })
            .collect()
            .await
    }
}
