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

/// What is wrong with one call's arguments: each problem where it is, at most
/// [`MAX_REPORTED`] of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgumentProblems {
    problems: Vec<ArgumentProblem>,
    /// More problems were found than are reported.
    truncated: bool,
}

/// One way the arguments fail the schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgumentProblem {
    /// Where in the arguments, as a JSON pointer (`""` for the arguments object itself).
    pub instance_path: String,
    /// Which keyword of the schema failed, as a JSON pointer into the schema.
    pub schema_path: String,
    /// What is wrong there, phrased for an agent (without the location).
    pub message: String,
}

impl ArgumentProblems {
    pub fn problems(&self) -> &[ArgumentProblem] {
        &self.problems
    }
}

/// One line an agent can act on: `at /path: what; at /other: what; …`.
impl std::fmt::Display for ArgumentProblems {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (index, problem) in self.problems.iter().enumerate() {
            if index > 0 {
                f.write_str("; ")?;
            }
            if !problem.instance_path.is_empty() {
                write!(f, "at {}: ", problem.instance_path)?;
            }
            f.write_str(&problem.message)?;
        }
        if self.truncated {
            f.write_str("; …")?;
        }
        Ok(())
    }
}

/// `Ok`, or what is wrong with `arguments`.
pub(crate) fn check(validator: &Validator, arguments: &Value) -> Result<(), ArgumentProblems> {
    let mut problems: Vec<ArgumentProblem> = validator
        .iter_errors(arguments)
        .take(MAX_REPORTED + 1)
        .map(|e| describe(&e))
        .collect();
    if problems.is_empty() {
        return Ok(());
    }
    let truncated = problems.len() > MAX_REPORTED;
    problems.truncate(MAX_REPORTED);
    Err(ArgumentProblems {
        problems,
        truncated,
    })
}

fn describe(error: &ValidationError<'_>) -> ArgumentProblem {
    let message = match error.kind() {
        ValidationErrorKind::Required { property } => {
            format!("missing property {}", quote_property(property))
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let names: Vec<String> = unexpected.iter().map(|n| format!("'{n}'")).collect();
            format!("unexpected property {}", names.join(", "))
        }
        _ => error.to_string(),
    };
    ArgumentProblem {
        instance_path: error.instance_path().to_string(),
        schema_path: error.schema_path().to_string(),
        message,
    }
}

fn quote_property(property: &Value) -> String {
    match property {
        Value::String(name) => format!("'{name}'"),
        other => other.to_string(),
    }
}
