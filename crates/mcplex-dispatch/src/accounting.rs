//! What every request to an upstream leaves behind: a request id, metrics, and an audit record
//! for the operator.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mcplex_protocol::json_len;
use mcplex_upstream::{RawResult, UpstreamError};
use serde_json::Value;
use tokio::sync::mpsc;

use mcplex_names::ToolId;

use crate::{DispatchError, UpstreamMethod};

/// How a request ended: the metrics label and the audit log's `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallStatus {
    Ok,
    /// The upstream answered with a result marked `isError`.
    ToolError,
    InvalidArguments,
    UnknownTool,
    Unavailable,
    Timeout,
    Cancelled,
    UpstreamError,
    /// Refused by one of the caller's limits ([`crate::Limited`]); the call never left.
    RateLimited,
}

impl CallStatus {
    /// Every status, in a stable order.
    pub const ALL: [CallStatus; 9] = [
        CallStatus::Ok,
        CallStatus::ToolError,
        CallStatus::InvalidArguments,
        CallStatus::UnknownTool,
        CallStatus::Unavailable,
        CallStatus::Timeout,
        CallStatus::Cancelled,
        CallStatus::UpstreamError,
        CallStatus::RateLimited,
    ];

    /// The wire text (metrics labels, the audit log): the one table of these words.
    pub fn as_str(self) -> &'static str {
        match self {
            CallStatus::Ok => "ok",
            CallStatus::ToolError => "tool_error",
            CallStatus::InvalidArguments => "invalid_arguments",
            CallStatus::UnknownTool => "unknown_tool",
            CallStatus::Unavailable => "unavailable",
            CallStatus::Timeout => "timeout",
            CallStatus::Cancelled => "cancelled",
            CallStatus::UpstreamError => "upstream_error",
            CallStatus::RateLimited => "rate_limited",
        }
    }

    /// The status of an outcome.
    pub fn of(outcome: &Result<Value, DispatchError>) -> CallStatus {
        match outcome {
            Ok(result) if result.get("isError") == Some(&Value::Bool(true)) => {
                CallStatus::ToolError
            }
            Ok(_) => CallStatus::Ok,
            Err(error) => CallStatus::of_error(error),
        }
    }

    /// The status of a tool call's outcome, its result as the upstream wrote it.
    pub fn of_raw(outcome: &Result<RawResult, DispatchError>) -> CallStatus {
        match outcome {
            Ok(result) if result.is_error() => CallStatus::ToolError,
            Ok(_) => CallStatus::Ok,
            Err(error) => CallStatus::of_error(error),
        }
    }

    fn of_error(error: &DispatchError) -> CallStatus {
        match error {
            DispatchError::InvalidArguments { .. } => CallStatus::InvalidArguments,
            DispatchError::UnknownTool { .. } => CallStatus::UnknownTool,
            DispatchError::Unavailable { .. } => CallStatus::Unavailable,
            DispatchError::Limited(_) => CallStatus::RateLimited,
            DispatchError::Upstream(UpstreamError::Timeout { .. }) => CallStatus::Timeout,
            DispatchError::Upstream(UpstreamError::Cancelled { .. }) => CallStatus::Cancelled,
            DispatchError::Upstream(_) => CallStatus::UpstreamError,
        }
    }
}

impl std::fmt::Display for CallStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One finished request, as the audit log keeps it. Argument values only when the operator
/// asked.
#[derive(Debug, Clone)]
pub struct AuditRecord {
    /// Unix milliseconds when the request started.
    pub at_ms: i64,
    pub request_id: String,
    /// The agent token's name; `None` for the local user or the admin key.
    pub token: Option<Arc<str>>,
    pub method: UpstreamMethod,
    /// A tool call: the canonical id when the name resolved, else the name as sent
    /// (truncated). Any other request: `server:` and what it is about in the upstream's terms
    /// (the prompt's name, the URI, the level).
    pub target: String,
    pub status: CallStatus,
    pub duration: Duration,
    pub request_bytes: usize,
    pub response_bytes: usize,
    pub arguments: Option<Value>,
}

/// Where finished requests are reported: the operator's audit log (bounded: when its writer
/// falls behind, records are dropped and counted, calls never wait), with argument values only
/// when `with_arguments`.
pub struct Audit {
    pub(crate) records: mpsc::Sender<AuditRecord>,
    pub(crate) with_arguments: bool,
}

impl Audit {
    pub fn new(records: mpsc::Sender<AuditRecord>, with_arguments: bool) -> Audit {
        Audit {
            records,
            with_arguments,
        }
    }
}

/// One request being accounted for: started when it reached the boundary.
pub(crate) struct Ledger {
    pub(crate) request_id: String,
    started: Instant,
    at_ms: i64,
}

/// What the boundary learnt about a request by the time it finished.
pub(crate) struct Finished<'a> {
    pub(crate) method: UpstreamMethod,
    /// The configured server, when the request resolved to one.
    pub(crate) server: Option<&'a Arc<str>>,
    /// The tool's own name (tool calls that resolved).
    pub(crate) tool: Option<&'a Arc<str>>,
    pub(crate) target: Target<'a>,
    pub(crate) token: Option<Arc<str>>,
    pub(crate) request_bytes: usize,
    pub(crate) arguments: Option<Value>,
}

/// What a request was about, written out only for the audit log and the debug log.
pub(crate) enum Target<'a> {
    /// A tool call: the id its name resolved to, else the name as sent.
    Tool {
        resolved: Option<&'a ToolId>,
        requested: &'a str,
    },
    /// Another request: its server and what it is about in the upstream's terms.
    About { server: &'a str, subject: &'a str },
}

impl std::fmt::Display for Target<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Tool {
                resolved: Some(id), ..
            } => write!(f, "{id}"),
            // What a caller typed, cut: a log line or an audit row stays bounded.
            Target::Tool {
                resolved: None,
                requested,
            } => f.write_str(truncated(requested, 200)),
            Target::About { server, subject } => write!(f, "{server}:{subject}"),
        }
    }
}

/// At most `max` characters of `text`, cut at a character boundary.
pub(crate) fn truncated(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

impl Ledger {
    pub(crate) fn open() -> Ledger {
        Ledger {
            request_id: next_request_id(),
            started: Instant::now(),
            at_ms: now_ms(),
        }
    }

    /// Counts the request in the metrics, logs it at debug level and hands its record to the
    /// audit log (dropped, never waited for, when the writer is behind).
    /// `span` is the request's `mcplex.call` span, which learns how it ended.
    pub(crate) fn close(
        self,
        finished: Finished<'_>,
        outcome: Outcome,
        audit: Option<&Audit>,
        span: &tracing::Span,
    ) {
        let Outcome {
            status,
            response_bytes,
        } = outcome;
        let duration = self.started.elapsed();
        let metrics = mcplex_telemetry::metrics();
        // Labels only ever hold configured names, never what a caller typed.
        let unresolved = || mcplex_telemetry::Name::from("-");
        let server = finished
            .server
            .map_or_else(unresolved, mcplex_telemetry::Name::from);
        match finished.method {
            UpstreamMethod::ToolsCall => {
                let labels = mcplex_telemetry::CallLabels {
                    server: server.clone(),
                    tool: finished
                        .tool
                        .map_or_else(unresolved, mcplex_telemetry::Name::from),
                    status: status.as_str(),
                };
                metrics.calls.get_or_create(&labels).inc();
                let server = mcplex_telemetry::ServerLabels { server };
                if status == CallStatus::InvalidArguments {
                    metrics.validation_failures.get_or_create(&server).inc();
                }
                if finished.server.is_some() {
                    metrics
                        .call_seconds
                        .get_or_create(&server)
                        .observe(duration.as_secs_f64());
                }
            }
            method => {
                metrics
                    .requests
                    .get_or_create(&mcplex_telemetry::RequestLabels {
                        server,
                        method: method.as_str(),
                        status: status.as_str(),
                    })
                    .inc();
            }
        }
        mcplex_trace::finished(
            span,
            finished.server.map(|server| &**server),
            &self.request_id,
            status.as_str(),
        );
        tracing::debug!(
            request_id = %self.request_id,
            status = status.as_str(),
            elapsed_ms = duration.as_millis() as u64,
            "{} {}",
            finished.method,
            finished.target
        );
        let Some(audit) = audit else {
            return;
        };
        let record = AuditRecord {
            at_ms: self.at_ms,
            request_id: self.request_id,
            token: finished.token,
            method: finished.method,
            target: finished.target.to_string(),
            status,
            duration,
            request_bytes: finished.request_bytes,
            response_bytes,
            arguments: finished.arguments,
        };
        // Closed: the writer has ended with the gateway's shutdown; nothing is behind.
        if let Err(mpsc::error::TrySendError::Full(_)) = audit.records.try_send(record) {
            let before = mcplex_telemetry::metrics().audit_records_dropped.inc();
            // Said on the first and then every thousandth: a flood must not flood the log too.
            if before.is_multiple_of(1000) {
                tracing::warn!(
                    "the audit writer is behind: {} record(s) dropped so far (mcplex_audit_records_dropped_total)",
                    before + 1
                );
            }
        }
    }
}

/// A request id unique within this process and unlikely to repeat across restarts:
/// the start time's low bits and a counter.
fn next_request_id() -> String {
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

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// How a request ended, as the ledger records it.
pub(crate) struct Outcome {
    pub(crate) status: CallStatus,
    /// The result's size in JSON (0 without a result).
    pub(crate) response_bytes: usize,
}

impl Outcome {
    /// Of a request whose result was parsed.
    pub(crate) fn of(outcome: &Result<Value, DispatchError>) -> Outcome {
        Outcome {
            status: CallStatus::of(outcome),
            response_bytes: outcome
                .as_ref()
                .map(|value| json_len(value, usize::MAX))
                .unwrap_or(0),
        }
    }

    /// Of a request that failed.
    pub(crate) fn failed(error: &DispatchError) -> Outcome {
        Outcome {
            status: CallStatus::of_error(error),
            response_bytes: 0,
        }
    }

    /// Of a tool call, its result as the upstream wrote it.
    pub(crate) fn of_raw(outcome: &Result<RawResult, DispatchError>) -> Outcome {
        Outcome {
            status: CallStatus::of_raw(outcome),
            response_bytes: outcome.as_ref().map(RawResult::json_len).unwrap_or(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_has_a_wire_text_of_its_own() {
        let texts: std::collections::HashSet<&str> =
            CallStatus::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(texts.len(), CallStatus::ALL.len());
    }

    #[test]
    fn a_name_the_caller_typed_is_cut_at_200_characters() {
        let long = "é".repeat(300);
        let target = Target::Tool {
            resolved: None,
            requested: &long,
        };
        assert_eq!(target.to_string(), "é".repeat(200));
        let id = ToolId::new("s", "t");
        let resolved = Target::Tool {
            resolved: Some(&id),
            requested: &long,
        };
        assert_eq!(resolved.to_string(), "s:t");
    }

    #[test]
    fn a_record_the_writer_has_no_room_for_is_counted_not_waited_for() {
        let (records, _kept) = mpsc::channel(1);
        let audit = Audit {
            records,
            with_arguments: false,
        };
        let dropped = || mcplex_telemetry::metrics().audit_records_dropped.get();
        let before = dropped();
        for _ in 0..3 {
            let requested = "t";
            let finished = Finished {
                method: UpstreamMethod::ToolsCall,
                server: None,
                tool: None,
                target: Target::Tool {
                    resolved: None,
                    requested,
                },
                token: None,
                request_bytes: 0,
                arguments: None,
            };
            let outcome = Outcome {
                status: CallStatus::UnknownTool,
                response_bytes: 0,
            };
            Ledger::open().close(finished, outcome, Some(&audit), &tracing::Span::none());
        }
        // One fits; the other two are dropped (other tests may drop some at the same time).
        assert!(dropped() >= before + 2, "{before} → {}", dropped());
    }

    #[test]
    fn request_ids_are_unique() {
        let ids: std::collections::HashSet<String> = (0..1000).map(|_| next_request_id()).collect();
        assert_eq!(ids.len(), 1000);
    }
}
