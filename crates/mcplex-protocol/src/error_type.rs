//! The `error_type` of the error bodies mcplex writes for agents (in tool results and in the
//! code sandbox's thrown errors): a closed set, spelled in one table.

use serde::{Deserialize, Serialize};

/// What kind of failure an error body reports, so that an agent can decide what to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorType {
    /// The request's parameters are wrong (arguments that do not match the schema included):
    /// fix them and retry.
    InvalidParams,
    /// No tool, prompt or resource by that name is visible to the caller.
    NotFound,
    /// A limit of the code sandbox was reached (time, memory, calls, output).
    LimitExceeded,
    /// The script itself failed (a syntax error or an uncaught exception).
    ScriptError,
    /// A tool called from a script failed; the body carries the JSON-RPC code and data.
    CallFailed,
    /// A tool called from a script returned a result marked as an error.
    ToolError,
    /// The gateway could not do what it should have; not the caller's fault.
    Internal,
    /// The server acts for each caller with the caller's own account, and this caller has not
    /// connected one: the body's `connect_url` starts its login.
    NotConnected,
}

impl ErrorType {
    /// Every error type, in a stable order.
    pub const ALL: [ErrorType; 8] = [
        ErrorType::InvalidParams,
        ErrorType::NotFound,
        ErrorType::LimitExceeded,
        ErrorType::ScriptError,
        ErrorType::CallFailed,
        ErrorType::ToolError,
        ErrorType::Internal,
        ErrorType::NotConnected,
    ];

    /// The wire text: the one table of these words.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorType::InvalidParams => "invalid_params",
            ErrorType::NotFound => "not_found",
            ErrorType::LimitExceeded => "limit_exceeded",
            ErrorType::ScriptError => "script_error",
            ErrorType::CallFailed => "call_failed",
            ErrorType::ToolError => "tool_error",
            ErrorType::Internal => "internal",
            ErrorType::NotConnected => "not_connected",
        }
    }
}

impl std::fmt::Display for ErrorType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_spells_each_type_as_the_table_does() {
        for error_type in ErrorType::ALL {
            let text = serde_json::to_value(error_type).expect("serializes");
            assert_eq!(text, error_type.as_str());
            let back: ErrorType = serde_json::from_value(text).expect("parses");
            assert_eq!(back, error_type);
        }
    }
}
