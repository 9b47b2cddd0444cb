//! What the gateway counts, in one process-wide registry, rendered in the Prometheus text format
//! at `/metrics`.
//!
//! Owns: the metric families and their label sets (calls by server, tool and status; call
//! latency by server; upstream state and restarts; snapshot rebuilds; validation failures;
//! search latency; sessions) and [`render`]. Recording is a few atomic operations, cheap enough
//! for every call.
//! Must not: know where numbers come from; callers record, this crate only holds and renders.

use std::sync::{Arc, OnceLock};

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// A configured name (a server's, a tool's) as a label value. It shares the catalog's text, so
/// counting a call copies none.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct Name(pub Arc<str>);

impl From<&str> for Name {
    fn from(name: &str) -> Name {
        Name(name.into())
    }
}

impl From<&Arc<str>> for Name {
    fn from(name: &Arc<str>) -> Name {
        Name(name.clone())
    }
}

impl EncodeLabelValue for Name {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        EncodeLabelValue::encode(&&*self.0, encoder)
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CallLabels {
    pub server: Name,
    pub tool: Name,
    /// `ok`, `tool_error`, `invalid_arguments`, `unknown_tool`, `unavailable`,
    /// `upstream_error`, `timeout` or `cancelled`.
    pub status: &'static str,
}

/// A request to an upstream other than a tool call (`prompts/get`, `resources/read`, ...).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub server: Name,
    pub method: &'static str,
    /// As for [`CallLabels::status`].
    pub status: &'static str,
}

/// A tool call a caller's limit refused: which limit (`calls_per_minute` or `concurrent_calls`)
/// of which class (`all`, `write` or `destructive`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LimitLabels {
    pub limit: &'static str,
    pub class: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ServerLabels {
    pub server: Name,
}

/// Every metric of the gateway.
pub struct Metrics {
    registry: Registry,
    pub calls: Family<CallLabels, Counter>,
    pub requests: Family<RequestLabels, Counter>,
    pub call_seconds: Family<ServerLabels, Histogram>,
    /// 1 while the upstream is ready, else 0.
    pub upstream_up: Family<ServerLabels, Gauge>,
    pub upstream_restarts: Family<ServerLabels, Counter>,
    pub snapshot_rebuilds: Counter,
    pub validation_failures: Family<ServerLabels, Counter>,
    pub search_seconds: Histogram,
    /// Embedding a search query with the sentence model (hybrid search; cache misses only).
    pub query_embedding_seconds: Histogram,
    /// Initialized session-era MCP sessions currently open.
    pub sessions: Gauge,
    /// Tool calls refused by a caller's limit.
    pub limited_calls: Family<LimitLabels, Counter>,
    /// Audit records dropped because the audit writer fell behind.
    pub audit_records_dropped: Counter,
}

fn latency_histogram() -> Histogram {
    // 100 µs .. ~105 s.
    Histogram::new(exponential_buckets(0.0001, 2.0, 21))
}

fn search_histogram() -> Histogram {
    // 10 µs .. ~80 ms.
    Histogram::new(exponential_buckets(0.00001, 2.0, 14))
}

impl Metrics {
    fn new() -> Metrics {
        let mut registry = Registry::with_prefix("mcplex");
        let calls = Family::<CallLabels, Counter>::default();
        registry.register(
            "tool_calls",
            "Tool calls by server, tool and outcome",
            calls.clone(),
        );
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "upstream_requests",
            "Requests other than tool calls (prompts, resources, subscriptions, completion, logging level) by server, method and outcome",
            requests.clone(),
        );
        let call_seconds = Family::<ServerLabels, Histogram>::new_with_constructor(
            latency_histogram as fn() -> Histogram,
        );
        registry.register(
            "tool_call_seconds",
            "Tool call latency through the gateway",
            call_seconds.clone(),
        );
        let upstream_up = Family::<ServerLabels, Gauge>::default();
        registry.register(
            "upstream_up",
            "1 while the upstream server is ready",
            upstream_up.clone(),
        );
        let upstream_restarts = Family::<ServerLabels, Counter>::default();
        registry.register(
            "upstream_restarts",
            "Reconnections of an upstream after it was lost",
            upstream_restarts.clone(),
        );
        let snapshot_rebuilds = Counter::default();
        registry.register(
            "snapshot_rebuilds",
            "Catalog snapshots built and published",
            snapshot_rebuilds.clone(),
        );
        let validation_failures = Family::<ServerLabels, Counter>::default();
        registry.register(
            "validation_failures",
            "Calls refused by argument validation",
            validation_failures.clone(),
        );
        let search_seconds = search_histogram();
        registry.register(
            "search_seconds",
            "Tool search latency",
            search_seconds.clone(),
        );
        let query_embedding_seconds = latency_histogram();
        registry.register(
            "query_embedding_seconds",
            "Embedding a search query with the sentence model (hybrid search)",
            query_embedding_seconds.clone(),
        );
        let sessions = Gauge::default();
        registry.register(
            "sessions",
            "Open session-era MCP sessions",
            sessions.clone(),
        );
        let limited_calls = Family::<LimitLabels, Counter>::default();
        registry.register(
            "limited_calls",
            "Tool calls refused by a caller's limit, by limit and class of tool",
            limited_calls.clone(),
        );
        let audit_records_dropped = Counter::default();
        registry.register(
            "audit_records_dropped",
            "Audit records dropped because the audit writer fell behind (calls never wait for it)",
            audit_records_dropped.clone(),
        );
        Metrics {
            registry,
            calls,
            requests,
            call_seconds,
            upstream_up,
            upstream_restarts,
            snapshot_rebuilds,
            validation_failures,
            search_seconds,
            query_embedding_seconds,
            sessions,
            limited_calls,
            audit_records_dropped,
        }
    }
}

/// The process-wide metrics.
pub fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(Metrics::new)
}

/// The Prometheus text exposition of every metric.
pub fn render() -> String {
    let mut out = String::new();
    if prometheus_client::encoding::text::encode(&mut out, &metrics().registry).is_err() {
        out.clear();
    }
    out
}

/// Lost ready connections to `server` since this process started (`mcplex_upstream_restarts_total`).
pub fn upstream_restarts(server_name: &str) -> u64 {
    metrics()
        .upstream_restarts
        .get_or_create(&server(server_name))
        .get()
}

/// Shorthand for a server label.
pub fn server(name: impl Into<Name>) -> ServerLabels {
    ServerLabels {
        server: name.into(),
    }
}
