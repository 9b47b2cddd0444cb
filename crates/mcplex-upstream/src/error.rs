//! Errors of talking to one upstream. Each names the server; none blames the caller for a fault
//! of the upstream (an upstream JSON-RPC error is kept apart from transport faults).

use std::time::Duration;

use serde_json::Value;

/// Why a request to an upstream did not produce a result.
#[derive(Debug, Clone, thiserror::Error)]
pub enum UpstreamError {
    /// The upstream answered with a JSON-RPC error.
    #[error("{server}: {message}")]
    Rpc {
        server: String,
        code: i64,
        message: String,
        data: Option<Box<Value>>,
    },
    /// No answer within the call timeout; a cancellation was sent upstream.
    #[error("server {server:?} did not answer {method} within {}", humantime_secs(*after))]
    Timeout {
        server: String,
        method: String,
        after: Duration,
    },
    /// The caller cancelled; a cancellation was sent upstream.
    #[error("request to server {server:?} was cancelled")]
    Cancelled { server: String },
    /// The connection is gone (process exited, stream closed, session expired).
    #[error("server {server:?} disconnected: {reason}")]
    Closed { server: String, reason: String },
    /// The server is configured but has no live connection right now.
    #[error("server {server:?} is not connected ({state})")]
    Unavailable { server: String, state: String },
    /// The wire failed (spawn, HTTP status, I/O, unparsable answer).
    #[error("server {server:?}: {reason}")]
    Transport { server: String, reason: String },
}

fn humantime_secs(duration: Duration) -> String {
    if duration.subsec_millis() == 0 {
        format!("{}s", duration.as_secs())
    } else {
        format!("{}ms", duration.as_millis())
    }
}

impl UpstreamError {
    pub fn server(&self) -> &str {
        match self {
            UpstreamError::Rpc { server, .. }
            | UpstreamError::Timeout { server, .. }
            | UpstreamError::Cancelled { server }
            | UpstreamError::Closed { server, .. }
            | UpstreamError::Unavailable { server, .. }
            | UpstreamError::Transport { server, .. } => server,
        }
    }
}
