//! The audit log as `mcplex activity --json` prints it.

use serde::{Deserialize, Serialize};

/// One call the gateway made, newest first in a listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivityEntry {
    /// Unix milliseconds when the call started.
    pub at_ms: i64,
    pub request_id: String,
    /// The agent token's name; `null` for the local user or the admin key.
    pub token: Option<String>,
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
}
