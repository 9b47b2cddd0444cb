//! Opening the MCP lifecycle with an upstream and reading its tool list.
//!
//! Two eras: `initialize` + `notifications/initialized` (2024-11-05 .. 2025-11-25), and the
//! stateless 2026-07-28 `server/discover`, after which every request carries the protocol version
//! and our client capabilities in `_meta`.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use crate::UpstreamError;
use crate::rpc::{CallOptions, RpcConnection};
use mcplex_config::Lifecycle;

/// The newest session-era protocol revision we offer in `initialize`.
pub const LATEST_LEGACY_VERSION: &str = "2025-11-25";
/// The stateless protocol revision.
pub const STATELESS_VERSION: &str = "2026-07-28";

const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";
const CLIENT_CAPABILITIES_META: &str = "io.modelcontextprotocol/clientCapabilities";
/// A listing longer than this many pages is cut (a server whose cursors never end).
const MAX_PAGES: usize = 1000;

/// What the upstream said about itself.
#[derive(Debug, Clone)]
pub(crate) struct Handshake {
    pub protocol_version: String,
    pub server_info: Value,
}

fn client_info() -> Value {
    json!({"name": "mcplex", "version": env!("CARGO_PKG_VERSION")})
}

/// Runs the lifecycle opener chosen in the config.
pub(crate) async fn open(
    connection: &RpcConnection,
    lifecycle: Lifecycle,
) -> Result<Handshake, UpstreamError> {
    match lifecycle {
        Lifecycle::Initialize => initialize(connection).await,
        Lifecycle::Discover => discover(connection).await,
    }
}

async fn initialize(connection: &RpcConnection) -> Result<Handshake, UpstreamError> {
    let params = json!({
        "protocolVersion": LATEST_LEGACY_VERSION,
        "capabilities": {},
        "clientInfo": client_info(),
    });
    let result = connection
        .request("initialize", Some(params), CallOptions::default())
        .await?;
    let protocol_version = result
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or(LATEST_LEGACY_VERSION)
        .to_owned();
    connection.set_protocol_version(&protocol_version);
    connection.notify("notifications/initialized", None).await?;
    Ok(Handshake {
        protocol_version,
        server_info: result.get("serverInfo").cloned().unwrap_or(Value::Null),
    })
}

async fn discover(connection: &RpcConnection) -> Result<Handshake, UpstreamError> {
    let mut meta = Map::new();
    meta.insert(PROTOCOL_VERSION_META.to_owned(), json!(STATELESS_VERSION));
    meta.insert(CLIENT_CAPABILITIES_META.to_owned(), json!({}));
    connection.set_protocol_version(STATELESS_VERSION);
    connection.set_request_meta(meta);
    let result = connection
        .request("server/discover", None, CallOptions::default())
        .await?;
    let supported: Vec<&str> = result
        .get("supportedVersions")
        .and_then(Value::as_array)
        .map(|versions| versions.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !supported.contains(&STATELESS_VERSION) {
        return Err(UpstreamError::Transport {
            server: connection.server().to_owned(),
            reason: format!(
                "server/discover offers {supported:?}, not {STATELESS_VERSION}; set \"lifecycle\": \"initialize\""
            ),
        });
    }
    Ok(Handshake {
        protocol_version: STATELESS_VERSION.to_owned(),
        server_info: result.get("serverInfo").cloned().unwrap_or(Value::Null),
    })
}

/// Reads every page of `tools/list`. A cursor seen before ends the listing with a warning rather
/// than looping forever.
pub(crate) async fn list_tools(connection: &RpcConnection) -> Result<Vec<Value>, UpstreamError> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    let mut seen = HashSet::new();
    for _ in 0..MAX_PAGES {
        let params = cursor.as_ref().map(|c| json!({"cursor": c}));
        let result = connection
            .request("tools/list", params, CallOptions::default())
            .await?;
        match result.get("tools") {
            Some(Value::Array(page)) => tools.extend(page.iter().cloned()),
            _ => {
                return Err(UpstreamError::Transport {
                    server: connection.server().to_owned(),
                    reason: "tools/list answer has no tools array".to_owned(),
                });
            }
        }
        match result.get("nextCursor").and_then(Value::as_str) {
            Some(next) if !next.is_empty() => {
                if !seen.insert(next.to_owned()) {
                    tracing::warn!(
                        server = connection.server(),
                        "tools/list cursor {next:?} repeats; listing stopped at {} tools",
                        tools.len()
                    );
                    return Ok(tools);
                }
                cursor = Some(next.to_owned());
            }
            _ => return Ok(tools),
        }
    }
    tracing::warn!(
        server = connection.server(),
        "tools/list has more than {MAX_PAGES} pages; listing stopped at {} tools",
        tools.len()
    );
    Ok(tools)
}
