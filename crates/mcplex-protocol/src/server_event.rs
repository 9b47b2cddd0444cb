//! [`ServerEvent`]: one thing that happened to an upstream server (connecting, ready, failed,
//! lost, restarted), as the supervisor records it and the management API shows it, one type for
//! both.

use serde::{Deserialize, Serialize};

/// What happened to a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerEventKind {
    /// A start of its process or connection began.
    Connecting,
    /// It answered its handshake and listing.
    Ready,
    /// A start failed before it was ready.
    Failed,
    /// It was ready, then its process exited or its connection broke.
    Lost,
    /// An operator restarted it.
    Restarted,
}

impl ServerEventKind {
    /// Whether the event is a failure (counted towards a crash loop).
    pub fn is_failure(self) -> bool {
        matches!(self, ServerEventKind::Failed | ServerEventKind::Lost)
    }
}

/// One event of a server's history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerEvent {
    /// Unix milliseconds.
    pub at_ms: i64,
    pub kind: ServerEventKind,
    /// A failure's reason (redacted) or a ready server's tool count and protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}
