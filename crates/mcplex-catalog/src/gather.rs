//! One server's contribution to a build: its tools and prompts checked and filtered, judged by
//! the approvals (served, or withheld with the reason), its status, and what it offers besides
//! tools.

use mcplex_protocol::ServerHealth;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use mcplex_config::ServerConfig;
use mcplex_names::ToolId;
use mcplex_trust::{Approvals, Change, Permission, Verdict, pin_hash, prompt_pin_hash};
use serde_json::{Map, Value};

use crate::build::{Diagnostic, PROMPT_APPROVAL_PREFIX, UpstreamTools};
use crate::describe::UnavailableReason;
use mcplex_protocol::Offer;

use crate::offers::ServerOffer;
use crate::snapshot::{ServerView, WithheldTool};

/// What the servers of one build contributed, in config order.
#[derive(Default)]
pub(crate) struct Gathered<'a> {
    pub(crate) diagnostics: Vec<Diagnostic>,
    /// Approval records written while observing the listings.
    pub(crate) changes: Vec<Change>,
    pub(crate) servers: BTreeMap<String, ServerView>,
    /// Tools to serve.
    pub(crate) accepted: Vec<Accepted>,
    /// Tools and prompts held back, with the reason (for the operator's approval queue).
    pub(crate) withheld: Vec<WithheldTool>,
    pub(crate) server_offers: Vec<ServerOffer<'a>>,
}

impl<'a> Gathered<'a> {
    /// Adds `server`, with what its upstream last said (`None`: it has said nothing yet).
    pub(crate) fn server(
        &mut self,
        server: &'a ServerConfig,
        defer_tools: bool,
        upstream: Option<&'a UpstreamTools>,
        mut approvals: Option<&mut Approvals>,
    ) {
        let (status, upstream) = match (server.enabled, upstream) {
            (false, _) => (ServerHealth::Disabled, None),
            (true, None) => (ServerHealth::Connecting, None),
            (true, Some(up)) => (up.status.clone(), Some(up)),
        };
        let quarantined = approvals
            .as_ref()
            .is_some_and(|a| !a.server_approved(&server.name));
        let mut tools = Vec::new();
        let mut prompts = Vec::new();
        if let Some(upstream) = upstream {
            accept_tools(
                server,
                defer_tools,
                &upstream.tools,
                &mut tools,
                &mut self.diagnostics,
            );
            prompts = accept_prompts(server, &upstream.offer, &mut self.diagnostics);
        }
        // Only a fresh listing is observed: a server still connecting has listed nothing yet,
        // and its (empty) list must not use up the approval that covers its first listing.
        if let Some(approvals) = approvals.as_deref_mut()
            && status == ServerHealth::Ready
        {
            let listed: Vec<(String, String)> = tools
                .iter()
                .map(|tool| (tool.id.tool.to_string(), tool.pin.clone()))
                .chain(prompts.iter().map(|p| (p.key.clone(), p.pin.clone())))
                .collect();
            self.changes
                .extend(approvals.observe(&server.name, &listed, server.trust_auto));
        }
        let mut judge = Judge {
            server: &server.name,
            quarantined,
            approvals: approvals.as_deref(),
            withheld: Vec::new(),
        };
        // Withheld tools are never listed, searched or described: a changed definition must
        // not reach a model unseen.
        let tools = judge.sort(tools, |tool| (&tool.id.tool, &tool.pin), Accepted::withheld);
        let served_tools = tools.len();
        self.accepted.extend(tools);
        if let Some(upstream) = upstream {
            let prompts = judge.sort(
                prompts,
                |prompt| (&prompt.key, &prompt.pin),
                |prompt, verdict, reason| prompt.withheld(&server.name, verdict, reason),
            );
            if !quarantined {
                self.server_offers.push(ServerOffer {
                    config: server,
                    capabilities: &upstream.offer.capabilities,
                    prompts: prompts.into_iter().map(|p| p.raw).collect(),
                    resources: &upstream.offer.resources,
                    templates: &upstream.offer.resource_templates,
                });
            }
        }
        self.withheld.append(&mut judge.withheld);
        self.servers.insert(
            server.name.clone(),
            ServerView {
                status,
                tool_count: served_tools,
                quarantined,
            },
        );
    }
}

/// The approvals' verdict on one server's tools and prompts.
struct Judge<'j> {
    server: &'j str,
    quarantined: bool,
    /// `None` serves everything (benchmarks and one-shot commands).
    approvals: Option<&'j Approvals>,
    withheld: Vec<WithheldTool>,
}

impl Judge<'_> {
    /// The items to serve; the others are withheld (made into records by `withhold`).
    fn sort<T>(
        &mut self,
        items: Vec<T>,
        key_and_pin: impl Fn(&T) -> (&str, &str),
        withhold: impl Fn(T, Verdict, UnavailableReason) -> WithheldTool,
    ) -> Vec<T> {
        let mut served = Vec::with_capacity(items.len());
        for item in items {
            let verdict = match self.approvals {
                None => Verdict::Approved,
                Some(approvals) => {
                    let (key, pin) = key_and_pin(&item);
                    approvals.verdict(self.server, key, pin)
                }
            };
            match withheld_reason(self.quarantined, verdict) {
                None => served.push(item),
                Some(reason) => self.withheld.push(withhold(item, verdict, reason)),
            }
        }
        served
    }
}

/// A tool an upstream offers that passed the filters, before approvals are consulted.
pub(crate) struct Accepted {
    pub(crate) id: ToolId,
    pub(crate) raw: Arc<Map<String, Value>>,
    pub(crate) deferred: bool,
    pub(crate) permission: Permission,
    pub(crate) pin: String,
}

impl Accepted {
    fn withheld(self, verdict: Verdict, reason: UnavailableReason) -> WithheldTool {
        WithheldTool {
            id: self.id,
            raw: self.raw,
            pin: self.pin,
            permission: self.permission,
            verdict,
            reason,
        }
    }
}

/// The longest tool name the MCP specification allows, in characters.
const MAX_TOOL_NAME_CHARS: usize = 128;

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
        // The specification's bound: a longer name would be written whole into every audit row
        // and metrics series of each call, as long as the upstream likes.
        let length = name.chars().count();
        if length > MAX_TOOL_NAME_CHARS {
            let start: String = name.chars().take(40).collect();
            skip(format!(
                "tool {start:?}…: its name is {length} characters long, more than the {MAX_TOOL_NAME_CHARS} the MCP specification allows; skipped"
            ));
            continue;
        }
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

impl AcceptedPrompt<'_> {
    fn withheld(self, server: &str, verdict: Verdict, reason: UnavailableReason) -> WithheldTool {
        WithheldTool {
            id: ToolId::new(server, self.key.as_str()),
            raw: Arc::new(self.raw.clone()),
            pin: self.pin,
            permission: Permission::Read,
            verdict,
            reason,
        }
    }
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
