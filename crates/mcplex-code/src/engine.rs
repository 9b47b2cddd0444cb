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

use mcplex_protocol::json_len;

use crate::bounds::{
    MAX_BATCH_BYTES, MAX_LINE_FROM_WORKER, MAX_MESSAGE_BYTES, MAX_OUTCOME_BYTES, too_large,
    too_large_message,
};
use crate::error::{CALLS_LIMIT, MESSAGE_LIMIT, limit_named};
use crate::pool::Pool;
use crate::process::{Worker, WorkerCommand};
use crate::protocol::{CallOutcomes, FromWorkerText, RunRequest, ToolCall, WorkerOutcome};
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
    loop {
        // Bounded before anything is parsed, and then parsed only as far as the sizes of its
        // parts (the outcome, each call's arguments), which are checked before they are.
        let line = match worker.receive(MAX_LINE_FROM_WORKER).await {
            Ok(Some(line)) => line,
            Ok(None) => {
                return Err(RunError::Internal(
                    "the sandbox process ended without an outcome".into(),
                ));
            }
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                return Err(too_large_run(
                    "what the script sent at once",
                    MAX_BATCH_BYTES,
                ));
            }
            Err(e) => return Err(lost(e)),
        };
        let message: FromWorkerText = serde_json::from_slice(&line).map_err(unreadable)?;
        drop(line);
        match message {
            FromWorkerText::Calls(calls) => {
                // A worker that dies during the calls ends the run now, and the calls with it.
                let outcomes = tokio::select! {
                    outcomes = tally.call_batch(calls, host, &run.limits) => outcomes,
                    () = worker.exited() => {
                        return Err(RunError::Internal(
                            "the sandbox process ended during a tool call".into(),
                        ));
                    }
                };
                if let Some(hit) = &tally.hit {
                    return Err(hit.clone());
                }
                worker.send(&encode(&outcomes)?).await.map_err(lost)?;
            }
            FromWorkerText::Done(outcome) => {
                if outcome.get().len() > MAX_OUTCOME_BYTES {
                    return Err(too_large_run("the script's result", MAX_MESSAGE_BYTES));
                }
                let outcome: WorkerOutcome =
                    serde_json::from_str(outcome.get()).map_err(unreadable)?;
                return outcome_of(outcome);
            }
        }
    }
}

fn unreadable(e: serde_json::Error) -> RunError {
    RunError::Internal(format!(
        "the sandbox process said something unreadable: {e}"
    ))
}

/// A run ended because the script sent more than `bound` bytes at once.
fn too_large_run(what: &str, bound: usize) -> RunError {
    RunError::Limit {
        limit: MESSAGE_LIMIT,
        message: too_large_message(what, bound),
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
    /// Records a limit hit (the first one wins): it is the run's outcome.
    fn limit(&mut self, limit: &'static str, message: String) {
        if self.hit.is_none() {
            self.hit = Some(RunError::Limit { limit, message });
        }
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
            self.limit(
                CALLS_LIMIT,
                format!(
                    "the script made too many tool calls: {CALLS_LIMIT} is {}",
                    limits.max_tool_calls
                ),
            );
            // The run ends with this limit (`drive` stops at it): the calls get no answer.
            return Vec::new();
        }
        let outcomes: CallOutcomes = futures::stream::iter(calls)
            .map(|call| {
                let name = call.name;
                let args = match call.args {
                    None => Ok(Value::Null),
                    Some(args) if args.get().len() > MAX_MESSAGE_BYTES => Err(too_large(
                        "a tool call's arguments",
                        MAX_MESSAGE_BYTES,
                    )),
                    Some(args) => serde_json::from_str(args.get()).map_err(|e| {
                        json!({"error": format!("the arguments for {name} are not JSON: {e}"), "error_type": ErrorType::InvalidParams})
                    }),
                };
                async move {
                    match args {
                        Ok(args) => host.call(name, args).await,
                        Err(body) => Err(body),
                    }
                }
            })
            .buffered(limits.parallelism.max(1))
            .map(|outcome| match outcome {
                Ok(raw) => result_for_script(&raw),
                Err(body) => Err(body),
            })
            .collect()
            .await;
        bounded(outcomes)
    }
}

/// The outcomes of a batch as the worker may receive them: each at most [`MAX_MESSAGE_BYTES`] of
/// JSON and all together at most [`MAX_BATCH_BYTES`]; one over either is replaced by an error
/// that says so (the script's call fails with it; the run goes on).
fn bounded(outcomes: CallOutcomes) -> CallOutcomes {
    let mut total = 0usize;
    outcomes
        .into_iter()
        .map(|outcome| {
            // The outcome as the line carries it (`{"Ok":…}`), and its comma.
            let size = json_len(&outcome, MAX_MESSAGE_BYTES + 16).saturating_add(1);
            let refusal = if size > MAX_MESSAGE_BYTES + 16 {
                too_large("the tool's result", MAX_MESSAGE_BYTES)
            } else if total.saturating_add(size) > MAX_BATCH_BYTES {
                too_large(
                    "the results of this batch of tool calls together",
                    MAX_BATCH_BYTES,
                )
            } else {
                total += size;
                return outcome;
            };
            // A refusal is small; it counts too.
            total = total.saturating_add(json_len(&refusal, usize::MAX));
            Err(refusal)
        })
        .collect()
}
