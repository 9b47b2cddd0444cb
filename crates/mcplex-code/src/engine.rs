//! [`Engine::run`]: one script, one fresh context on a warm runtime, on a blocking thread.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use futures::StreamExt;
use rquickjs::context::EvalOptions;
use rquickjs::{Context, Ctx, Function, Promise, Runtime};
use serde_json::{Value, json};
use tokio::runtime::Handle;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::pool::Pool;
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

/// What a successful run returned.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The script's return value (`null` when it returned nothing).
    pub value: Value,
    pub tool_calls: usize,
}

/// The sandbox. Cheap to share; runs are independent.
pub struct Engine {
    pool: Arc<Pool>,
    runs: Arc<Semaphore>,
    handle: Handle,
}

/// The JavaScript stack a run may use.
const STACK_BYTES: usize = 1024 * 1024;

/// Installs `call_tool` and `call_tools` over the two raw host functions, then hides those.
const PRELUDE: &str = r#"(() => {
  const one = globalThis.__mcplex_call, batch = globalThis.__mcplex_call_batch;
  delete globalThis.__mcplex_call;
  delete globalThis.__mcplex_call_batch;
  const failure = (r) => { const e = new Error(r.message); e.body = r.error; return e; };
  const args = (a) => (a === undefined || a === null ? {} : a);
  globalThis.call_tool = (name, a) => {
    const r = JSON.parse(one(String(name), JSON.stringify(args(a))));
    if ('error' in r) throw failure(r);
    return r.ok;
  };
  globalThis.call_tools = (calls) => {
    if (!Array.isArray(calls)) throw new TypeError('call_tools takes an array of {name, args}');
    const rs = JSON.parse(batch(JSON.stringify(calls.map((c) => ({ name: String(c.name), args: args(c.args) })))));
    const bad = rs.find((r) => 'error' in r);
    if (bad) { const e = failure(bad); e.results = rs; throw e; }
    return rs.map((r) => r.ok);
  };
})();"#;

const FILENAME: &str = "script.js";

impl Engine {
    /// An engine that runs at most `concurrent_runs` scripts at once (more wait their turn),
    /// with `warm` runtimes created up front. Must be called inside a Tokio runtime: tool calls
    /// run on it.
    pub fn new(concurrent_runs: usize, warm: usize) -> Engine {
        let pool = Arc::new(Pool::default());
        pool.warm(warm);
        Engine {
            pool,
            runs: Arc::new(Semaphore::new(concurrent_runs.max(1))),
            handle: Handle::current(),
        }
    }

    /// Runs `code` as the body of an async function of `input`. Cancelling `cancel` (the client
    /// went away or cancelled) stops the script and its tool calls like a deadline would.
    pub async fn run(
        &self,
        code: String,
        input: Value,
        limits: Limits,
        host: Arc<dyn ToolHost>,
        cancel: CancellationToken,
    ) -> Result<Outcome, RunError> {
        let _permit = self
            .runs
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| RunError::Internal("the engine is shut down".into()))?;
        let pool = self.pool.clone();
        let handle = self.handle.clone();
        tokio::task::spawn_blocking(move || {
            let state = Arc::new(RunState {
                deadline: Instant::now() + limits.timeout,
                limits,
                calls: AtomicUsize::new(0),
                hit: Mutex::new(None),
                host,
                handle,
                cancel,
            });
            run_blocking(&pool, code, &input, &state)
        })
        .await
        .map_err(|e| RunError::Internal(format!("the script thread failed: {e}")))?
    }
}

/// Everything a run's host functions share.
struct RunState {
    deadline: Instant,
    limits: Limits,
    calls: AtomicUsize,
    /// The first limit hit; it decides the run's outcome even if the script catches its error.
    hit: Mutex<Option<RunError>>,
    host: Arc<dyn ToolHost>,
    handle: Handle,
    cancel: CancellationToken,
}

fn run_blocking(
    pool: &Pool,
    code: String,
    input: &Value,
    state: &Arc<RunState>,
) -> Result<Outcome, RunError> {
    let runtime = pool
        .take()
        .map_err(|e| RunError::Internal(format!("cannot start the JavaScript engine: {e}")))?;
    runtime.set_memory_limit(state.limits.memory_bytes);
    runtime.set_max_stack_size(STACK_BYTES);
    let deadline = state.deadline;
    let cancel = state.cancel.clone();
    runtime.set_interrupt_handler(Some(Box::new(move || {
        Instant::now() >= deadline || cancel.is_cancelled()
    })));
    let outcome = evaluate(&runtime, code, input, state);
    let exhausted =
        matches!(&outcome, Err(RunError::Limit { limit, .. }) if *limit == MEMORY_LIMIT);
    if !exhausted {
        pool.give_back(runtime);
    }
    outcome
}

const TIMEOUT_LIMIT: &str = "timeout_ms";
const MEMORY_LIMIT: &str = "code_execution_memory_limit";
const CALLS_LIMIT: &str = "code_execution_max_tool_calls";
/// Not a limit, but it ends a run the same way: the client cancelled or went away.
const CANCELLED: &str = "cancelled";
const CANCELLED_MESSAGE: &str = "the run was cancelled by the client";

fn evaluate(
    runtime: &Runtime,
    code: String,
    input: &Value,
    state: &Arc<RunState>,
) -> Result<Outcome, RunError> {
    let context = Context::full(runtime)
        .map_err(|e| RunError::Internal(format!("cannot create a context: {e}")))?;
    let result = context.with(|ctx| -> Result<String, RunError> {
        install(&ctx, state, input).map_err(|e| failure(&ctx, e, state))?;
        // The body starts on line 1 of script.js, so the engine's line numbers are the script's.
        let source = format!(
            "(async function (input) {{{code}\n}})(JSON.parse(__mcplex_input)).then((v) => {{ const s = JSON.stringify(v); return s === undefined ? 'null' : s; }})"
        );
        let mut options = EvalOptions::default();
        options.filename = Some(FILENAME.to_owned());
        let promise: Promise = ctx
            .eval_with_options(source, options)
            .map_err(|e| failure(&ctx, e, state))?;
        promise
            .finish::<String>()
            .map_err(|e| failure(&ctx, e, state))
    });
    if let Some(limit) = state.first_limit() {
        return Err(limit);
    }
    let text = result?;
    let value = serde_json::from_str(&text)
        .map_err(|e| RunError::Internal(format!("the script's value is not JSON: {e}")))?;
    Ok(Outcome {
        value,
        tool_calls: state.calls.load(Ordering::SeqCst),
    })
}

/// Defines `input`, the raw host functions and the prelude in a fresh context.
fn install<'js>(ctx: &Ctx<'js>, state: &Arc<RunState>, input: &Value) -> rquickjs::Result<()> {
    let globals = ctx.globals();
    globals.set("__mcplex_input", input.to_string())?;
    let one = state.clone();
    globals.set(
        "__mcplex_call",
        Function::new(ctx.clone(), move |name: String, arguments: String| {
            let arguments = serde_json::from_str(&arguments).unwrap_or(Value::Null);
            let mut outcomes = one.call_batch(vec![(name, arguments)]);
            envelope(
                outcomes
                    .pop()
                    .unwrap_or_else(|| Err(json!({"error": "no outcome"}))),
            )
            .to_string()
        })?,
    )?;
    let batch = state.clone();
    globals.set(
        "__mcplex_call_batch",
        Function::new(ctx.clone(), move |calls: String| {
            let calls: Vec<(String, Value)> = serde_json::from_str::<Vec<Value>>(&calls)
                .unwrap_or_default()
                .into_iter()
                .map(|c| {
                    let name = c["name"].as_str().unwrap_or_default().to_owned();
                    (name, c["args"].clone())
                })
                .collect();
            let outcomes: Vec<Value> = batch.call_batch(calls).into_iter().map(envelope).collect();
            Value::Array(outcomes).to_string()
        })?,
    )?;
    ctx.eval::<(), _>(PRELUDE)
}

/// `{"ok": value}` or `{"error": body, "message": text}` for the prelude.
fn envelope(outcome: Result<Value, Value>) -> Value {
    match outcome {
        Ok(value) => json!({"ok": value}),
        Err(body) => {
            let message = body["error"]
                .as_str()
                .or_else(|| body["message"].as_str())
                .map(str::to_owned)
                .unwrap_or_else(|| body.to_string());
            json!({"error": body, "message": message})
        }
    }
}

impl RunState {
    fn first_limit(&self) -> Option<RunError> {
        self.hit
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Records a limit hit (the first one wins) and returns the body the script's error carries.
    fn limit(&self, limit: &'static str, message: String) -> Value {
        let mut hit = self.hit.lock().unwrap_or_else(PoisonError::into_inner);
        if hit.is_none() {
            *hit = Some(RunError::Limit {
                limit,
                message: message.clone(),
            });
        }
        json!({"error": message, "error_type": "limit_exceeded", "limit": limit})
    }

    fn timeout_message(&self) -> String {
        format!(
            "the script ran out of time: timeout_ms {} reached",
            self.limits.timeout.as_millis()
        )
    }

    /// Runs tool calls on the gateway's runtime, at most `parallelism` at once, until they finish
    /// or the deadline passes (calls still running are then cancelled). Outcomes in call order.
    fn call_batch(&self, calls: Vec<(String, Value)>) -> Vec<Result<Value, Value>> {
        let count = calls.len();
        let used = self.calls.fetch_add(count, Ordering::SeqCst);
        if used + count > self.limits.max_tool_calls {
            let body = self.limit(
                CALLS_LIMIT,
                format!(
                    "the script made too many tool calls: {CALLS_LIMIT} is {}",
                    self.limits.max_tool_calls
                ),
            );
            return vec![Err(body); count];
        }
        if Instant::now() >= self.deadline {
            let body = self.limit(TIMEOUT_LIMIT, self.timeout_message());
            return vec![Err(body); count];
        }
        if self.cancel.is_cancelled() {
            let body = self.limit(CANCELLED, CANCELLED_MESSAGE.to_owned());
            return vec![Err(body); count];
        }
        let host = self.host.clone();
        let handle = self.handle.clone();
        let all = futures::stream::iter(calls)
            .map(move |(name, arguments)| {
                let call = host.call(name, arguments);
                AbortOnDrop(handle.spawn(call))
            })
            .buffered(self.limits.parallelism.max(1))
            .collect::<Vec<_>>();
        let deadline = tokio::time::Instant::from_std(self.deadline);
        let cancel = self.cancel.clone();
        let finished = self.handle.block_on(async move {
            tokio::select! {
                outcomes = tokio::time::timeout_at(deadline, all) => Some(outcomes),
                () = cancel.cancelled() => None,
            }
        });
        let Some(finished) = finished else {
            let body = self.limit(CANCELLED, CANCELLED_MESSAGE.to_owned());
            return vec![Err(body); count];
        };
        match finished {
            Ok(outcomes) => outcomes
                .into_iter()
                .map(|joined| match joined {
                    Ok(Ok(raw)) => result_for_script(&raw),
                    Ok(Err(body)) => Err(body),
                    Err(e) => Err(json!({"error": format!("the tool call failed: {e}"), "error_type": "internal"})),
                })
                .collect(),
            Err(_) => {
                let body = self.limit(TIMEOUT_LIMIT, self.timeout_message());
                vec![Err(body); count]
            }
        }
    }
}

/// A spawned tool call that is cancelled when its run stops waiting for it.
struct AbortOnDrop(JoinHandle<Result<Value, Value>>);

impl Future for AbortOnDrop {
    type Output = Result<Result<Value, Value>, tokio::task::JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx)
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A failed evaluation as a [`RunError`]: limits first (the deadline interrupts with an
/// uncatchable error; memory exhaustion throws one), then the script's own error and line.
fn failure(ctx: &Ctx<'_>, error: rquickjs::Error, state: &RunState) -> RunError {
    if Instant::now() >= state.deadline {
        state.limit(TIMEOUT_LIMIT, state.timeout_message());
    } else if state.cancel.is_cancelled() {
        state.limit(CANCELLED, CANCELLED_MESSAGE.to_owned());
    }
    if let Some(limit) = state.first_limit() {
        return limit;
    }
    let (message, stack) = match error {
        rquickjs::Error::Exception => thrown(ctx),
        rquickjs::Error::Allocation => ("out of memory".to_owned(), None),
        rquickjs::Error::WouldBlock => (
            "the script awaited something that never settles (there are no timers or I/O here)"
                .to_owned(),
            None,
        ),
        other => (other.to_string(), None),
    };
    if message.contains("out of memory") {
        let message = format!(
            "the script ran out of memory: {MEMORY_LIMIT} is {} bytes",
            state.limits.memory_bytes
        );
        state.limit(MEMORY_LIMIT, message);
        return state
            .first_limit()
            .unwrap_or(RunError::Internal("out of memory".into()));
    }
    let line = stack.as_deref().and_then(line_of);
    RunError::Script { message, line }
}

/// The pending exception's message and stack.
fn thrown(ctx: &Ctx<'_>) -> (String, Option<String>) {
    let value = ctx.catch();
    if let Some(exception) = value.as_exception() {
        let name = exception
            .get::<_, String>("name")
            .unwrap_or_else(|_| "Error".to_owned());
        let message = exception.message().unwrap_or_default();
        return (format!("{name}: {message}"), exception.stack());
    }
    if let Some(text) = value.as_string().and_then(|s| s.to_string().ok()) {
        return (format!("uncaught {text:?}"), None);
    }
    let shown = ctx
        .json_stringify(value)
        .ok()
        .flatten()
        .and_then(|s| s.to_string().ok())
        .unwrap_or_else(|| "a value".to_owned());
    (format!("uncaught {shown}"), None)
}

/// The first `script.js:LINE` in a stack trace.
fn line_of(stack: &str) -> Option<u32> {
    let at = stack.find("script.js:")? + "script.js:".len();
    let digits: String = stack[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}
