//! Content hashes of JSON: canonical form (object keys sorted, no whitespace), then SHA-256.
//! Equal content gives equal hashes whatever key order an upstream used.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// A SHA-256 digest.
pub type ContentHash = [u8; 32];

/// The hash of `value` in canonical form.
pub fn content_hash(value: &Value) -> ContentHash {
    let mut hasher = Sha256::new();
    write_canonical(value, &mut hasher);
    hasher.finalize().into()
}

fn write_canonical(value: &Value, hasher: &mut Sha256) {
    match value {
        Value::Object(object) => {
            let mut keys: Vec<&String> = object.keys().collect();
            keys.sort_unstable();
            hasher.update(b"{");
            for (index, key) in keys.into_iter().enumerate() {
                if index > 0 {
                    hasher.update(b",");
                }
                hasher.update(Value::String(key.clone()).to_string().as_bytes());
                hasher.update(b":");
                if let Some(inner) = object.get(key) {
                    write_canonical(inner, hasher);
                }
            }
            hasher.update(b"}");
        }
        Value::Array(items) => {
            hasher.update(b"[");
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    hasher.update(b",");
                }
                write_canonical(item, hasher);
            }
            hasher.update(b"]");
        }
        scalar => hasher.update(scalar.to_string().as_bytes()),
    }
}

/// The pinned identity of a tool: SHA-256 over its name, description, canonical input schema
/// and output schema (absent fields count as `null`). Annotations and `_meta` are left out: they
/// are hints about a tool, not what a model reads to decide how to call it. Lowercase hex.
pub fn pin_hash(tool: &Map<String, Value>) -> String {
    let field = |key: &str| tool.get(key).cloned().unwrap_or(Value::Null);
    let mut pinned = Map::new();
    pinned.insert("name".to_owned(), field("name"));
    pinned.insert("description".to_owned(), field("description"));
    pinned.insert("inputSchema".to_owned(), field("inputSchema"));
    pinned.insert("outputSchema".to_owned(), field("outputSchema"));
    hex(&content_hash(&Value::Object(pinned)))
}

/// The pinned identity of a prompt (a prompt is text a model reads): SHA-256 over its name,
/// title, description and arguments (absent fields count as `null`). Lowercase hex.
pub fn prompt_pin_hash(prompt: &Map<String, Value>) -> String {
    let field = |key: &str| prompt.get(key).cloned().unwrap_or(Value::Null);
    let mut pinned = Map::new();
    for key in ["name", "title", "description", "arguments"] {
        pinned.insert(key.to_owned(), field(key));
    }
    hex(&content_hash(&Value::Object(pinned)))
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut out, byte| {
            let _ = write!(out, "{byte:02x}");
            out
        })
}
