//! The JSON lines between the gateway and a worker process, one message a line: the gateway
//! sends the [`RunRequest`], the worker answers with [`FromWorker`] messages (a batch of tool
//! calls, which the gateway answers with their outcomes in order, or the run's end), and exits.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

/// The first line a worker reads: the one run it serves.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RunRequest {
    pub code: String,
    pub input: Value,
    pub timeout_ms: u64,
    pub memory_bytes: usize,
}

/// What a worker says.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FromWorker {
    /// Tool calls the script made (one for `call_tool`, a batch for `call_tools`); the worker
    /// waits for their outcomes, a JSON array of `{"Ok": result}` or `{"Err": body}` in order.
    Calls(Vec<ToolCall>),
    /// The run is over; the worker exits.
    Done(WorkerOutcome),
}

/// One tool call as it travels, its arguments kept as the script's JSON text (`None`: absent or
/// `null`): neither side builds a tree of them before their size is checked.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ToolCall {
    pub name: String,
    #[serde(default)]
    pub args: Option<Box<RawValue>>,
}

/// How a run ended, as the worker saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WorkerOutcome {
    Value(Value),
    Limit {
        limit: String,
        message: String,
    },
    Script {
        message: String,
        line: Option<u32>,
        body: Option<Value>,
    },
    Internal(String),
}

/// The outcomes of one batch of tool calls, in call order, as the gateway makes them.
pub(crate) type CallOutcomes = Vec<Result<Value, Value>>;

/// The same line as a worker reads it: each result or error body kept as text, which goes on
/// into the script's `JSON.parse` without a tree of it in between.
pub(crate) type CallOutcomesText = Vec<Result<Box<RawValue>, Box<RawValue>>>;

/// `value` as text (a `Value` always serializes; `null` were it not to).
pub(crate) fn raw(value: &Value) -> Box<RawValue> {
    serde_json::value::to_raw_value(value).unwrap_or_else(|_| RawValue::NULL.to_owned())
}

/// A [`FromWorker`] line as the gateway first reads it: the outcome kept as text, so that its
/// size is checked before it is parsed (each call's arguments are text in [`ToolCall`] itself).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FromWorkerText {
    Calls(Vec<ToolCall>),
    /// A [`WorkerOutcome`].
    Done(Box<RawValue>),
}
