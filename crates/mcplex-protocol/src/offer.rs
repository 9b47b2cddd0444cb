//! [`Offer`]: what an upstream server offers besides tools, as it listed them (raw JSON). The
//! upstream client reads it, the catalog serves from it; one type, handed over whole.

use serde_json::Value;

/// What one server offers besides tools, read as its capabilities announce.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Offer {
    /// The server's `capabilities`, as it declared them.
    pub capabilities: Value,
    /// Every page of `prompts/list`.
    pub prompts: Vec<Value>,
    /// Every page of `resources/list`.
    pub resources: Vec<Value>,
    /// Every page of `resources/templates/list`.
    pub resource_templates: Vec<Value>,
}
