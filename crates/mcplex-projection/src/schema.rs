//! An upstream's `inputSchema` as a model API accepts it. Both APIs take JSON Schema but refuse
//! some roots, and a refused tool fails the *whole* request, not just that tool:
//!
//! - Anthropic `input_schema`: the root must be `"type": "object"`; `oneOf`, `allOf` and `anyOf`
//!   at the root are refused ("input_schema does not support oneOf, allOf, or anyOf at the top
//!   level").
//! - OpenAI `parameters`: the root must be `"type": "object"`; `oneOf`, `anyOf`, `allOf`, `enum`,
//!   `not` (and, in later error texts, `const`) at the root are refused.
//!
//! mcplex rewrites only the root: `type` becomes `"object"`, `properties` is added when missing,
//! and the refused keywords are dropped. Nested schemas are passed as the upstream sent them
//! (both APIs accept them there; OpenAI functions are sent with `strict: false`). What a dropped
//! keyword expressed is still enforced: every call is validated by mcplex against the
//! upstream's own schema, and a call that violates it comes back as an argument error.

use serde_json::{Map, Value};

use crate::Provider;

/// Root keywords each API refuses.
pub fn refused_at_root(provider: Provider) -> &'static [&'static str] {
    match provider {
        Provider::Anthropic => &["oneOf", "allOf", "anyOf"],
        Provider::OpenAi => &["oneOf", "anyOf", "allOf", "enum", "not", "const"],
    }
}

/// `input_schema` (Anthropic) or `parameters` (OpenAI) for a tool whose raw `inputSchema` is
/// `input` (`None` when the upstream sent none).
pub fn for_provider(input: Option<&Value>, provider: Provider) -> Value {
    let mut root = match input {
        Some(Value::Object(schema)) => schema.clone(),
        _ => Map::new(),
    };
    for keyword in refused_at_root(provider) {
        root.remove(*keyword);
    }
    root.insert("type".to_owned(), Value::String("object".to_owned()));
    if !root.get("properties").is_some_and(Value::is_object) {
        root.insert("properties".to_owned(), Value::Object(Map::new()));
    }
    Value::Object(root)
}
