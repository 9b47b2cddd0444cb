//! JSON Schema → compact signature: `create_issue(owner*:str, repo*:str, labels:[str], milestone~:obj)`.
//!
//! The grammar is normative and written down in `docs/direct-surface.md`; this crate is its only
//! implementation. `*` marks a required parameter, `~` one whose rendering collapsed something an
//! agent may need (nested objects, `$ref`, long enums, arrays of objects, combinators); a
//! signature without `~` is directly callable, and `(~)` means the schema could not be read.
//! Pure, total and deterministic: any JSON value compiles, nothing panics, the same schema always
//! gives the same text.

mod render;

use serde_json::Value;

/// A compiled signature: the parenthesised parameter list and whether it is lossy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    params: String,
    lossy: bool,
}

impl Signature {
    /// `(owner*:str, …)`, without the tool name.
    pub fn params(&self) -> &str {
        &self.params
    }

    /// Whether the signature contains `~`: call `describe_tool` before calling the tool.
    pub fn is_lossy(&self) -> bool {
        self.lossy
    }

    /// The full signature line: the bare tool name followed by the parameter list.
    pub fn render(&self, tool_name: &str) -> String {
        format!("{tool_name}{}", self.params)
    }
}

/// Compiles a tool's `inputSchema`.
pub fn compile(schema: &Value) -> Signature {
    render::signature(schema)
}

#[cfg(test)]
mod tests;
