//! Why a tool call produced no upstream result.

use mcplex_upstream::UpstreamError;

/// A failed dispatch. Upstream faults stay typed so a surface never blames the caller for them.
#[derive(Debug, thiserror::Error)]
pub enum DispatchError {
    /// No visible tool has this name (display name or `server:tool`).
    #[error("unknown tool: {name}")]
    UnknownTool { name: String },
    /// The upstream failed, timed out, or answered with a JSON-RPC error.
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
}
