//! `/api/v1/projection/{provider}` (the catalog as a model API's tool definitions),
//! `/api/v1/projection/{provider}/search` (mcplex's search in that API's shape) and
//! `/api/v1/call` (a call by the name a model emitted). These take an agent token as well as the
//! API key; a token sees and calls only its own tools. Definitions and search answers are the
//! provider's own JSON, kept as values: their shapes belong to the provider, not to mcplex.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The query of `GET /api/v1/projection/{provider}` and of its search.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProjectionQuery {
    /// Only this profile's servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Who searches the deferred tools: `provider` (default, the API's own search tool) or
    /// `client` (the application, through `POST …/search`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<String>,
}

/// `GET /api/v1/projection/{provider}`: the request's `tools` array.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProjectionAnswer {
    pub tools: Vec<Value>,
}

/// `POST /api/v1/projection/{provider}/search`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProjectionSearch {
    pub query: String,
    /// At most this many tools (default 5, at most 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// The model's id of the search call, copied into the answer (`tool_use_id` / `call_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

/// `POST /api/v1/call`: the answer is the tool's MCP result (`content`, `isError`, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallRequest {
    /// A display name (as projected) or a canonical `server:tool`.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
}
