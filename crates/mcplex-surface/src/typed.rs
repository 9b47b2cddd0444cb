//! Raw upstream JSON → rmcp's typed model, at the edge.
//!
//! rmcp's HTTP server only serves `ServerHandler`s, whose results are typed. Every field the MCP
//! schema defines survives the conversion (`inputSchema`, `outputSchema`, `structuredContent`
//! and `_meta` are kept as raw JSON inside the model); fields outside the schema that an
//! upstream invents, and `execution` (the tasks extension, which the gateway does not relay),
//! are dropped. Listings are converted once per snapshot, results once per call.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use mcplex_catalog::{Scope, Snapshot};

use rmcp::ErrorData;
use rmcp::model::{CallToolResponse, CallToolResult, InputRequiredResult, Tool};
use serde_json::Value;

/// The typed listing of one snapshot generation: every entry converted once, and the filtered
/// listing of each scope asked for so far.
struct Converted {
    generation: u64,
    builtins: Vec<Tool>,
    /// Aligned with the snapshot's direct listing; `None` where an entry is not a valid tool.
    entries: Vec<Option<Tool>>,
    by_scope: HashMap<Scope, Arc<Vec<Tool>>>,
}

/// The typed direct listing of the newest snapshot seen, per scope.
#[derive(Clone, Default)]
pub(crate) struct ToolsCache {
    cached: Arc<Mutex<Option<Converted>>>,
}

impl ToolsCache {
    /// The built-ins, then the snapshot's direct entries that `scope` may see, converting the
    /// listing only when the snapshot is new and filtering only for a scope not seen yet.
    pub(crate) fn get(
        &self,
        snapshot: &Snapshot,
        builtins: &[Value],
        scope: &Scope,
    ) -> Arc<Vec<Tool>> {
        let mut cached = self.cached.lock().unwrap_or_else(PoisonError::into_inner);
        let fresh = cached
            .as_ref()
            .is_some_and(|c| c.generation == snapshot.generation());
        if !fresh {
            *cached = Some(Converted {
                generation: snapshot.generation(),
                builtins: builtins.iter().filter_map(typed_tool).collect(),
                entries: snapshot.direct_listing().iter().map(typed_tool).collect(),
                by_scope: HashMap::new(),
            });
        }
        let Some(converted) = cached.as_mut() else {
            return Arc::default();
        };
        if let Some(tools) = converted.by_scope.get(scope) {
            return tools.clone();
        }
        // The built-ins first, with their real schemas in both modes; then the upstream entries.
        let tools: Vec<Tool> = converted
            .builtins
            .iter()
            .cloned()
            .chain(
                converted
                    .entries
                    .iter()
                    .zip(snapshot.direct_visibility(scope))
                    .filter_map(|(tool, visible)| tool.as_ref().filter(|_| visible).cloned()),
            )
            .collect();
        let tools = Arc::new(tools);
        converted.by_scope.insert(scope.clone(), tools.clone());
        tools
    }
}

fn typed_tool(entry: &Value) -> Option<Tool> {
    match serde_json::from_value::<Tool>(entry.clone()) {
        Ok(tool) => Some(tool),
        Err(e) => {
            tracing::warn!(
                "tool {} is not a valid MCP tool and is not listed: {e}",
                entry.get("name").unwrap_or(&serde_json::Value::Null)
            );
            None
        }
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
