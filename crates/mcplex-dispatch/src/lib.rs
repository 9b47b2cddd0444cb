//! The one boundary every request to an upstream passes, and the live state it reads.
//!
//! Owns: [`Gateway`] (the current catalog [`Snapshot`](mcplex_catalog::Snapshot) behind an
//! `ArcSwap`, the upstream connections, which it creates and never hands out, and watch channels
//! that tick when what the surfaces serve changes), [`Gateway::call`] for tool calls (resolve
//! the name in the snapshot → validate → call the upstream with the server's timeout, progress
//! and cancellation → the raw result, untouched) and [`Gateway::request`] for everything else
//! (it takes only a [`Route`](mcplex_catalog::Route) the snapshot resolved). Both give every
//! request a request id, metrics and an audit record. [`CallLimiter`] holds each caller to its
//! limits on tool calls, counted with the other replicas'.
//! Must not: parse or render any downstream wire format; surfaces turn [`DispatchError`] into
//! wire errors in one place each.

mod accounting;
mod call;
mod error;
mod forward;
mod gateway;
mod limits;
#[cfg(test)]
mod limits_tests;
mod limits_window;
mod query_embedding;
mod request;
mod search;

pub use accounting::{Audit, AuditRecord, CallStatus};
pub use call::{CallContext, ToolCall};
pub use error::DispatchError;
pub use forward::RequestContext;
pub use gateway::{Gateway, GatewaySetup};
pub use limits::{Admission, CallLimiter, CallerUsage, LimitClass, LimitKind, Limited, UsageRow};
pub use mcplex_protocol::REQUEST_ID_META;
pub use query_embedding::QueryEmbedder;
pub use request::{UpstreamMethod, UpstreamRequest};
pub use search::{Found, RankBy, ToolQuery};
