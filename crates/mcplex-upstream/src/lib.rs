//! Connections to upstream MCP servers and the supervisor that keeps them alive.
//!
//! Owns: the JSON-RPC client ([`RpcConnection`]) over three wires (stdio child processes in their
//! own process group, streamable HTTP, legacy HTTP+SSE, plus in-process byte streams for built-in
//! servers), both lifecycles (2025 `initialize`, 2026-07-28 `server/discover`), paginated
//! `tools/list`, reacting to `notifications/tools/list_changed`, reconnecting with backoff, and
//! terminating whole process groups on shutdown. Upstream messages stay raw `serde_json::Value`,
//! and a stdio answer's result stays the text the server wrote ([`RawResult`]): nothing here
//! re-models a tool or a result, so nothing an upstream sends is dropped.
//! Must not: know about the catalog, names or surfaces; it reports [`UpstreamEvent`]s and answers
//! calls by canonical server and tool name.

mod backoff;
mod callers;
mod connect;
mod error;
mod history;
mod isolation;
mod lifecycle;
mod login;
mod raw_result;
mod redactor;
mod relay;
mod requests;
mod rpc;
mod serve;
mod stderr_tail;
mod succession;
mod supervisor;
mod wire;

pub use error::{ConnectError, UpstreamError};
pub use history::{FAILURE_WINDOW, Failures, REMEMBERED_EVENTS};
pub use isolation::{Isolation, ServerIsolation};
pub use login::oauth_challenge;
/// OAuth servers' logins, which [`Upstreams::start`] takes.
pub use mcplex_oauth::Logins;
/// A token that never prints: the OAuth access token a caller presented.
pub use mcplex_oauth::Secret;
pub use mcplex_sandbox::{Level as IsolationLevel, Protected, Report as IsolationReport};
pub use raw_result::{MemberKind, Members, RawResult};
pub use relay::{ClientKey, ClientRelay, NoClient, RelayError, RelayFuture};
pub use requests::OnBehalfOf;
pub use rpc::{CallOptions, RpcConnection};
pub use stderr_tail::{TAIL_LINES, stderr_tail};
pub use supervisor::{BuiltinConnector, UpstreamEvent, UpstreamNotice, UpstreamReport, Upstreams};
pub use wire::sys::raise_open_files_limit;
