//! Provider projection: what a caller may see of a catalog [`Snapshot`], as the tool definitions
//! of a model API that defers tools itself (Anthropic Messages' tool search, OpenAI Responses'
//! `tool_search`), and mcplex's own search answers in those APIs' shapes.
//!
//! - [`tools`]: the `tools` array of a request. A tool the catalog defers by search (`defer_tools`,
//!   a server's `defer`, a tool's `tools.defer`) carries `defer_loading: true`; the provider's
//!   search tool is added when anything is deferred. Order is fixed so the bytes are a function
//!   of the catalog: loaded entries first (by display name; OpenAI: servers whose tools are all
//!   loaded, by server name), then the search tool, then everything that holds a deferred tool.
//!   A deferred server that joins or leaves changes nothing before the first deferred entry.
//! - [`search_answer`]: the item an application returns for its client-side search call:
//!   Anthropic `tool_result` with `tool_reference` blocks, OpenAI `tool_search_output` with the
//!   matched definitions. Ranking is the caller's (mcplex's search, in the binary).
//! - Names are the catalog's display names, which both APIs accept (`^[a-zA-Z0-9_-]{1,64}$`), so
//!   the name a model emits is the name `tools/call` and `POST /api/v1/call` resolve.
//! - Input schemas are the upstream's, with the root rewritten where an API refuses it
//!   ([`schema`]); mcplex still validates calls against the upstream's own schema.
//!
//! Pure: no I/O, no async; JSON values in, JSON values out.

mod anthropic;
mod openai;
pub mod schema;

use mcplex_catalog::{CatalogTool, Scope, Snapshot};
use serde_json::{Map, Value};

/// A model API mcplex projects its catalog for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// Anthropic Messages API.
    Anthropic,
    /// OpenAI Responses API.
    OpenAi,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Anthropic => "anthropic",
            Provider::OpenAi => "openai",
        }
    }

    /// The provider a path segment or `--format` value names; `None` for anything else.
    pub fn parse(text: &str) -> Option<Provider> {
        [Provider::Anthropic, Provider::OpenAi]
            .into_iter()
            .find(|p| p.as_str() == text)
    }
}

/// Who runs the search that reveals deferred tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SearchBy {
    /// The provider's own search tool (Anthropic `tool_search_tool_bm25_20251119`, OpenAI
    /// hosted `tool_search`).
    #[default]
    Provider,
    /// The application, which asks mcplex (`POST /api/v1/projection/{provider}/search`):
    /// a custom `tool_search` tool (Anthropic) or `tool_search` with `execution: "client"`.
    Client,
}

impl SearchBy {
    pub fn parse(text: &str) -> Option<SearchBy> {
        match text {
            "provider" => Some(SearchBy::Provider),
            "client" => Some(SearchBy::Client),
            _ => None,
        }
    }
}

/// The name of the client-side search tool mcplex declares (Anthropic) and describes (OpenAI).
/// No display name can equal it: display names always hold `__`.
pub const CLIENT_SEARCH_TOOL: &str = "tool_search";

/// The `tools` array for `provider`: every tool `scope` may see, in the fixed order above.
pub fn tools(
    snapshot: &Snapshot,
    scope: &Scope,
    provider: Provider,
    search: SearchBy,
) -> Vec<Value> {
    let visible = visible(snapshot, scope);
    match provider {
        Provider::Anthropic => anthropic::tools(&visible, search),
        Provider::OpenAi => openai::tools(&visible, search),
    }
}

/// The answer to a client-side search call in `provider`'s shape, holding `matches` in rank
/// order. `call_id` is the model's id of the search call (`tool_use_id` / `call_id`).
pub fn search_answer(provider: Provider, matches: &[&CatalogTool], call_id: Option<&str>) -> Value {
    match provider {
        Provider::Anthropic => anthropic::search_answer(matches, call_id),
        Provider::OpenAi => openai::search_answer(matches, call_id),
    }
}

/// The tools `scope` may see, in the snapshot's order (sorted by display name).
fn visible<'a>(snapshot: &'a Snapshot, scope: &Scope) -> Vec<&'a CatalogTool> {
    snapshot
        .tools()
        .iter()
        .filter(|tool| snapshot.visible(tool, scope))
        .collect()
}

/// Adds a tool's projected name and, when the upstream sent one, its description to `out`:
/// the part every provider's definition starts with.
fn name_and_description(tool: &CatalogTool, out: &mut Map<String, Value>) {
    out.insert("name".to_owned(), Value::String(tool.display_name.clone()));
    let description = tool
        .raw
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !description.is_empty() {
        out.insert(
            "description".to_owned(),
            Value::String(description.to_owned()),
        );
    }
}

/// The client-side search tool's input: what `POST /api/v1/projection/{provider}/search` takes.
fn search_parameters() -> Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What the tool should do, in a few words"},
            "limit": {"type": "integer", "description": "At most this many tools (default 5)"}
        },
        "required": ["query"]
    })
}

const SEARCH_DESCRIPTION: &str =
    "Search the deferred tools by what they do; the matching tools become callable.";

#[cfg(test)]
mod tests;
