//! The boundary between a script and the gateway: [`ToolHost`], and how a tool result becomes
//! the value `call_tool` returns.

use mcplex_protocol::ErrorType;
use std::future::Future;
use std::pin::Pin;

use serde_json::{Value, json};

use crate::bounds::{MAX_MESSAGE_BYTES, too_large};

/// What a script's tool calls go to. `Ok` is the raw `tools/call` result; `Err` is the body the
/// script's `Error` carries (`error.body`), already in the gateway's error shape.
pub trait ToolHost: Send + Sync + 'static {
    fn call(
        &self,
        name: String,
        arguments: Value,
    ) -> Pin<Box<dyn Future<Output = Result<Value, Value>> + Send + 'static>>;
}

/// A raw tool result as the script sees it: its structured content when it has some, else its
/// text content parsed as JSON when that parses, else the text. A result with `isError` is a
/// failure whose body is that structured content (the self-healing validation answer included)
/// or its text. A text result longer than [`MAX_MESSAGE_BYTES`] is a failure that says so,
/// unparsed.
pub fn result_for_script(raw: &Value) -> Result<Value, Value> {
    let text: String = raw["content"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|item| item["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default();
    let value = match raw.get("structuredContent") {
        Some(structured) if !structured.is_null() => structured.clone(),
        // Measured before it is parsed: JSON text makes a tree many times its size.
        _ if text.len() > MAX_MESSAGE_BYTES => {
            return Err(too_large("the tool's result", MAX_MESSAGE_BYTES));
        }
        _ => serde_json::from_str(&text).unwrap_or(Value::String(text)),
    };
    if raw["isError"] == Value::Bool(true) {
        let body = match value {
            Value::Object(_) => value,
            other => json!({"error": other, "error_type": ErrorType::ToolError}),
        };
        return Err(body);
    }
    Ok(value)
}
