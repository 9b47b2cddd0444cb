//! Argument validation against the stored upstream schema: compiled once per distinct schema,
//! fail-open (a schema that does not compile is skipped, never blocks a call), and errors phrased
//! so an agent can fix its call.

use std::sync::Arc;

use jsonschema::{Draft, ValidationError, Validator, error::ValidationErrorKind};
use serde_json::Value;

/// At most this many problems are reported for one call.
const MAX_REPORTED: usize = 5;

/// Compiles a validator: as declared, then forcing draft 2020-12; `None` means fail open.
pub(crate) fn compile(schema: &Value) -> Option<Arc<Validator>> {
    jsonschema::validator_for(schema)
        .or_else(|_| {
            jsonschema::options()
                .with_draft(Draft::Draft202012)
                .build(schema)
        })
        .ok()
        .map(Arc::new)
}

/// `Ok` or the agent-facing description of what is wrong with `arguments`.
pub(crate) fn check(validator: &Validator, arguments: &Value) -> Result<(), String> {
    let problems: Vec<String> = validator
        .iter_errors(arguments)
        .take(MAX_REPORTED + 1)
        .map(|e| describe(&e))
        .collect();
    if problems.is_empty() {
        return Ok(());
    }
    let mut text = problems
        .iter()
        .take(MAX_REPORTED)
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    if problems.len() > MAX_REPORTED {
        text.push_str("; …");
    }
    Err(text)
}

fn describe(error: &ValidationError<'_>) -> String {
    let path = error.instance_path().to_string();
    let at = if path.is_empty() {
        String::new()
    } else {
        format!("at {path}: ")
    };
    match error.kind() {
        ValidationErrorKind::Required { property } => {
            format!("{at}missing property {}", quote_property(property))
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let names: Vec<String> = unexpected.iter().map(|n| format!("'{n}'")).collect();
            format!("{at}unexpected property {}", names.join(", "))
        }
        _ => format!("{at}{error}"),
    }
}

fn quote_property(property: &Value) -> String {
    match property {
        Value::String(name) => format!("'{name}'"),
        other => other.to_string(),
    }
}
