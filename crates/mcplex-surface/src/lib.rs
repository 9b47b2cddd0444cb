//! The surfaces agents connect to, over streamable HTTP and stdio, in both protocol eras.
//!
//! Owns: the MCP server side, 2024-11-05 .. 2026-07-28 (the `initialize` handshake with sessions
//! and a GET stream, and the stateless `server/discover` era with per-request `_meta` and
//! `subscriptions/listen`): the HTTP request path is ours (`route.rs`), on rmcp's model types,
//! its `ServerHandler` trait and its serve loop for each client's peer; rendering listings from the
//! snapshot, mapping [`mcplex_dispatch::DispatchError`] to wire errors in one place, and
//! forwarding progress, cancellation and `list_changed`. The catalog keeps raw upstream JSON;
//! this crate converts it to rmcp's model once per snapshot (listings) or once per call
//! (results), which keeps every field the MCP schema defines (see `typed.rs` for the limit); a
//! call's result goes out in the upstream's own bytes where that model agrees with them.
//! Must not: resolve names, validate, or talk to upstreams except through `Gateway::call`.

mod access;
mod answer;
mod authority;
mod caller;
mod calls;
mod code;
mod code_sandbox;
mod common_stream;
mod connection;
mod cookies;
mod decode;
mod describe;
mod detached;
mod direct;
mod dispatch;
mod door;
mod errors;
mod event_id;
mod http;
mod json_values;
mod kept_events;
mod listen;
mod listener;
mod oauth;
mod offers;
mod relay;
mod results;
mod retrieve;
mod route;
mod search_tools;
mod session;
mod session_owners;
mod sessions;
mod sse;
mod stateless;
mod stateless_transport;
mod stdio;
mod subscriptions;
mod traced;
mod typed;
mod wire;

pub use access::{
    Admission, Authenticator, Credential, Family, Guard, RouteGuard, credential, declared_length,
    malformed_authorization, refuse, unauthorized,
};
pub use caller::{Caller, Reach};
pub use code::CodeSurface;
pub use code_sandbox::{CodeSandbox, set_code_worker};
pub use cookies::{cookie, same_secret};
pub use direct::{DirectSurface, SIGNATURE_LEGEND};
pub use door::{Door, Lanes};
pub use oauth::{AccessTokens, METADATA_PATH, ResourceServer, TokenRefusal, Verification};
pub use results::invalid_arguments as invalid_arguments_result;
pub use results::not_connected as not_connected_result;
pub use retrieve::RetrieveSurface;

/// The built-in tools the direct surface lists before the upstream tools: `describe_tool`, and
/// `tool_search` + `call_tool` when the gateway lists them.
pub fn direct_builtins(search_tools_listed: bool) -> Vec<serde_json::Value> {
    let mut builtins = vec![describe::definition()];
    if search_tools_listed {
        builtins.push(search_tools::tool_search_definition());
        builtins.push(search_tools::call_tool_definition());
    }
    builtins
}

/// What every surface declares: tools (`list_changed` where the listing can change), prompts and
/// resources (with `list_changed` and resource subscriptions), completions and logging, all
/// aggregated over the upstreams. A surface declares them whatever its upstreams offer right now,
/// so that its answer never depends on which servers have connected.
fn full_capabilities(tools_change: bool) -> rmcp::model::ServerCapabilities {
    let declared = serde_json::json!({
        "tools": {"listChanged": tools_change},
        "prompts": {"listChanged": true},
        "resources": {"listChanged": true, "subscribe": true},
        "completions": {},
        "logging": {},
    });
    serde_json::from_value(declared).unwrap_or_default()
}

/// The `initialize` / `server/discover` answer of a surface.
fn server_info(
    capabilities: rmcp::model::ServerCapabilities,
    instructions: &str,
) -> rmcp::model::InitializeResult {
    rmcp::model::InitializeResult::new(capabilities)
        .with_server_info(rmcp::model::Implementation::new(
            "mcplex",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(instructions)
}

/// What a surface is built with (read once, at start).
#[derive(Debug, Clone, Default)]
pub struct SurfaceOptions {
    /// The operator's `instructions`.
    pub instructions: Option<String>,
    /// Whether `tool_search` and `call_tool` are listed: the running gateway's decision, made
    /// once from whether the config it started with defers any tool (`mcplex_runtime::Core`).
    pub search_tools_listed: bool,
    /// `tool_search.max_matches`.
    pub max_matches: usize,
    /// The code_execution surface's limits.
    pub code: mcplex_config::CodeLimits,
    /// The code_execution engine, shared by every code surface built from these options.
    pub code_sandbox: CodeSandbox,
}

impl SurfaceOptions {
    /// The options `config` sets; `search_tools_listed` is the running gateway's decision
    /// (made once, from the config it started with: `mcplex_runtime::Core`), not `config`'s.
    pub fn from_config(
        config: &mcplex_config::Config,
        search_tools_listed: bool,
    ) -> SurfaceOptions {
        SurfaceOptions {
            instructions: config.instructions.clone(),
            search_tools_listed,
            max_matches: config.max_matches,
            code: config.code,
            code_sandbox: CodeSandbox::default(),
        }
    }
}
pub use http::{McpRoutes, Routes, router};
pub use listener::{ListenerLimits, Peer, serve_http};
pub use stdio::serve_stdio;
