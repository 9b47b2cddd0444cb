//! What every call leaves behind: metrics, a request id, and an audit record for the operator.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcplex_upstream::UpstreamError;
use serde_json::Value;

use crate::DispatchError;

/// One finished call, as the audit log keeps it. Argument values only when the operator asked.
#[derive(Debug, Clone)]
pub struct AuditRecord {
    /// Unix milliseconds when the call started.
    pub at_ms: i64,
    pub request_id: String,
    /// The agent token's name; `None` for the local user or the admin key.
    pub token: Option<Arc<str>>,
    /// The canonical id when the name resolved, else the name as sent (truncated).
    pub tool: String,
    pub status: &'static str,
    pub duration: Duration,
    pub request_bytes: usize,
    pub response_bytes: usize,
    pub arguments: Option<Value>,
}

/// A request id unique within this process and unlikely to repeat across restarts:
/// the start time's low bits and a counter.
pub(crate) fn next_request_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    static EPOCH: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let epoch = *EPOCH.get_or_init(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs() & 0xff_ffff)
            .unwrap_or(0)
    });
    format!("{epoch:06x}-{:x}", NEXT.fetch_add(1, Ordering::Relaxed))
}

pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// The metrics label of an outcome.
pub(crate) fn status_of(outcome: &Result<Value, DispatchError>) -> &'static str {
    match outcome {
        Ok(result) if result.get("isError") == Some(&Value::Bool(true)) => "tool_error",
        Ok(_) => "ok",
        Err(DispatchError::InvalidArguments { .. }) => "invalid_arguments",
        Err(DispatchError::UnknownTool { .. }) => "unknown_tool",
        Err(DispatchError::Unavailable { .. }) => "unavailable",
        Err(DispatchError::Upstream(UpstreamError::Timeout { .. })) => "timeout",
        Err(DispatchError::Upstream(UpstreamError::Cancelled { .. })) => "cancelled",
        Err(DispatchError::Upstream(_)) => "upstream_error",
    }
}

/// The serialized size of `value`, without building the text.
pub(crate) fn json_size(value: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}
