//! Why a run produced no value, and the names of the limits a run can hit.

use serde_json::Value;

/// `timeout_ms`: the run's wall-clock deadline.
pub(crate) const TIMEOUT_LIMIT: &str = "timeout_ms";
/// The JavaScript heap of one run.
pub(crate) const MEMORY_LIMIT: &str = "code_execution_memory_limit";
/// Tool calls one run may make.
pub(crate) const CALLS_LIMIT: &str = "code_execution_max_tool_calls";
/// The largest JSON text a run exchanges with the gateway at once: its outcome (the value it
/// returns, or its error's body), one tool call's arguments, one tool result it receives.
pub(crate) const MESSAGE_LIMIT: &str = "code_execution_max_message_bytes";
/// Not a limit, but it ends a run the same way: the client cancelled or went away.
pub(crate) const CANCELLED: &str = "cancelled";
pub(crate) const CANCELLED_MESSAGE: &str = "the run was cancelled by the client";

/// The `&'static` name of a limit a worker reported by name; `None` for a name no limit has.
pub(crate) fn limit_named(name: &str) -> Option<&'static str> {
    [
        TIMEOUT_LIMIT,
        MEMORY_LIMIT,
        CALLS_LIMIT,
        MESSAGE_LIMIT,
        CANCELLED,
    ]
    .into_iter()
    .find(|known| *known == name)
}

/// The message of a run stopped at its deadline.
pub(crate) fn timeout_message(timeout_ms: u128) -> String {
    format!("the script ran out of time: {TIMEOUT_LIMIT} {timeout_ms} reached")
}

/// A failed run. Every variant names what the script author can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// A limit was hit; `limit` is its config name.
    #[error("{message}")]
    Limit {
        limit: &'static str,
        message: String,
    },
    /// The script threw (or did not compile); `line` is in the script's own numbering. `body`
    /// is the thrown error's `.body`: for a failed tool call, the gateway's error (the
    /// self-healing answer with the tool's schema included).
    #[error("{message}")]
    Script {
        message: String,
        line: Option<u32>,
        body: Option<Value>,
    },
    /// The engine itself failed (it could not start, or a result was not JSON).
    #[error("code execution failed: {0}")]
    Internal(String),
}

impl RunError {
    pub(crate) fn timeout(timeout_ms: u128) -> RunError {
        RunError::Limit {
            limit: TIMEOUT_LIMIT,
            message: timeout_message(timeout_ms),
        }
    }

    pub(crate) fn cancelled() -> RunError {
        RunError::Limit {
            limit: CANCELLED,
            message: CANCELLED_MESSAGE.to_owned(),
        }
    }
}

/// Why a worker could not get its JavaScript engine ready; the worker reports it as the run's
/// internal failure. Each holds the engine's own message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum EngineError {
    #[error("cannot start the JavaScript engine: {0}")]
    Runtime(String),
    #[error("cannot create a context: {0}")]
    Context(String),
    #[error("cannot install the script API: {0}")]
    Install(String),
}
