//! The search built-ins: `tool_search` and `call_tool` (deferral by search, on any surface whose
//! config defers anything) and `retrieve_tools` (the retrieve surface). Their definitions are
//! constants: they never mention which tools exist, so they never change when servers come and go.

use mcplex_catalog::{CatalogTool, Scope, Snapshot};
use mcplex_config::ToolResponseMode;
use mcplex_dispatch::{Gateway, RankBy, ToolQuery};
use mcplex_protocol::ErrorType;
use serde_json::{Map, Value, json};

use crate::results;

pub(crate) use mcplex_names::gateway_tools::CALL_TOOL;
pub(crate) use mcplex_names::gateway_tools::RETRIEVE_TOOLS;
pub(crate) use mcplex_names::gateway_tools::TOOL_SEARCH;
const RETRIEVE_DEFAULT_LIMIT: usize = 15;
const RETRIEVE_MAX_LIMIT: usize = 100;
/// The `query` parameter of both searches, said once. The separator is spaced: a bare `+` is part
/// of names such as "c++" (`mcplex_search::query_parts`).
const QUERY_DESCRIPTION: &str = "What you want to do, in words. Several things at once: join them with \" + \" (a plus between spaces; each part of two words or more gets matches of its own, marked with the part that found them).";
/// How many reachable tools an unknown-name refusal suggests.
const SUGGESTIONS: usize = 3;

pub(crate) fn tool_search_definition() -> Value {
    json!({
        "name": TOOL_SEARCH,
        "description": "Search the tools available through call_tool. Returns the best matches with their name, \
    description and inputSchema; pass a match's name and arguments to call_tool. An empty query lists every tool.",
        "inputSchema": {"type": "object", "properties": {"query": {"type": "string", "description": QUERY_DESCRIPTION}}, "required": ["query"]},
        "annotations": {"readOnlyHint": true, "openWorldHint": false}
    })
}

pub(crate) fn call_tool_definition() -> Value {
    json!({
        "name": CALL_TOOL,
        "description": "Call a tool found with search, by the exact name the search returned, with arguments matching its inputSchema.",
        "inputSchema": {"type": "object", "properties": {
            "name": {"type": "string", "description": "The tool's name as the search returned it."},
            "arguments": {"type": "object", "description": "Arguments matching the tool's inputSchema."}
        }, "required": ["name"]}
    })
}

pub(crate) fn retrieve_tools_definition() -> Value {
    json!({
        "name": RETRIEVE_TOOLS,
        "description": "Find tools for a task. Returns ranked matches (id, name, score and how to call them); call one \
    with call_tool using its name. An empty query lists every tool. Use describe_tool for a full definition.",
        "inputSchema": {"type": "object", "properties": {
            "query": {"type": "string", "description": QUERY_DESCRIPTION},
            "limit": {"type": "integer", "minimum": 1, "maximum": RETRIEVE_MAX_LIMIT, "default": RETRIEVE_DEFAULT_LIMIT},
            "server": {"type": "string", "description": "Only tools of this server."}
        }, "required": ["query"]},
        "annotations": {"readOnlyHint": true, "openWorldHint": false}
    })
}

fn query_of(arguments: Option<&Map<String, Value>>, tool: &str) -> Result<String, Value> {
    match arguments.and_then(|a| a.get("query")) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(query)) => Ok(query.clone()),
        Some(other) => Err(results::error(
            json!({"error": format!("{tool}: query must be a string, not {other}"), "error_type": ErrorType::InvalidParams, "tool": tool}),
        )),
    }
}

/// `tool_search {query}`: at most `max_matches` matches over every visible tool, deferred or not.
pub(crate) async fn tool_search(
    gateway: &Gateway,
    arguments: Option<&Map<String, Value>>,
    max_matches: usize,
    scope: &Scope,
) -> Value {
    let query = match query_of(arguments, TOOL_SEARCH) {
        Ok(query) => query,
        Err(error) => return error,
    };
    let snapshot = gateway.snapshot();
    let search = ToolQuery {
        text: &query,
        server: None,
        limit: max_matches,
        rank_by: RankBy::Meaning,
    };
    let matches = gateway
        .search(&snapshot, search, |t| snapshot.visible(t, scope))
        .await
        .matches;
    let tools: Vec<Value> = matches
        .tools
        .iter()
        .map(|found| {
            let tool = found.tool;
            let mut entry = json!({
                "name": tool.display_name,
                "description": tool.raw.get("description").cloned().unwrap_or(Value::String(String::new())),
                "inputSchema": tool.raw.get("inputSchema").cloned().unwrap_or_else(|| json!({"type": "object"})),
            });
            if let Some(part) = found.part {
                entry["part"] = json!(part);
            }
            entry
        })
        .collect();
    let left_out = matches.total.saturating_sub(tools.len());
    results::structured(with_parts(
        json!({"tools": tools, "left_out": left_out}),
        matches.parts,
    ))
}

/// `retrieve_tools {query, limit?, server?}`, rendered in the snapshot's `tool_response_mode`.
pub(crate) async fn retrieve_tools(
    gateway: &Gateway,
    arguments: Option<&Map<String, Value>>,
    scope: &Scope,
) -> Value {
    let query = match query_of(arguments, RETRIEVE_TOOLS) {
        Ok(query) => query,
        Err(error) => return error,
    };
    let limit = match arguments.and_then(|a| a.get("limit")) {
        None | Some(Value::Null) => RETRIEVE_DEFAULT_LIMIT,
        Some(value) => match value.as_u64() {
            Some(n) if (1..=RETRIEVE_MAX_LIMIT as u64).contains(&n) => n as usize,
            _ => {
                return results::error(
                    json!({"error": format!("retrieve_tools: limit must be a whole number from 1 to {RETRIEVE_MAX_LIMIT}, not {value}"), "error_type": ErrorType::InvalidParams, "tool": RETRIEVE_TOOLS}),
                );
            }
        },
    };
    let server = arguments
        .and_then(|a| a.get("server"))
        .and_then(Value::as_str);
    let snapshot = gateway.snapshot();
    let mode = snapshot.tool_response_mode();
    let search = ToolQuery {
        text: &query,
        server,
        limit,
        rank_by: RankBy::Meaning,
    };
    let matches = gateway
        .search(&snapshot, search, |t| snapshot.visible(t, scope))
        .await
        .matches;
    let tools: Vec<Value> = matches
        .tools
        .iter()
        .map(|found| retrieved(found.tool, found.score, mode, found.part))
        .collect();
    results::structured(with_parts(
        json!({"tools": tools, "total": matches.total}),
        matches.parts,
    ))
}

/// A search's answer with the parts its query was split into, once (`"parts"`), which the
/// matches a part placed name by index (`"part": 1`): a part's text is not repeated per match.
/// A query ranked whole has no `"parts"`.
fn with_parts(mut answer: Value, parts: Vec<String>) -> Value {
    if !parts.is_empty() {
        answer["parts"] = json!(parts);
    }
    answer
}

/// One match of `retrieve_tools`; `part` is the index, in the answer's `"parts"`, of the part of
/// the query whose ranking placed it.
fn retrieved(tool: &CatalogTool, score: f32, mode: ToolResponseMode, part: Option<usize>) -> Value {
    let mut entry = Map::new();
    entry.insert("id".to_owned(), json!(tool.id.to_string()));
    entry.insert("name".to_owned(), json!(tool.display_name));
    // Rounded so that answers are stable to the byte across platforms.
    entry.insert(
        "score".to_owned(),
        json!((f64::from(score) * 1000.0).round() / 1000.0),
    );
    if let Some(part) = part {
        entry.insert("part".to_owned(), json!(part));
    }
    let description = tool
        .raw
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match mode {
        ToolResponseMode::Full => {
            entry.insert("description".to_owned(), json!(description));
            entry.insert(
                "inputSchema".to_owned(),
                tool.raw
                    .get("inputSchema")
                    .cloned()
                    .unwrap_or_else(|| json!({"type": "object"})),
            );
            if let Some(annotations) = tool.raw.get("annotations") {
                entry.insert("annotations".to_owned(), annotations.clone());
            }
        }
        ToolResponseMode::Compact => {
            entry.insert("description".to_owned(), json!(first_sentence(description)));
            entry.insert(
                "signature".to_owned(),
                json!(tool.signature.render(&tool.id.tool)),
            );
            entry.insert("lossy".to_owned(), json!(tool.signature.is_lossy()));
        }
    }
    Value::Object(entry)
}

/// Up to the first sentence end (`.`, `!` or `?` followed by white space or the end), or the
/// first line.
fn first_sentence(text: &str) -> &str {
    let line = text.lines().next().unwrap_or_default().trim();
    let bytes = line.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if matches!(b, b'.' | b'!' | b'?')
            && bytes
                .get(i + 1)
                .is_none_or(|next| next.is_ascii_whitespace())
        {
            return &line[..=i];
        }
    }
    line
}

/// The refusal of `call_tool` for a name the caller cannot reach, naming the closest reachable tools.
pub(crate) async fn unknown_name(
    gateway: &Gateway,
    snapshot: &Snapshot,
    name: &str,
    scope: &Scope,
) -> Value {
    let search = ToolQuery {
        text: name,
        server: None,
        limit: SUGGESTIONS,
        rank_by: RankBy::Words,
    };
    let closest: Vec<String> = gateway
        .search(snapshot, search, |t| snapshot.visible(t, scope))
        .await
        .matches
        .tools
        .iter()
        .map(|found| found.tool.display_name.clone())
        .collect();
    let hint = if closest.is_empty() {
        "Search for the tool first.".to_owned()
    } else {
        format!("Closest reachable tools: {}.", closest.join(", "))
    };
    results::error(
        json!({"error": format!("unknown tool: {name}"), "error_type": ErrorType::NotFound, "tool": name, "closest": closest, "hint": hint}),
    )
}

/// The `name` and `arguments` of a `call_tool` call.
pub(crate) fn call_tool_target(
    arguments: Option<&Map<String, Value>>,
) -> Result<(String, Option<Map<String, Value>>), Value> {
    let invalid = |message: String| {
        results::error(
            json!({"error": message, "error_type": ErrorType::InvalidParams, "tool": CALL_TOOL}),
        )
    };
    let name = match arguments.and_then(|a| a.get("name")) {
        Some(Value::String(name)) if !name.is_empty() => name.clone(),
        _ => {
            return Err(invalid(
                "call_tool: name must be the tool's name as the search returned it".to_owned(),
            ));
        }
    };
    let inner = match arguments.and_then(|a| a.get("arguments")) {
        None | Some(Value::Null) => None,
        Some(Value::Object(inner)) => Some(inner.clone()),
        Some(other) => {
            return Err(invalid(format!(
                "call_tool: arguments must be an object, not {other}"
            )));
        }
    };
    Ok((name, inner))
}
