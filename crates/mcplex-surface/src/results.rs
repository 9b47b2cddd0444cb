//! Tool results the gateway writes itself: the self-healing argument error and built-in answers.
//! Each carries its JSON body twice, as text content (for clients that read text) and as
//! `structuredContent`.

use mcplex_protocol::ErrorType;
use serde_json::{Value, json};

/// A successful built-in answer.
pub(crate) fn structured(body: Value) -> Value {
    json!({"content": [{"type": "text", "text": body.to_string()}], "structuredContent": body, "isError": false})
}

/// A failed built-in call or a refused upstream call, as a result the model reads.
pub(crate) fn error(body: Value) -> Value {
    json!({"content": [{"type": "text", "text": body.to_string()}], "structuredContent": body, "isError": true})
}

/// The self-healing error: what is wrong, the complete stored schema, and how to recover.
pub fn invalid_arguments(name: &str, problem: &str, input_schema: Value) -> Value {
    error(json!({
        "error": format!("invalid arguments for {name}: {problem}"),
        "error_type": ErrorType::InvalidParams,
        "tool": name,
        "input_schema": input_schema,
        "hint": format!("Fix arguments to match input_schema, then retry. For the full definition call describe_tool({{tool_ids:[\"{name}\"]}})."),
    }))
}

/// A call to a `per_user` server by a caller that has not connected its own account: what to
/// open (when a link could be made), as a result the model can show its user.
pub fn not_connected(server: &str, caller: &str, link: Option<&str>, message: &str) -> Value {
    error(json!({
        "error": message,
        "error_type": ErrorType::NotConnected,
        "server": server,
        "caller": caller,
        "connect_url": link,
        "hint": "Ask the user to open connect_url in a browser and finish the login, then call the tool again.",
    }))
}
