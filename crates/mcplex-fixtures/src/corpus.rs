//! Tool corpora: `shared/corpora/*.tools.json` rows (`{server, tool, description, schema |
//! inputSchema}`) turned into tool definitions with compiled validators.

use serde_json::{Value, json};

/// One corpus tool: its definition and, when its schema compiles, a validator.
pub struct CorpusTool {
    pub server: String,
    pub definition: Value,
    pub validator: Option<jsonschema::Validator>,
}

/// The ref45 corpus embedded at build time.
pub fn ref45() -> Vec<CorpusTool> {
    load_corpus(include_str!("../data/ref45.tools.json")).unwrap_or_default()
}

/// Parses a corpus file. Rows without a tool name are skipped.
pub fn load_corpus(text: &str) -> Result<Vec<CorpusTool>, String> {
    let document: Value =
        serde_json::from_str(text).map_err(|e| format!("corpus is not JSON: {e}"))?;
    let rows = document
        .get("tools")
        .and_then(Value::as_array)
        .ok_or("corpus has no \"tools\" array")?;
    Ok(rows
        .iter()
        .filter_map(|row| {
            let name = row.get("tool").and_then(Value::as_str)?;
            let server = row
                .get("server")
                .and_then(Value::as_str)
                .unwrap_or("corpus");
            let schema = row
                .get("schema")
                .or_else(|| row.get("inputSchema"))
                .filter(|s| s.is_object())
                .cloned()
                .unwrap_or_else(|| json!({"type": "object"}));
            let validator = jsonschema::validator_for(&schema).ok();
            let definition = json!({
                "name": name,
                "description": row.get("description").and_then(Value::as_str).unwrap_or_default(),
                "inputSchema": schema,
            });
            Some(CorpusTool {
                server: server.to_owned(),
                definition,
                validator,
            })
        })
        .collect())
}
