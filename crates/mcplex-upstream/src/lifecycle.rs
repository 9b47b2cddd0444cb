//! Opening the MCP lifecycle with an upstream and reading its tool list.
//!
//! Two eras: `initialize` + `notifications/initialized` (2024-11-05 .. 2025-11-25), and the
//! stateless 2026-07-28 `server/discover`, after which every request carries the protocol version
//! and our client capabilities in `_meta`.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::UpstreamError;
use crate::rpc::{CallOptions, RpcConnection};
use mcplex_config::Lifecycle;

use mcplex_protocol::{CLIENT_CAPABILITIES_META, LATEST_SESSION_VERSION, Offer, STATELESS_VERSION};

const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";
/// A listing longer than this many pages is cut (a server whose cursors never end).
const MAX_PAGES: usize = 1000;
/// A listing with more items than this, all pages together, is refused.
pub(crate) const MAX_LISTING_ITEMS: usize = 10_000;
/// A listing whose items take more JSON bytes than this, all pages together, is refused.
pub(crate) const MAX_LISTING_BYTES: usize = 64 * 1024 * 1024;

/// What the upstream said about itself.
#[derive(Debug, Clone)]
pub(crate) struct Handshake {
    pub protocol_version: String,
    pub server_info: Value,
    /// The server's `capabilities`.
    pub capabilities: Value,
}

/// What the gateway declares it can do as the upstream's client. Sampling and elicitation are
/// forwarded to the client of the call that asks for them. `roots` is not declared: roots belong
/// to one client, and an upstream connection is shared by all of them.
fn client_capabilities() -> Value {
    json!({"sampling": {}, "elicitation": {"form": {}, "url": {}}})
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
        "protocolVersion": LATEST_SESSION_VERSION,
        "capabilities": client_capabilities(),
        "clientInfo": client_info(),
    });
    let result = connection
        .request("initialize", Some(params), CallOptions::default())
        .await?;
    let protocol_version = result
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or(LATEST_SESSION_VERSION)
        .to_owned();
    connection.set_protocol_version(&protocol_version);
    connection.notify("notifications/initialized", None).await?;
    Ok(Handshake {
        protocol_version,
        server_info: result.get("serverInfo").cloned().unwrap_or(Value::Null),
        capabilities: result.get("capabilities").cloned().unwrap_or(Value::Null),
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
        capabilities: result.get("capabilities").cloned().unwrap_or(Value::Null),
    })
}

/// Reads every page of `tools/list`, each page within `timeout`.
pub(crate) async fn list_tools(
    connection: &RpcConnection,
    timeout: Duration,
) -> Result<Vec<Value>, UpstreamError> {
    list_all(connection, "tools/list", "tools", timeout).await
}

/// Which parts of an [`Offer`] to (re-)read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct OfferParts {
    pub prompts: bool,
    pub resources: bool,
}

impl OfferParts {
    /// What of `config`'s server the gateway lists: everything, but the resources of a
    /// `per_user` server, which are the data of the account the gateway's own login is (its
    /// callers must not see them; each reads through its own connection).
    pub(crate) fn of(config: &mcplex_config::ServerConfig) -> OfferParts {
        OfferParts {
            prompts: true,
            resources: config.oauth.as_ref().is_none_or(|o| o.per_user.is_none()),
        }
    }

    /// The parts of `self` that `allowed` allows.
    pub(crate) fn within(self, allowed: OfferParts) -> OfferParts {
        OfferParts {
            prompts: self.prompts && allowed.prompts,
            resources: self.resources && allowed.resources,
        }
    }
}

/// Re-reads `parts` of `offer`, each page within `timeout`. A server that declares no
/// capability for a part offers nothing there; one whose listing fails is logged and keeps what
/// it offered before, so a broken `prompts/list` never costs a server its tools.
pub(crate) async fn read_offer(
    connection: &RpcConnection,
    offer: &mut Offer,
    parts: OfferParts,
    timeout: Duration,
) {
    let declares = |capability: &str| {
        offer
            .capabilities
            .get(capability)
            .is_some_and(Value::is_object)
    };
    let (prompts, resources) = (declares("prompts"), declares("resources"));
    if parts.prompts && prompts {
        match list_all(connection, "prompts/list", "prompts", timeout).await {
            Ok(listed) => offer.prompts = listed,
            Err(e) => tracing::warn!(server = connection.server(), "listing prompts failed: {e}"),
        }
    }
    if parts.resources && resources {
        match list_all(connection, "resources/list", "resources", timeout).await {
            Ok(listed) => offer.resources = listed,
            Err(e) => tracing::warn!(
                server = connection.server(),
                "listing resources failed: {e}"
            ),
        }
        match list_all(
            connection,
            "resources/templates/list",
            "resourceTemplates",
            timeout,
        )
        .await
        {
            Ok(listed) => offer.resource_templates = listed,
            // Templates are optional even for servers with resources.
            Err(e) => tracing::debug!(
                server = connection.server(),
                "listing resource templates failed: {e}"
            ),
        }
    }
}

/// Reads every page of a paginated listing `method` whose items are in `key`, each page within
/// `timeout` (then cancelled upstream). A cursor seen before ends the listing with a warning
/// rather than looping forever; more than [`MAX_LISTING_ITEMS`] items or
/// [`MAX_LISTING_BYTES`] bytes of them, all pages together, refuse it.
async fn list_all(
    connection: &RpcConnection,
    method: &str,
    key: &str,
    timeout: Duration,
) -> Result<Vec<Value>, UpstreamError> {
    let mut items = Vec::new();
    let mut bytes = 0usize;
    let mut cursor: Option<String> = None;
    let mut seen = HashSet::new();
    for _ in 0..MAX_PAGES {
        let params = cursor.as_ref().map(|c| json!({"cursor": c}));
        let options = CallOptions {
            timeout: Some(timeout),
            ..CallOptions::default()
        };
        let mut result = connection.request(method, params, options).await?;
        match result.get_mut(key).map(Value::take) {
            Some(Value::Array(page)) => {
                bytes = bytes.saturating_add(mcplex_protocol::json_len(
                    &page,
                    MAX_LISTING_BYTES.saturating_sub(bytes),
                ));
                items.extend(page);
                if items.len() > MAX_LISTING_ITEMS || bytes > MAX_LISTING_BYTES {
                    return Err(too_large(connection, method, items.len(), bytes));
                }
            }
            _ => {
                return Err(UpstreamError::Transport {
                    server: connection.server().to_owned(),
                    reason: format!("{method} answer has no {key} array"),
                });
            }
        }
        match result.get("nextCursor").and_then(Value::as_str) {
            Some(next) if !next.is_empty() => {
                if !seen.insert(next.to_owned()) {
                    tracing::warn!(
                        server = connection.server(),
                        "{method} cursor {next:?} repeats; listing stopped at {} items",
                        items.len()
                    );
                    return Ok(items);
                }
                cursor = Some(next.to_owned());
            }
            _ => return Ok(items),
        }
    }
    tracing::warn!(
        server = connection.server(),
        "{method} has more than {MAX_PAGES} pages; listing stopped at {} items",
        items.len()
    );
    Ok(items)
}

/// Why a listing past the limits is refused (the server's status shows it).
fn too_large(
    connection: &RpcConnection,
    method: &str,
    items: usize,
    bytes: usize,
) -> UpstreamError {
    UpstreamError::ListingTooLarge {
        server: connection.server().to_owned(),
        method: method.to_owned(),
        items,
        bytes,
    }
}

#[cfg(test)]
#[path = "lifecycle_tests.rs"]
mod tests;
