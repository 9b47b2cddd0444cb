//! `build_snapshot`: config + upstream tool lists → ([`Snapshot`], diagnostics).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use mcplex_config::{Config, HotSettings, ServerConfig};
use mcplex_names::{RegistrationTable, ToolId};
use serde_json::{Map, Value};

use crate::CatalogCache;
use crate::render::direct_entry;
use crate::snapshot::{CatalogTool, ServerView, Snapshot};

/// Where an upstream stands, as far as the catalog cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerStatus {
    /// `enabled: false` in the config.
    Disabled,
    /// Starting, initializing or listing for the first time.
    Connecting,
    /// Connected; its tool list is current.
    Ready,
    /// Lost or failed; the supervisor is retrying. The reason is for people, not for matching.
    Unhealthy { reason: String },
}

impl fmt::Display for ServerStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerStatus::Disabled => f.write_str("disabled"),
            ServerStatus::Connecting => f.write_str("connecting"),
            ServerStatus::Ready => f.write_str("ready"),
            ServerStatus::Unhealthy { reason } => write!(f, "unhealthy: {reason}"),
        }
    }
}

/// The latest word from one upstream: its status and the raw tool objects of its last listing.
/// An unhealthy server keeps its last tools so that a short outage does not churn listings.
#[derive(Debug, Clone)]
pub struct UpstreamTools {
    pub status: ServerStatus,
    pub tools: Arc<Vec<Value>>,
}

/// Something in an upstream's answer that the catalog had to skip.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Diagnostic {
    pub server: String,
    pub message: String,
}

/// What a build needs besides the tool lists.
pub struct BuildInput<'a> {
    pub config: &'a Config,
    /// The hot settings (the config's, or hot-reloaded ones).
    pub hot: HotSettings,
    pub generation: u64,
}

/// Builds a snapshot from the config and whatever the upstreams have said so far. Servers in the
/// config with no entry in `upstreams` count as connecting; entries for servers no longer in the
/// config are ignored. Signatures and validators come from `cache`, compiled only for schemas it
/// has not seen.
pub fn build_snapshot(
    input: BuildInput<'_>,
    upstreams: &BTreeMap<String, UpstreamTools>,
    cache: &mut CatalogCache,
) -> (Snapshot, Vec<Diagnostic>) {
    let BuildInput {
        config,
        hot,
        generation,
    } = input;
    let mode = hot.direct_tool_response_mode;
    let mut diagnostics = Vec::new();
    let mut servers = BTreeMap::new();
    let mut accepted: Vec<Accepted> = Vec::new();

    for server in &config.servers {
        let (status, tools) = match (server.enabled, upstreams.get(&server.name)) {
            (false, _) => (ServerStatus::Disabled, None),
            (true, None) => (ServerStatus::Connecting, None),
            (true, Some(up)) => (up.status.clone(), Some(&up.tools)),
        };
        let before = accepted.len();
        if let Some(tools) = tools {
            accept_tools(
                server,
                config.defer_tools,
                tools,
                &mut accepted,
                &mut diagnostics,
            );
        }
        servers.insert(
            server.name.clone(),
            ServerView {
                status,
                tool_count: accepted.len() - before,
            },
        );
    }

    let table = RegistrationTable::build(accepted.iter().map(|(id, _, _)| id.clone()));
    let mut used = HashSet::new();
    let mut tools: Vec<CatalogTool> = accepted
        .into_iter()
        .filter_map(|(id, raw, deferred)| {
            let display_name = table.name_of(&id)?.to_owned();
            let compiled = cache.compiled(raw.get("inputSchema").unwrap_or(&Value::Null));
            used.insert(compiled.hash);
            Some(CatalogTool {
                id,
                display_name,
                raw,
                signature: compiled.signature,
                validator: compiled.validator,
                deferred,
            })
        })
        .collect();
    cache.retain(&used);
    tools.sort_by(|a, b| a.display_name.cmp(&b.display_name));
    let index_by_id: HashMap<ToolId, usize> = tools
        .iter()
        .enumerate()
        .map(|(index, tool)| (tool.id.clone(), index))
        .collect();
    let search_index = crate::search::index(&tools);
    // Deferred tools are not listed; they stay searchable and callable.
    let direct_listing = Arc::new(
        tools
            .iter()
            .filter(|t| !t.deferred)
            .map(|tool| direct_entry(tool, mode))
            .collect(),
    );
    let snapshot = Snapshot {
        generation,
        tools,
        index_by_id,
        table,
        servers,
        hot,
        direct_listing,
        search_index,
    };
    (snapshot, diagnostics)
}

/// A tool the catalog keeps: its id, raw object and whether it is deferred.
type Accepted = (ToolId, Arc<Map<String, Value>>, bool);

fn accept_tools(
    config: &ServerConfig,
    defer_by_default: bool,
    tools: &[Value],
    accepted: &mut Vec<Accepted>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let server = config.name.as_str();
    let mut seen = HashSet::new();
    let mut skip = |message: String| {
        diagnostics.push(Diagnostic {
            server: server.to_owned(),
            message,
        })
    };
    for (index, tool) in tools.iter().enumerate() {
        let Value::Object(object) = tool else {
            skip(format!("tools[{index}] is not an object; skipped"));
            continue;
        };
        let Some(name) = object
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
        else {
            skip(format!("tools[{index}] has no name; skipped"));
            continue;
        };
        if !object.get("inputSchema").is_some_and(Value::is_object) {
            skip(format!(
                "tool {name:?}: inputSchema is missing or not an object; skipped"
            ));
            continue;
        }
        if !seen.insert(name.to_owned()) {
            skip(format!(
                "tool {name:?} is listed twice; the first definition is kept"
            ));
            continue;
        }
        // Filtered out: invisible everywhere, as if the upstream never offered it.
        if !config.tools.admits(name) {
            continue;
        }
        let deferred = config.defers(name, defer_by_default);
        accepted.push((
            ToolId::new(server, name),
            Arc::new(object.clone()),
            deferred,
        ));
    }
}
