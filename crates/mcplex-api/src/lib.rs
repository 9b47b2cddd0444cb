//! The management API's wire contract: the request and answer bodies of every `/api/v1` route,
//! its paths, and the JSON the management commands print (`servers list --json`, `token list
//! --json`, `tools show --json`, `tools list --json`, `activity --json`), and the dashboard's extra routes. The gateway serializes
//! these types and the CLI deserializes the same ones, so the two cannot drift apart; the unit
//! tests pin the exact bytes.
//!
//! Closed vocabularies (a server's state and status, a tool's status, permission and reason, a
//! token's status) are enums here with their wire text in one place each. The gateway maps its
//! own types (the catalog's, the trust crate's, the store's) into these at the edge.
//!
//! Pure: serde types only. No I/O, no async, no HTTP client or server type, no gateway crate.

mod activity;
mod answers;
mod dashboard;
mod projection;
mod routes;
mod servers;
mod tokens;
mod tools;

pub use activity::ActivityEntry;
pub use answers::{Done, ErrorAnswer, IdentityAnswer, IdentityRequest, LoginStarted};
pub use dashboard::{
    ActivityAnswer, ActivityExportQuery, ActivityFilter, ConfigAnswer, DiagnosticEntry,
    LoginRequest, NoModel, Ranking, SearchAnswer, SearchHit, SearchRequest, SearchStatus,
    ServerStats, SessionAnswer, StatsAnswer, StderrAnswer, TrendPoint, TrendsAnswer, TrendsQuery,
    WithoutModel,
};
pub use projection::{CallRequest, ProjectionAnswer, ProjectionQuery, ProjectionSearch};
pub use routes::{ServerAction, ToolAction, encode_segment, paths};
pub use servers::{
    AddServer, ApprovalsAnswer, CRASH_LOOP_FAILURES, ConnectedCaller, Isolation, IsolationLevel,
    RecentFailures, Server, ServerAdded, ServerDetail, ServerState, ServerStatus, ServersAnswer,
};
pub use tokens::{
    CallerUsage, CreateToken, CreatedToken, LimitsAnswer, SetLimits, Token, TokenStatus,
    TokensAnswer,
};
pub use tools::{
    ApproveQuery, Definition, ListedTool, Permission, ReviewState, ServedTool, Tool, ToolReview,
    ToolStatus, ToolsAnswer, WithheldReason, WithheldTool,
};

#[cfg(test)]
mod tests;
