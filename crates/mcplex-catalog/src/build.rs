//! `build_snapshot`: config + upstream tool lists → ([`Snapshot`], diagnostics).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use mcplex_config::{Config, HotSettings};
use mcplex_names::{RegistrationTable, ToolId, gateway_tools};
use mcplex_protocol::{Offer, ServerHealth};
use mcplex_trust::{Approvals, Change};
use serde_json::Value;

use crate::CatalogCache;
use crate::gather::{Accepted, Gathered};
use crate::offers;
use crate::render::direct_entry;
use crate::snapshot::{CatalogTool, Snapshot, WithheldTool};

/// The latest word from one upstream: its status and the raw tool objects of its last listing.
/// An unhealthy server keeps its last tools so that a short outage does not churn listings.
#[derive(Debug, Clone)]
pub struct UpstreamTools {
    pub status: ServerHealth,
    pub tools: Arc<Vec<Value>>,
    /// Its prompts, resources and templates, kept through an outage like the tools.
    pub offer: Arc<Offer>,
}

/// Approvals key prompts as tools named `prompt:<name>` (a colon never appears in a well-formed
/// tool name), so `mcplex tools approve server:prompt:<name>` approves one.
pub const PROMPT_APPROVAL_PREFIX: &str = "prompt:";

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
    /// The approval state, updated by the build with what the listings' approvals cover (see
    /// [`Approvals::observe`]). `None` serves every tool (benchmarks and one-shot commands).
    pub approvals: Option<&'a mut Approvals>,
}

/// A build's products.
pub struct Built {
    pub snapshot: Snapshot,
    /// What the catalog skipped, for the operator.
    pub diagnostics: Vec<Diagnostic>,
    /// Approval records the build wrote (pins of newly covered tools); persist them.
    pub changes: Vec<Change>,
}

/// Builds a snapshot from the config and whatever the upstreams have said so far. Servers in the
/// config with no entry in `upstreams` count as connecting; entries for servers no longer in the
/// config are ignored. Signatures and validators come from `cache`, compiled only for schemas it
/// has not seen.
pub fn build_snapshot(
    input: BuildInput<'_>,
    upstreams: &BTreeMap<String, UpstreamTools>,
    cache: &mut CatalogCache,
) -> Built {
    let BuildInput {
        config,
        hot,
        generation,
        mut approvals,
    } = input;
    let mode = hot.direct_tool_response_mode;
    let mut gathered = Gathered::default();
    for server in &config.servers {
        gathered.server(
            server,
            config.defer_tools,
            upstreams.get(&server.name),
            approvals.as_deref_mut(),
        );
    }
    let Gathered {
        mut diagnostics,
        changes,
        servers,
        accepted,
        mut withheld,
        server_offers,
    } = gathered;
    let offers = offers::build(server_offers, &mut diagnostics);
    let (table, mut tools, withheld_names) =
        name_tools(config, accepted, &withheld, cache, &mut diagnostics);
    tools.sort_by(|a, b| a.display_name.cmp(&b.display_name));
    let index_by_id: HashMap<ToolId, usize> = tools
        .iter()
        .enumerate()
        .map(|(index, tool)| (tool.id.clone(), index))
        .collect();
    let search_index = crate::search::index(&tools);
    // Deferred tools are not listed; they stay searchable and callable.
    let direct_owners: Vec<usize> = (0..tools.len()).filter(|&i| !tools[i].deferred).collect();
    let direct_listing = Arc::new(
        direct_owners
            .iter()
            .map(|&i| direct_entry(&tools[i], mode))
            .collect(),
    );
    withheld.sort_by(|a, b| a.id.cmp(&b.id));
    let snapshot = Snapshot {
        generation,
        tools,
        index_by_id,
        table,
        servers,
        hot,
        direct_listing,
        direct_owners,
        search_index,
        vectors: std::sync::OnceLock::new(),
        withheld,
        withheld_names,
        offers,
    };
    Built {
        snapshot,
        diagnostics,
        changes,
    }
}

/// Names the accepted tools (display names from one registration table, clashes reported) and
/// gives each its compiled signature and validator from `cache` (which then forgets schemas no
/// tool uses). Also the names withheld tools would have.
fn name_tools(
    config: &Config,
    accepted: Vec<Accepted>,
    withheld: &[WithheldTool],
    cache: &mut CatalogCache,
    diagnostics: &mut Vec<Diagnostic>,
) -> (RegistrationTable, Vec<CatalogTool>, HashMap<String, ToolId>) {
    let transparent: HashSet<&str> = config
        .servers
        .iter()
        .filter(|s| !s.namespace)
        .map(|s| s.name.as_str())
        .collect();
    let (table, conflicts) = RegistrationTable::build_with(
        accepted.iter().map(|tool| tool.id.clone()),
        |id| transparent.contains(&*id.server),
        gateway_tools::ALL,
    );
    diagnostics.extend(conflicts.iter().map(|c| offers::clash("tool", c)));
    let withheld_names = withheld_names(&accepted, withheld, &table, &transparent);
    let mut used = HashSet::new();
    let tools: Vec<CatalogTool> = accepted
        .into_iter()
        .filter_map(|tool| {
            let display_name = table.name_of(&tool.id)?.to_owned();
            let compiled = cache.compiled(tool.raw.get("inputSchema").unwrap_or(&Value::Null));
            used.insert(compiled.hash);
            Some(CatalogTool {
                id: tool.id,
                display_name,
                raw: tool.raw,
                signature: compiled.signature,
                validator: compiled.validator,
                deferred: tool.deferred,
                permission: tool.permission,
                pin: tool.pin,
            })
        })
        .collect();
    cache.retain(&used);
    (table, tools, withheld_names)
}

/// The display name each withheld tool has when it is served (the name an agent that saw it
/// before knows), so that a call by that name is answered with the reason rather than as an
/// unknown tool. Names come from a table over served and withheld tools together, as they would
/// if everything were approved; a name that a served tool holds stays that tool's.
fn withheld_names(
    accepted: &[Accepted],
    withheld: &[WithheldTool],
    served: &RegistrationTable,
    transparent: &HashSet<&str>,
) -> HashMap<String, ToolId> {
    let tools = || {
        withheld
            .iter()
            .filter(|w| !w.id.tool.starts_with(PROMPT_APPROVAL_PREFIX))
            .map(|w| w.id.clone())
    };
    if tools().next().is_none() {
        return HashMap::new();
    }
    let ids = accepted.iter().map(|tool| tool.id.clone()).chain(tools());
    let (all, _) = RegistrationTable::build_with(
        ids,
        |id| transparent.contains(&*id.server),
        gateway_tools::ALL,
    );
    tools()
        .filter_map(|id| {
            let name = all.name_of(&id)?;
            served
                .resolve(name)
                .is_none()
                .then(|| (name.to_owned(), id))
        })
        .collect()
}
