//! Why a request to an upstream produced no result.

use mcplex_catalog::{ArgumentProblems, UnavailableReason};
use mcplex_upstream::UpstreamError;
use serde_json::Value;

/// A failed dispatch. Upstream faults stay typed so a surface never blames the caller for them.
#[derive(Debug, thiserror::Error)]
pub enum DispatchError {
    /// No visible tool has this name (display name or `server:tool`).
    #[error("unknown tool: {name}")]
    UnknownTool { name: String },
    /// The tool exists and the caller may know it, but it is not served: its server is
    /// quarantined, or the tool is pending approval, changed since approval, or blocked.
    #[error("tool {name} is unavailable: {}", reason.as_str())]
    Unavailable {
        name: String,
        reason: UnavailableReason,
    },
    /// The arguments do not match the tool's stored upstream schema; the call never left the
    /// gateway. Carries what an agent needs to fix the call.
    #[error("invalid arguments for {name}: {problems}")]
    InvalidArguments {
        name: String,
        problems: ArgumentProblems,
        input_schema: Value,
    },
    /// One of the caller's limits refused the call; it never left the gateway.
    #[error(transparent)]
    Limited(#[from] crate::Limited),
    /// The upstream failed, timed out, or answered with a JSON-RPC error.
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
}
