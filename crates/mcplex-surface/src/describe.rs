//! `describe_tool` on the direct surface: full definitions (≤ 5 ids) or, with `check: true`,
//! availability verdicts (≤ 50 ids). Listed in both serialization modes with its real schema.

use mcplex_catalog::{Scope, Snapshot, UnavailableReason};
use mcplex_protocol::ErrorType;
use serde_json::{Map, Value, json};

pub(crate) use mcplex_names::gateway_tools::DESCRIBE_TOOL;
const MAX_DEFINITIONS: usize = 5;
const MAX_CHECKS: usize = 50;

/// The built-in's definition, identical in both modes.
pub(crate) fn definition() -> Value {
    json!({
        "name": DESCRIBE_TOOL,
        "description": "Returns the full definition of tools listed on this server: input schema, \
    untruncated description, annotations and output schema. Pass tool names exactly as listed (or as \
    server:tool). With \"check\": true, returns instead whether each tool is ready to call, or \
    unavailable and why (not_found, server_disabled, server_initializing, server_unhealthy, \
    server_quarantined, tool_pending_approval, tool_changed, tool_blocked).",
        "inputSchema": {
            "type": "object",
            "properties": {
                "tool_ids": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 1,
                    "maxItems": MAX_CHECKS,
                    "description": "Tool names as listed (server__tool) or canonical ids (server:tool); at most 5 for definitions, 50 with check."
                },
                "check": {"type": "boolean", "default": false, "description": "Return availability verdicts instead of definitions."}
            },
            "required": ["tool_ids"]
        },
        "annotations": {"readOnlyHint": true, "openWorldHint": false}
    })
}

/// The tool result of one `describe_tool` call.
pub(crate) fn result(
    snapshot: &Snapshot,
    arguments: Option<&Map<String, Value>>,
    scope: &Scope,
) -> Value {
    match answer(snapshot, arguments, scope) {
        Ok(answer) => crate::results::structured(answer),
        Err(refusal) => crate::results::error(
            json!({"error": refusal.to_string(), "error_type": ErrorType::InvalidParams, "tool": DESCRIBE_TOOL}),
        ),
    }
}

/// Why a `describe_tool` request cannot be answered (its arguments are wrong).
#[derive(Debug)]
enum Refusal {
    /// `check` is not a boolean.
    Check(Value),
    /// A tool id is not a string.
    ToolId(Value),
    /// `tool_ids` is missing, empty or not an array.
    NoToolIds,
    /// More tool ids than the mode takes.
    TooMany {
        limit: usize,
        check: bool,
        got: usize,
    },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Check(other) => {
                write!(f, "describe_tool: check must be true or false, not {other}")
            }
            Refusal::ToolId(id) => write!(f, "describe_tool: tool_ids must be strings, not {id}"),
            Refusal::NoToolIds => f.write_str(
                "describe_tool: tool_ids must be a non-empty array of tool names, e.g. {\"tool_ids\": [\"server__tool\"]}",
            ),
            Refusal::TooMany { limit, check, got } => {
                let mode = if *check {
                    "check mode"
                } else {
                    "definition mode (use more calls, or check: true for up to 50)"
                };
                write!(f, "describe_tool takes at most {limit} tool_ids in {mode}; got {got}")
            }
        }
    }
}

/// Answers one `describe_tool` call: `Ok(structured answer)` or the [`Refusal`] of a bad
/// request, which the caller turns into an `isError` result.
fn answer(
    snapshot: &Snapshot,
    arguments: Option<&Map<String, Value>>,
    scope: &Scope,
) -> Result<Value, Refusal> {
    let empty = Map::new();
    let arguments = arguments.unwrap_or(&empty);
    let check = match arguments.get("check") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(check)) => *check,
        Some(other) => return Err(Refusal::Check(other.clone())),
    };
    let ids: Vec<&str> = match arguments.get("tool_ids") {
        Some(Value::Array(ids)) if !ids.is_empty() => ids
            .iter()
            .map(|id| id.as_str().ok_or_else(|| Refusal::ToolId(id.clone())))
            .collect::<Result<_, _>>()?,
        _ => return Err(Refusal::NoToolIds),
    };
    let limit = if check { MAX_CHECKS } else { MAX_DEFINITIONS };
    if ids.len() > limit {
        return Err(Refusal::TooMany {
            limit,
            check,
            got: ids.len(),
        });
    }
    let tools: Vec<Value> = ids
        .iter()
        .map(|id| match (snapshot.availability(id, scope), check) {
            (Ok(_), true) => json!({"tool_id": id, "status": "ready"}),
            (Ok(tool), false) => {
                let mut definition = snapshot.definition(tool);
                if let Value::Object(object) = &mut definition {
                    object.insert("tool_id".to_owned(), Value::String((*id).to_owned()));
                }
                definition
            }
            // A listed tool is always describable, even while its server is unhealthy. (Out of
            // scope is `not_found`, which never reaches this lookup.)
            (Err(reason), false) if reason != UnavailableReason::NotFound => match snapshot
                .resolve(id)
            {
                Some(tool) => {
                    let mut definition = snapshot.definition(tool);
                    if let Value::Object(object) = &mut definition {
                        object.insert("tool_id".to_owned(), Value::String((*id).to_owned()));
                        object.insert("status".to_owned(), json!("unavailable"));
                        object.insert("reason".to_owned(), json!(reason.as_str()));
                    }
                    definition
                }
                None => json!({"tool_id": id, "status": "unavailable", "reason": reason.as_str()}),
            },
            (Err(reason), _) => {
                json!({"tool_id": id, "status": "unavailable", "reason": reason.as_str()})
            }
        })
        .collect();
    Ok(json!({"tools": tools}))
}
