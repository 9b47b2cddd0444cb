//! One script in QuickJS, in the calling thread: a fresh runtime and context with the script API
//! (`call_tool`, `call_tools`, `input`) installed as a prelude over two host functions, and the
//! in-engine limits (memory, stack, and the deadline through the interrupt handler, which runs
//! between bytecodes). Tool calls leave through a [`Bridge`]. Runs inside a worker process, so
//! nothing here has to survive or clean up after a runaway: the gateway kills the process.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rquickjs::context::EvalOptions;
use rquickjs::{Context, Ctx, Function, Promise, Runtime};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::bounds::{MAX_BATCH_BYTES, MAX_MESSAGE_BYTES, too_large, too_large_message};
use crate::error::{EngineError, MEMORY_LIMIT, MESSAGE_LIMIT, TIMEOUT_LIMIT, timeout_message};
use crate::protocol::{CallOutcomesText, RunRequest, ToolCall, WorkerOutcome, raw};

/// Where a script's tool calls go: blocks until the outcomes of the batch are known.
pub(crate) trait Bridge: Send + Sync + 'static {
    fn call_batch(&self, calls: Vec<ToolCall>) -> CallOutcomesText;
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

/// A runtime and context with the script API installed, waiting for its one run. Creating it
/// before the run arrives is what makes a warm worker fast.
pub(crate) struct Sandbox {
    runtime: Runtime,
    context: Context,
}

impl Sandbox {
    pub(crate) fn new(bridge: Arc<dyn Bridge>) -> Result<Sandbox, EngineError> {
        let runtime = Runtime::new().map_err(|e| EngineError::Runtime(e.to_string()))?;
        let context = Context::full(&runtime).map_err(|e| EngineError::Context(e.to_string()))?;
        context
            .with(|ctx| install(&ctx, bridge))
            .map_err(|e| EngineError::Install(e.to_string()))?;
        Ok(Sandbox { runtime, context })
    }

    /// Runs `request.code` as the body of an async function of `input`, within the request's
    /// memory limit and deadline.
    pub(crate) fn run(self, request: &RunRequest) -> WorkerOutcome {
        let timeout = Duration::from_millis(request.timeout_ms);
        let deadline = Instant::now() + timeout;
        self.runtime.set_memory_limit(request.memory_bytes);
        self.runtime.set_max_stack_size(STACK_BYTES);
        self.runtime
            .set_interrupt_handler(Some(Box::new(move || Instant::now() >= deadline)));
        let limits = Run {
            deadline,
            timeout,
            memory_bytes: request.memory_bytes,
            hit: Mutex::new(None),
        };
        let result = self.context.with(|ctx| -> Result<String, WorkerOutcome> {
            ctx.globals()
                .set("__mcplex_input", request.input.to_string())
                .map_err(|e| limits.failure(&ctx, e))?;
            // The body starts on line 1 of script.js, so the engine's line numbers are the
            // script's.
            let source = format!(
                "(async function (input) {{{}\n}})(JSON.parse(__mcplex_input)).then((v) => {{ const s = JSON.stringify(v); return s === undefined ? 'null' : s; }})",
                request.code
            );
            let mut options = EvalOptions::default();
            options.filename = Some(FILENAME.to_owned());
            let promise: Promise = ctx
                .eval_with_options(source, options)
                .map_err(|e| limits.failure(&ctx, e))?;
            promise
                .finish::<String>()
                .map_err(|e| limits.failure(&ctx, e))
        });
        if let Some((limit, message)) = limits.first_limit() {
            return WorkerOutcome::Limit {
                limit: limit.to_owned(),
                message,
            };
        }
        match result {
            // Checked before it is parsed, here and again by the gateway.
            Ok(text) if text.len() > MAX_MESSAGE_BYTES => WorkerOutcome::Limit {
                limit: MESSAGE_LIMIT.to_owned(),
                message: too_large_message("the script's result", MAX_MESSAGE_BYTES),
            },
            Ok(text) => match serde_json::from_str(&text) {
                Ok(value) => WorkerOutcome::Value(value),
                Err(e) => WorkerOutcome::Internal(format!("the script's value is not JSON: {e}")),
            },
            Err(outcome) => outcome,
        }
    }
}

/// Defines the raw host functions and the prelude in a fresh context.
fn install<'js>(ctx: &Ctx<'js>, bridge: Arc<dyn Bridge>) -> rquickjs::Result<()> {
    let globals = ctx.globals();
    let one = bridge.clone();
    globals.set(
        "__mcplex_call",
        Function::new(ctx.clone(), move |name: String, arguments: String| {
            // Refused here as text: a tree of it would be many times its size.
            // `JSON.stringify`'s text: checked as JSON, never made a tree; the bridge refuses it
            // when it is too large.
            let args = RawValue::from_string(arguments).ok();
            let mut outcomes = one.call_batch(vec![ToolCall { name, args }]);
            envelope(
                outcomes
                    .pop()
                    .unwrap_or_else(|| Err(raw(&json!({"error": "no outcome"})))),
            )
        })?,
    )?;
    globals.set(
        "__mcplex_call_batch",
        Function::new(ctx.clone(), move |calls: String| {
            if calls.len() > MAX_BATCH_BYTES {
                let refusal = too_large(
                    "a batch of tool calls (names and arguments together)",
                    MAX_BATCH_BYTES,
                );
                return format!("[{}]", envelope(Err(raw(&refusal))));
            }
            // The prelude's `[{name, args}]`, each call's arguments kept as text.
            let calls: Vec<ToolCall> = serde_json::from_str(&calls).unwrap_or_default();
            let outcomes: Vec<String> =
                bridge.call_batch(calls).into_iter().map(envelope).collect();
            format!("[{}]", outcomes.join(","))
        })?,
    )?;
    ctx.eval::<(), _>(PRELUDE)
}

/// `{"ok": value}` or `{"error": body, "message": text}` for the prelude, as text: the value
/// and the body go on as they came.
fn envelope(outcome: Result<Box<RawValue>, Box<RawValue>>) -> String {
    /// The members of an error body the message is taken from (the rest is skipped unread).
    #[derive(serde::Deserialize)]
    struct Said {
        error: Option<Value>,
        message: Option<Value>,
    }
    match outcome {
        Ok(value) => format!(r#"{{"ok":{}}}"#, value.get()),
        Err(body) => {
            let said = serde_json::from_str::<Said>(body.get()).ok();
            let message = said
                .and_then(|said| match (said.error, said.message) {
                    (Some(Value::String(text)), _) | (_, Some(Value::String(text))) => Some(text),
                    _ => None,
                })
                .unwrap_or_else(|| body.get().to_owned());
            format!(
                r#"{{"error":{},"message":{}}}"#,
                body.get(),
                Value::String(message)
            )
        }
    }
}

/// The in-engine limits of the run in progress.
struct Run {
    deadline: Instant,
    timeout: Duration,
    memory_bytes: usize,
    /// The first limit hit; it decides the run's outcome even if the script catches its error.
    hit: Mutex<Option<(&'static str, String)>>,
}

impl Run {
    fn first_limit(&self) -> Option<(&'static str, String)> {
        self.hit
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn limit(&self, limit: &'static str, message: String) {
        let mut hit = self.hit.lock().unwrap_or_else(PoisonError::into_inner);
        if hit.is_none() {
            *hit = Some((limit, message));
        }
    }

    /// A failed evaluation: limits first (the deadline interrupts with an uncatchable error;
    /// memory exhaustion throws one), then the script's own error, line and `.body`.
    fn failure(&self, ctx: &Ctx<'_>, error: rquickjs::Error) -> WorkerOutcome {
        if Instant::now() >= self.deadline {
            self.limit(TIMEOUT_LIMIT, timeout_message(self.timeout.as_millis()));
        }
        let (message, stack, body) = match error {
            rquickjs::Error::Exception => thrown(ctx),
            rquickjs::Error::Allocation => ("out of memory".to_owned(), None, None),
            rquickjs::Error::WouldBlock => (
                "the script awaited something that never settles (there are no timers or I/O here)"
                    .to_owned(),
                None,
                None,
            ),
            other => (other.to_string(), None, None),
        };
        if message.contains("out of memory") {
            self.limit(
                MEMORY_LIMIT,
                format!(
                    "the script ran out of memory: {MEMORY_LIMIT} is {} bytes",
                    self.memory_bytes
                ),
            );
        }
        if let Some((limit, message)) = self.first_limit() {
            return WorkerOutcome::Limit {
                limit: limit.to_owned(),
                message,
            };
        }
        let line = stack.as_deref().and_then(line_of);
        WorkerOutcome::Script {
            message,
            line,
            body,
        }
    }
}

/// The pending exception's message, stack and `.body` (what a failed tool call carries).
fn thrown(ctx: &Ctx<'_>) -> (String, Option<String>, Option<Value>) {
    let value = ctx.catch();
    if let Some(exception) = value.as_exception() {
        let name = exception
            .get::<_, String>("name")
            .unwrap_or_else(|_| "Error".to_owned());
        let message = exception.message().unwrap_or_default();
        let body = exception
            .get::<_, rquickjs::Value>("body")
            .ok()
            .filter(|body| !body.is_undefined())
            .and_then(|body| ctx.json_stringify(body).ok().flatten())
            .and_then(|text| text.to_string().ok())
            .and_then(|text| {
                if text.len() > MAX_MESSAGE_BYTES {
                    return Some(too_large("the thrown error's body", MAX_MESSAGE_BYTES));
                }
                serde_json::from_str(&text).ok()
            });
        return (format!("{name}: {message}"), exception.stack(), body);
    }
    if let Some(text) = value.as_string().and_then(|s| s.to_string().ok()) {
        return (format!("uncaught {text:?}"), None, None);
    }
    let shown = ctx
        .json_stringify(value)
        .ok()
        .flatten()
        .and_then(|s| s.to_string().ok())
        .unwrap_or_else(|| "a value".to_owned());
    (format!("uncaught {shown}"), None, None)
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
