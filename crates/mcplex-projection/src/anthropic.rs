//! Anthropic Messages API shapes (checked against the `anthropic` Python SDK's typed params,
//! 2.15.0: `ToolParam`, `ToolSearchToolBm25_20251119Param`, `ToolResultBlockParam` holding
//! `ToolReferenceBlockParam`s).

use mcplex_catalog::CatalogTool;
use serde_json::{Map, Value, json};

use crate::{
    CLIENT_SEARCH_TOOL, Provider, SEARCH_DESCRIPTION, SearchBy, name_and_description, schema,
};

/// Loaded tools, then the search tool when anything is deferred, then the deferred tools.
pub(crate) fn tools(visible: &[&CatalogTool], search: SearchBy) -> Vec<Value> {
    let loaded = visible
        .iter()
        .filter(|t| !t.deferred)
        .map(|t| definition(t));
    let deferred: Vec<Value> = visible
        .iter()
        .filter(|t| t.deferred)
        .map(|t| {
            let mut tool = definition(t);
            tool["defer_loading"] = Value::Bool(true);
            tool
        })
        .collect();
    let search_tool = (!deferred.is_empty()).then(|| search_tool(search));
    loaded.chain(search_tool).chain(deferred).collect()
}

fn definition(tool: &CatalogTool) -> Value {
    let mut out = Map::new();
    name_and_description(tool, &mut out);
    out.insert(
        "input_schema".to_owned(),
        schema::for_provider(tool.raw.get("inputSchema"), Provider::Anthropic),
    );
    Value::Object(out)
}

fn search_tool(search: SearchBy) -> Value {
    match search {
        SearchBy::Provider => json!({
            "type": "tool_search_tool_bm25_20251119",
            "name": "tool_search_tool_bm25"
        }),
        SearchBy::Client => json!({
            "name": CLIENT_SEARCH_TOOL,
            "description": SEARCH_DESCRIPTION,
            "input_schema": crate::search_parameters()
        }),
    }
}

/// A `tool_result` block answering the client-side search call `call_id`.
pub(crate) fn search_answer(matches: &[&CatalogTool], call_id: Option<&str>) -> Value {
    let references: Vec<Value> = matches
        .iter()
        .map(|t| json!({"type": "tool_reference", "tool_name": t.display_name}))
        .collect();
    json!({
        "type": "tool_result",
        "tool_use_id": call_id.unwrap_or_default(),
        "content": references
    })
}
