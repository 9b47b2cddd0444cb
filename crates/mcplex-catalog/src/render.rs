//! The direct surface's entries for upstream tools, in `full` and `deferred` form. Computed once
//! per snapshot.

use mcplex_config::DirectToolResponseMode;
use serde_json::{Map, Value, json};

use crate::CatalogTool;

/// The entry of `tool` in `mode`.
pub(crate) fn direct_entry(tool: &CatalogTool, mode: DirectToolResponseMode) -> Value {
    let description = full_description(tool);
    let mut entry = Map::with_capacity(tool.raw.len() + 1);
    for (key, value) in tool.raw.iter() {
        match (key.as_str(), mode) {
            ("name", _) => {
                entry.insert(key.clone(), Value::String(tool.display_name.clone()));
                // Right after the name, where upstreams put it, for readable listings.
                let text = match mode {
                    DirectToolResponseMode::Full => description.clone(),
                    DirectToolResponseMode::Deferred => {
                        format!("{description}\n{}", tool.signature.render(&tool.id.tool))
                    }
                };
                entry.insert("description".to_owned(), Value::String(text));
            }
            ("description", _) => {}
            ("inputSchema", DirectToolResponseMode::Deferred) => {
                // Never `{}` or absent: strict clients read those as "no arguments".
                entry.insert(key.clone(), json!({"type": "object"}));
            }
            ("outputSchema", DirectToolResponseMode::Deferred) => {}
            _ => {
                entry.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Object(entry)
}

/// `[server] description`, untruncated (or `[server]` alone when there is none).
pub(crate) fn full_description(tool: &CatalogTool) -> String {
    match tool.raw.get("description").and_then(Value::as_str) {
        Some(text) if !text.is_empty() => format!("[{}] {text}", tool.id.server),
        _ => format!("[{}]", tool.id.server),
    }
}
