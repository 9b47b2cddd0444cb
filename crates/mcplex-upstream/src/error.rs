//! Errors of talking to one upstream. Each names the server; none blames the caller for a fault
//! of the upstream (an upstream JSON-RPC error is kept apart from transport faults).

use std::time::Duration;

use mcplex_config::Redactor;
use mcplex_protocol::ServerHealth;
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
    /// No server of that name runs: it was removed or disabled (a call that resolved its tool
    /// just before).
    #[error("server {server:?} is not running: it was removed or disabled")]
    NotRunning { server: String },
    /// The server is configured but has no live connection right now.
    #[error("server {server:?} is not connected ({health})")]
    Unavailable {
        server: String,
        health: ServerHealth,
    },
    /// The wire failed (spawn, HTTP status, I/O, unparsable answer).
    #[error("server {server:?}: {reason}")]
    Transport { server: String, reason: String },
    /// A listing (`tools/list`, …) grew past what one may hold over all its pages.
    #[error(
        "server {server:?}: {method} refused: {items}+ items, {bytes}+ bytes so far; a listing may hold at most {} items and {} MiB",
        crate::lifecycle::MAX_LISTING_ITEMS,
        crate::lifecycle::MAX_LISTING_BYTES / (1024 * 1024)
    )]
    ListingTooLarge {
        server: String,
        method: String,
        items: usize,
        bytes: usize,
    },
    /// A `per_user` server, and the caller has not connected its own account to it (or its
    /// login was revoked or can no longer be renewed): `link` starts its own login.
    #[error("{}", not_connected(server, caller, link.as_deref()))]
    NotConnected {
        server: String,
        caller: String,
        link: Option<String>,
    },
}

fn not_connected(server: &str, caller: &str, link: Option<&str>) -> String {
    match link {
        Some(link) => format!(
            "{server} acts for each caller with the caller's own account, and {caller} has not connected one: open {link} to connect it, then call again"
        ),
        None => format!(
            "{server} acts for each caller with the caller's own account, and {caller} has not connected one: ask the operator for the link to connect it"
        ),
    }
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
            | UpstreamError::NotRunning { server }
            | UpstreamError::Transport { server, .. }
            | UpstreamError::ListingTooLarge { server, .. }
            | UpstreamError::NotConnected { server, .. } => server,
        }
    }
}

impl UpstreamError {
    /// The same error with `redactor`'s secrets and every URL's credentials removed from its
    /// text: the message and data of an upstream's own error (an upstream may echo a header or an
    /// env value), transport and disconnect reasons (they name URLs).
    pub fn redacted(self, redactor: &Redactor) -> UpstreamError {
        match self {
            UpstreamError::Rpc {
                server,
                code,
                message,
                data,
            } => UpstreamError::Rpc {
                server,
                code,
                message: redactor.redact(&message),
                data: data.map(|mut data| {
                    redact_strings(&mut data, redactor);
                    data
                }),
            },
            UpstreamError::Closed { server, reason } => UpstreamError::Closed {
                server,
                reason: redactor.redact(&reason),
            },
            UpstreamError::Unavailable { server, health } => UpstreamError::Unavailable {
                server,
                health: health.map_reason(|reason| redactor.redact(reason)),
            },
            UpstreamError::Transport { server, reason } => UpstreamError::Transport {
                server,
                reason: redactor.redact(&reason),
            },
            other @ (UpstreamError::Timeout { .. }
            | UpstreamError::NotRunning { .. }
            | UpstreamError::Cancelled { .. }
            | UpstreamError::ListingTooLarge { .. }
            | UpstreamError::NotConnected { .. }) => other,
        }
    }
}

/// Redacts every string (keys too) inside `value`.
pub(crate) fn redact_strings(value: &mut Value, redactor: &Redactor) {
    match value {
        Value::String(text) => *text = redactor.redact(text),
        Value::Array(items) => items.iter_mut().for_each(|v| redact_strings(v, redactor)),
        Value::Object(map) => {
            let entries = std::mem::take(map);
            for (key, mut item) in entries {
                redact_strings(&mut item, redactor);
                map.insert(redactor.redact(&key), item);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_upstream_error_echoing_a_secret_is_redacted_to_the_last_string() {
        let redactor = Redactor::of(["sk-live-123".to_owned()]);
        let error = UpstreamError::Rpc {
            server: "s".into(),
            code: -32000,
            message: "bad key sk-live-123".into(),
            data: Some(Box::new(json!({"sk-live-123": ["was sk-live-123", 1]}))),
        }
        .redacted(&redactor);
        let UpstreamError::Rpc { message, data, .. } = &error else {
            panic!("kind kept")
        };
        assert_eq!(message, "bad key [redacted]");
        assert_eq!(
            data.as_deref(),
            Some(&json!({"[redacted]": ["was [redacted]", 1]}))
        );
        let transport = UpstreamError::Transport {
            server: "s".into(),
            reason: "POST http://u:p@h/?k=v: refused".into(),
        }
        .redacted(&redactor);
        assert_eq!(
            transport.to_string(),
            "server \"s\": POST http://[redacted]@h/?k=[redacted]: refused"
        );
    }
}

/// Why a connection to a server could not be opened, up to its first listing. URLs are shown
/// redacted and a header only by its name: its value may be a secret.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ConnectError {
    #[error("invalid header name {0:?}")]
    HeaderName(String),
    /// The header's name; never its value.
    #[error("header {0:?} has an invalid value")]
    HeaderValue(String),
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
    /// A sandboxed command that is not a file nor on the server's `PATH`.
    #[error("cannot start {command:?}: not found (not a file, nor on the server's PATH)")]
    NotFound { command: String },
    #[error("cannot start {command:?}: {reason}")]
    Spawn { command: String, reason: String },
    #[error("the process exited at once")]
    ExitedAtOnce,
    #[error("the process has no stdio pipes")]
    NoPipes,
    /// The server requires isolation this kernel cannot give.
    #[error("{0}")]
    Sandbox(mcplex_sandbox::Refused),
    #[error("cannot make {}: {reason}", dir.display())]
    TempBase {
        dir: std::path::PathBuf,
        reason: String,
    },
    #[error("cannot make a temp directory: {0}")]
    TempDir(String),
    #[error("cannot write the sandbox plan: {0}")]
    Plan(String),
    /// `shown` is the URL redacted.
    #[error("invalid URL {shown:?}: {reason}")]
    Url { shown: String, reason: String },
    /// The legacy SSE stream's GET failed to get an answer.
    #[error("GET {shown}: {reason}")]
    Get { shown: String, reason: String },
    /// The legacy SSE stream's GET was answered with an error; `body` is redacted and cut.
    #[error(
        "GET {shown}: HTTP {status}: {}{body}",
        refusal.as_ref().map(|why| format!("{why}: ")).unwrap_or_default()
    )]
    Status {
        shown: String,
        status: reqwest::StatusCode,
        refusal: Option<String>,
        body: String,
    },
    #[error("event stream broke: {0}")]
    StreamBroke(String),
    /// `endpoint` is redacted.
    #[error("bad endpoint {endpoint:?}: {reason}")]
    BadEndpoint { endpoint: String, reason: String },
    #[error("the event stream ended before announcing an endpoint")]
    NoEndpoint,
    #[error("no endpoint event within {0}s")]
    EndpointTimeout(u64),
    #[error("streamable HTTP failed ({streamable}); legacy SSE failed too ({legacy})")]
    BothFailed {
        streamable: Box<ConnectError>,
        legacy: Box<ConnectError>,
    },
    #[error("no built-in server {0:?}")]
    NoBuiltin(String),
    /// The handshake or the first listing failed.
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    #[error("the handshake timed out")]
    HandshakeTimeout,
    #[error("\"per_user\" needs a streamable HTTP server")]
    PerUserNeedsHttp,
}
