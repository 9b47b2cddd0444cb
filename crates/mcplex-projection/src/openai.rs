//! OpenAI Responses API shapes (checked against the `openai` Python SDK's typed params, 3.57.0:
//! `NamespaceToolParam`, `ToolSearchToolParam`, `ResponseToolSearchOutputItemParamParam` with
//! `ToolSearchOutputNamespaceToolParam`). One namespace per server; the functions inside keep
//! the catalog's display names, so a function call's `name` alone resolves (its `namespace` is
//! the server, for the reader). `defer_loading` is set on functions, never on a namespace (the
//! API applies it to the functions inside).

use std::collections::BTreeMap;

use mcplex_catalog::CatalogTool;
use serde_json::{Map, Value, json};

use crate::{
    CLIENT_SEARCH_TOOL, Provider, SEARCH_DESCRIPTION, SearchBy, name_and_description, schema,
};

/// Namespaces whose functions are all loaded, then `tool_search` when anything is deferred,
/// then namespaces holding a deferred function (loaded functions first inside each).
pub(crate) fn tools(visible: &[&CatalogTool], search: SearchBy) -> Vec<Value> {
    let mut by_server: BTreeMap<&str, Vec<&CatalogTool>> = BTreeMap::new();
    for tool in visible {
        by_server.entry(&tool.id.server).or_default().push(tool);
    }
    let (mut loaded, mut deferred) = (Vec::new(), Vec::new());
    for (server, mut tools) in by_server {
        tools.sort_by_key(|t| (t.deferred, t.display_name.as_str()));
        let any_deferred = tools.iter().any(|t| t.deferred);
        let entry = namespace(server, tools.iter().map(|t| function(t, t.deferred)));
        if any_deferred {
            deferred.push(entry);
        } else {
            loaded.push(entry);
        }
    }
    let search_tool = (!deferred.is_empty()).then(|| search_tool(search));
    loaded
        .into_iter()
        .chain(search_tool)
        .chain(deferred)
        .collect()
}

/// The namespace of `server`. MCP gives no server description the catalog keeps, so it is
/// written from the server's name.
fn namespace(server: &str, functions: impl Iterator<Item = Value>) -> Value {
    json!({
        "type": "namespace",
        "name": mcplex_names::sanitize(server),
        "description": format!("Tools of the MCP server {server}"),
        "tools": functions.collect::<Vec<_>>()
    })
}

fn function(tool: &CatalogTool, deferred: bool) -> Value {
    let mut out = Map::new();
    out.insert("type".to_owned(), Value::String("function".to_owned()));
    name_and_description(tool, &mut out);
    out.insert(
        "parameters".to_owned(),
        schema::for_provider(tool.raw.get("inputSchema"), Provider::OpenAi),
    );
    out.insert("strict".to_owned(), Value::Bool(false));
    if deferred {
        out.insert("defer_loading".to_owned(), Value::Bool(true));
    }
    Value::Object(out)
}

fn search_tool(search: SearchBy) -> Value {
    match search {
        SearchBy::Provider => json!({"type": "tool_search"}),
        SearchBy::Client => json!({
            "type": "tool_search",
            "execution": "client",
            "description": format!("{SEARCH_DESCRIPTION} ({CLIENT_SEARCH_TOOL})"),
            "parameters": crate::search_parameters()
        }),
    }
}

/// A `tool_search_output` item answering the client-executed search call `call_id`: the
/// matched functions, loaded, in their servers' namespaces (servers in order of their best
/// match, functions in rank order).
pub(crate) fn search_answer(matches: &[&CatalogTool], call_id: Option<&str>) -> Value {
    let mut servers: Vec<(&str, Vec<Value>)> = Vec::new();
    for tool in matches {
        let server: &str = &tool.id.server;
        let function = function(tool, false);
        match servers.iter_mut().find(|(name, _)| *name == server) {
            Some((_, functions)) => functions.push(function),
            None => servers.push((server, vec![function])),
        }
    }
    let tools: Vec<Value> = servers
        .into_iter()
        .map(|(server, functions)| namespace(server, functions.into_iter()))
        .collect();
    json!({
        "type": "tool_search_output",
        "execution": "client",
        "call_id": call_id,
        "status": "completed",
        "tools": tools
    })
}
