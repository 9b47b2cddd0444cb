//! `build_snapshot`: config + upstream tool lists → ([`Snapshot`], diagnostics).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use mcplex_config::{Config, HotSettings, ServerConfig};
use mcplex_names::{RegistrationTable, ToolId};
use mcplex_trust::{Approvals, Change, Permission, Verdict, pin_hash, prompt_pin_hash};
use serde_json::{Map, Value};

use crate::CatalogCache;
use crate::describe::UnavailableReason;
use crate::offers::{self, Offer, ServerOffer};
use crate::render::direct_entry;
use crate::snapshot::{CatalogTool, ServerView, Snapshot, WithheldTool};

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
    let mut diagnostics = Vec::new();
    let mut changes = Vec::new();
    let mut servers = BTreeMap::new();
    let mut accepted: Vec<Accepted> = Vec::new();
    let mut withheld: Vec<WithheldTool> = Vec::new();
    let mut server_offers: Vec<ServerOffer<'_>> = Vec::new();

    for server in &config.servers {
        let (status, tools, offer) = match (server.enabled, upstreams.get(&server.name)) {
            (false, _) => (ServerStatus::Disabled, None, None),
            (true, None) => (ServerStatus::Connecting, None, None),
            (true, Some(up)) => (up.status.clone(), Some(&up.tools), Some(&*up.offer)),
        };
        let quarantined = approvals
            .as_ref()
            .is_some_and(|a| !a.server_approved(&server.name));
        let mut offered = Vec::new();
        if let Some(tools) = tools {
            accept_tools(
                server,
                config.defer_tools,
                tools,
                &mut offered,
                &mut diagnostics,
            );
        }
        let offered_prompts = offer
            .map(|o| accept_prompts(server, o, &mut diagnostics))
            .unwrap_or_default();
        // Only a fresh listing is observed: a server still connecting has listed nothing yet,
        // and its (empty) list must not use up the approval that covers its first listing.
        if let Some(approvals) = approvals.as_deref_mut()
            && status == ServerStatus::Ready
        {
            let listed: Vec<(String, String)> = offered
                .iter()
                .map(|tool| (tool.id.tool.to_string(), tool.pin.clone()))
                .chain(
                    offered_prompts
                        .iter()
                        .map(|p| (p.key.clone(), p.pin.clone())),
                )
                .collect();
            changes.extend(approvals.observe(&server.name, &listed, server.trust_auto));
        }
        let before = accepted.len();
        for tool in offered {
            let verdict = match approvals.as_deref() {
                None => Verdict::Approved,
                Some(approvals) => approvals.verdict(&tool.id.server, &tool.id.tool, &tool.pin),
            };
            match withheld_reason(quarantined, verdict) {
                None => accepted.push(tool),
                // Never listed, searched or described: a changed definition must not reach a
                // model unseen. Kept for the operator's approval queue.
                Some(reason) => withheld.push(WithheldTool {
                    id: tool.id,
                    raw: tool.raw,
                    pin: tool.pin,
                    permission: tool.permission,
                    verdict,
                    reason,
                }),
            }
        }
        if let Some(offer) = offer {
            let mut served_prompts = Vec::new();
            for prompt in offered_prompts {
                let verdict = match approvals.as_deref() {
                    None => Verdict::Approved,
                    Some(approvals) => approvals.verdict(&server.name, &prompt.key, &prompt.pin),
                };
                match withheld_reason(quarantined, verdict) {
                    None => served_prompts.push(prompt.raw),
                    Some(reason) => withheld.push(WithheldTool {
                        id: ToolId::new(server.name.as_str(), prompt.key.as_str()),
                        raw: Arc::new(prompt.raw.clone()),
                        pin: prompt.pin,
                        permission: Permission::Read,
                        verdict,
                        reason,
                    }),
                }
            }
            if !quarantined {
                server_offers.push(ServerOffer {
                    config: server,
                    capabilities: &offer.capabilities,
                    prompts: served_prompts,
                    resources: &offer.resources,
                    templates: &offer.resource_templates,
                });
            }
        }
        servers.insert(
            server.name.clone(),
            ServerView {
                status,
                tool_count: accepted.len() - before,
                quarantined,
            },
        );
    }

    let offers = offers::build(server_offers, &mut diagnostics);
    let transparent: HashSet<&str> = config
        .servers
        .iter()
        .filter(|s| !s.namespace)
        .map(|s| s.name.as_str())
        .collect();
    let (table, conflicts) =
        RegistrationTable::build_with(accepted.iter().map(|tool| tool.id.clone()), |id| {
            transparent.contains(&*id.server)
        });
    diagnostics.extend(conflicts.iter().map(|c| offers::clash("tool", c)));
    let withheld_names = withheld_names(&accepted, &withheld, &table, &transparent);
    let mut used = HashSet::new();
    let mut tools: Vec<CatalogTool> = accepted
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
    let (all, _) = RegistrationTable::build_with(ids, |id| transparent.contains(&*id.server));
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

/// A tool an upstream offers that passed the filters, before approvals are consulted.
struct Accepted {
    id: ToolId,
    raw: Arc<Map<String, Value>>,
    deferred: bool,
    permission: Permission,
    pin: String,
}

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
        accepted.push(Accepted {
            id: ToolId::new(server, name),
            deferred: config.defers(name, defer_by_default),
            permission: Permission::of(object),
            pin: pin_hash(object),
            raw: Arc::new(object.clone()),
        });
    }
}

/// Why a tool or prompt with `verdict` is withheld, if it is.
fn withheld_reason(quarantined: bool, verdict: Verdict) -> Option<UnavailableReason> {
    match verdict {
        _ if quarantined => Some(UnavailableReason::ServerQuarantined),
        Verdict::Approved => None,
        Verdict::Pending => Some(UnavailableReason::ToolPendingApproval),
        Verdict::Changed => Some(UnavailableReason::ToolChanged),
        Verdict::Blocked => Some(UnavailableReason::ToolBlocked),
    }
}

/// A prompt an upstream offers that passed the filter, before approvals are consulted.
struct AcceptedPrompt<'a> {
    /// Its approvals key, `prompt:<name>`.
    key: String,
    pin: String,
    raw: &'a Map<String, Value>,
}

fn accept_prompts<'a>(
    config: &ServerConfig,
    offer: &'a Offer,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<AcceptedPrompt<'a>> {
    let mut seen = HashSet::new();
    let mut accepted = Vec::new();
    for (index, prompt) in offer.prompts.iter().enumerate() {
        let Some((object, name)) = prompt.as_object().and_then(|object| {
            let name = object.get("name").and_then(Value::as_str)?;
            (!name.is_empty()).then_some((object, name))
        }) else {
            diagnostics.push(Diagnostic {
                server: config.name.clone(),
                message: format!("prompts[{index}] is not an object with a name; skipped"),
            });
            continue;
        };
        if !seen.insert(name) || !config.prompts.admits(name) {
            continue;
        }
        accepted.push(AcceptedPrompt {
            key: format!("{PROMPT_APPROVAL_PREFIX}{name}"),
            pin: prompt_pin_hash(object),
            raw: object,
        });
    }
    accepted
}
