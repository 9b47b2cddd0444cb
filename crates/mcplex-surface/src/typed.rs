//! Raw upstream JSON → rmcp's typed model, at the edge.
//!
//! rmcp's HTTP server only serves `ServerHandler`s, whose results are typed. Every field the MCP
//! schema defines survives the conversion (`inputSchema`, `outputSchema`, `structuredContent`
//! and `_meta` are kept as raw JSON inside the model); fields outside the schema that an
//! upstream invents, and `execution` (the tasks extension, which the gateway does not relay),
//! are dropped. Listings are converted once per snapshot, results once per call.

use std::sync::{Arc, Mutex, PoisonError};

use rmcp::ErrorData;
use rmcp::model::{CallToolResponse, CallToolResult, InputRequiredResult, Tool};
use serde_json::Value;

/// A snapshot generation and its typed listing.
type Converted = (u64, Arc<Vec<Tool>>);

/// The typed direct listing of the newest snapshot seen.
#[derive(Clone, Default)]
pub(crate) struct ToolsCache {
    cached: Arc<Mutex<Option<Converted>>>,
}

impl ToolsCache {
    /// The typed form of `listing`, converting it only when `generation` is new.
    pub(crate) fn get(
        &self,
        generation: u64,
        builtins: &[Value],
        listing: &[Value],
    ) -> Arc<Vec<Tool>> {
        let mut cached = self.cached.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((seen, tools)) = cached.as_ref()
            && *seen == generation
        {
            return tools.clone();
        }
        // The built-ins first, with their real schemas in both modes; then the upstream entries.
        let tools: Vec<Tool> = builtins
            .iter()
            .chain(listing.iter())
            .filter_map(
                |entry| match serde_json::from_value::<Tool>(entry.clone()) {
                    Ok(tool) => Some(tool),
                    Err(e) => {
                        tracing::warn!(
                            "tool {} is not a valid MCP tool and is not listed: {e}",
                            entry.get("name").unwrap_or(&serde_json::Value::Null)
                        );
                        None
                    }
                },
            )
            .collect();
        let tools = Arc::new(tools);
        *cached = Some((generation, tools.clone()));
        tools
    }
}

/// An upstream `tools/call` result as rmcp's response type.
pub(crate) fn call_response(raw: Value) -> Result<CallToolResponse, ErrorData> {
    let input_required = raw.get("resultType").and_then(Value::as_str) == Some("input_required");
    if input_required {
        return serde_json::from_value::<InputRequiredResult>(raw)
            .map(Into::into)
            .map_err(|e| {
                ErrorData::internal_error(
                    format!("upstream input_required result is malformed: {e}"),
                    None,
                )
            });
    }
    serde_json::from_value::<CallToolResult>(raw)
        .map(Into::into)
        .map_err(|e| {
            ErrorData::internal_error(format!("upstream result is not a tool result: {e}"), None)
        })
}
