//! The audit log as `mcplex activity --json` prints it.

use serde::{Deserialize, Serialize};

/// One request the gateway sent an upstream (a tool call, a prompt, a resource read, ...),
/// newest first in a listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivityEntry {
    /// Unix milliseconds when the call started.
    pub at_ms: i64,
    pub request_id: String,
    /// The agent token's name; `null` for the local user or the admin key.
    pub token: Option<String>,
    /// A tool call's tool (`server:tool`, or the name as sent when it did not resolve); for any
    /// other request `server:` and what it was about (the prompt, the URI, the level).
    pub tool: String,
    /// The outcome as the audit log recorded it.
    pub status: String,
    pub duration_us: i64,
    pub request_bytes: i64,
    pub response_bytes: i64,
    /// The arguments as JSON text, only with `audit_arguments`.
    pub arguments: Option<String>,
    /// The gateway that served the call (`host:port`), where several share the store.
    pub replica: Option<String>,
    /// The JSON-RPC method that reached the upstream (`tools/call`, `prompts/get`, ...).
    pub method: String,
}
