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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ToolCall {
    pub name: String,
    #[serde(default)]
    pub args: Value,
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

/// The outcomes of one batch of tool calls, in call order.
pub(crate) type CallOutcomes = Vec<Result<Value, Value>>;

/// A [`FromWorker`] line as the gateway first reads it: the parts a script sized (the outcome,
/// each call's arguments) kept as text, so that their sizes are checked before any is parsed.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FromWorkerText {
    Calls(Vec<ToolCallText>),
    /// A [`WorkerOutcome`].
    Done(Box<RawValue>),
}

/// A [`ToolCall`] with its arguments as text (`None`: absent or `null`).
#[derive(Debug, Deserialize)]
pub(crate) struct ToolCallText {
    pub name: String,
    #[serde(default)]
    pub args: Option<Box<RawValue>>,
}
