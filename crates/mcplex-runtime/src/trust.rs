//! The running gateway's approvals: loaded from the state store, updated by the catalog builds
//! (pins that a server approval or `trust: auto` covers) and by operator actions, and written
//! back to the store transactionally. In a serving gateway a [`Trust`] is owned by the live
//! catalog task and operator actions reach it as [`TrustRequest`]s; a one-shot command (the
//! CLI without a running gateway) owns one itself and calls [`Trust::act`]. Nothing else
//! mutates approvals.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use mcplex_catalog::Snapshot;
use mcplex_config::Config;
use mcplex_names::ToolId;
use mcplex_state::{ApproveRefusal, Observation, StateError, Store};
use mcplex_trust::{Approvals, Change, ServerState, Verdict};
use tokio::sync::oneshot;

/// What an operator asks of the approvals.
#[derive(Debug, Clone)]
pub enum TrustAction {
    ApproveServer(String),
    QuarantineServer(String),
    /// Pins the tool's current definition (`id` is `server:tool`), and only if it is the one
    /// that hashes to `hash` when one is given (what the operator was shown).
    ApproveTool {
        id: String,
        hash: Option<String>,
    },
    BlockTool(String),
}

/// Why an operator request was not carried out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Not possible as asked: an unknown server, a tool that changed since it was shown, ….
    Invalid(String),
    /// The store did not take the write (unreachable, say): nothing changed anywhere.
    NotSaved(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Invalid(why) => f.write_str(why),
            Refusal::NotSaved(why) => write!(f, "not saved, nothing changed: {why}"),
        }
    }
}

fn not_saved(error: StateError) -> Refusal {
    Refusal::NotSaved(error.to_string())
}

/// An action for the live catalog task and where its outcome goes: `Ok(what happened)` or
/// `Err(why not)`. The reply is sent once the approvals changed in memory and in the store; the
/// snapshot that reflects them is published right after.
pub struct TrustRequest {
    pub action: TrustAction,
    pub reply: oneshot::Sender<Result<String, Refusal>>,
}

impl TrustRequest {
    pub(crate) fn refuse(self, why: &str) {
        let _ = self.reply.send(Err(Refusal::Invalid(why.to_owned())));
    }
}

pub struct Trust {
    store: Arc<Store>,
    approvals: Approvals,
    /// The servers the installation was founded with (the user's own setup), which start
    /// approved; decided once, in the store, by the first process on a new store.
    founding_servers: BTreeSet<String>,
    /// The hash of each tool's definition as last recorded in the store, so that only what
    /// changed is written.
    recorded: HashMap<ToolId, String>,
}

impl Trust {
    /// Loads the approvals of `store`; on a new store, `config`'s servers may become its
    /// founding ones (if no other process decided first).
    pub fn load(store: Arc<Store>, config: &Config) -> Result<Trust, StateError> {
        let approvals = store.load_approvals()?;
        let candidates: Vec<String> = config.servers.iter().map(|s| s.name.clone()).collect();
        let founding_servers = store.founding_servers(&candidates)?;
        Ok(Trust {
            store,
            approvals,
            founding_servers,
            recorded: HashMap::new(),
        })
    }

    pub fn approvals_mut(&mut self) -> &mut Approvals {
        &mut self.approvals
    }

    /// The servers the operator approved (every other one is quarantined or unknown).
    pub fn approved_servers(&self) -> std::collections::HashSet<String> {
        self.approvals
            .servers()
            .filter(|(name, _)| self.approvals.server_approved(name))
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// Records every configured server not seen before: approved if it is part of the founding
    /// config (and not marked `quarantined`), quarantined otherwise.
    pub fn register(&mut self, config: &Config) {
        let mut changes = Vec::new();
        for server in &config.servers {
            let founding = self.founding_servers.contains(&server.name);
            let initial = if founding && !server.quarantined {
                ServerState::Approved
            } else {
                ServerState::Quarantined
            };
            let registered = self.approvals.register(&server.name, initial);
            if !registered.is_empty() && initial == ServerState::Quarantined {
                tracing::warn!(
                    server = %server.name,
                    "new server is quarantined: its tools are not served until `mcplex servers approve {}`",
                    server.name
                );
            }
            changes.extend(registered);
        }
        self.persist(&changes);
    }

    /// Writes `changes` in one transaction. A failure is logged loudly: the gateway keeps
    /// serving from memory, and the next start re-derives what was lost (pins are re-proposed,
    /// never silently granted).
    pub fn persist(&self, changes: &[Change]) {
        if let Err(e) = self.store.apply(changes) {
            tracing::error!("approvals could not be saved: {e}");
        }
    }

    /// Replaces the approvals with the store's, which another writer changed; true when they
    /// differ from the ones in memory (the catalog must be rebuilt). A store that cannot be read
    /// leaves the last known approvals in force.
    pub fn reload(&mut self) -> bool {
        match self.store.load_approvals() {
            Ok(approvals) if approvals != self.approvals => {
                self.approvals = approvals;
                true
            }
            Ok(_) => false,
            Err(e) => {
                tracing::error!("approvals could not be reloaded from the store: {e}");
                false
            }
        }
    }

    /// Records in the store the definitions `snapshot` holds that differ from what was recorded
    /// last (served and withheld tools alike), so that operators, the CLI and other gateways
    /// review the definition this gateway sees.
    pub fn record(&mut self, snapshot: &Snapshot) {
        let served = snapshot.tools().iter().map(|t| (&t.id, &t.pin, &t.raw));
        let withheld = snapshot.withheld().iter().map(|t| (&t.id, &t.pin, &t.raw));
        let (ids, observations): (Vec<ToolId>, Vec<Observation>) = served
            .chain(withheld)
            .filter(|(id, pin, _)| self.recorded.get(*id) != Some(*pin))
            .map(|(id, pin, raw)| {
                let observation = Observation {
                    server: id.server.to_string(),
                    tool: id.tool.to_string(),
                    hash: pin.clone(),
                    definition: serde_json::to_string(&**raw).unwrap_or_default(),
                };
                (id.clone(), observation)
            })
            .unzip();
        match self.store.record_observations(&observations) {
            Ok(()) => {
                for (id, observation) in ids.into_iter().zip(observations) {
                    self.recorded.insert(id, observation.hash);
                }
            }
            Err(e) => tracing::error!("observed tool definitions could not be saved: {e}"),
        }
    }

    /// Carries out an operator action against `snapshot` (what the servers offer now) and says
    /// what happened. Memory changes only once the store took the write.
    pub fn act(
        &mut self,
        action: &TrustAction,
        config: &Config,
        snapshot: &Snapshot,
    ) -> Result<String, Refusal> {
        if let TrustAction::ApproveTool { id, hash } = action {
            return self.approve_tool(id, hash.as_deref(), snapshot);
        }
        let mut next = self.approvals.clone();
        let (changes, message) =
            apply(&mut next, action, config).map_err(|e| Refusal::Invalid(e.to_string()))?;
        self.store.apply(&changes).map_err(not_saved)?;
        self.approvals = next;
        Ok(message)
    }

    /// The approvals in force (what the next build applies).
    pub fn approvals(&self) -> &Approvals {
        &self.approvals
    }
}

impl Trust {
    /// Pins the definition of `id` this gateway sees, if it is the latest one observed by any
    /// gateway (and the one hashing to `expected`, when given). The store decides: the compare
    /// and the pin are one transaction.
    fn approve_tool(
        &mut self,
        id: &str,
        expected: Option<&str>,
        snapshot: &Snapshot,
    ) -> Result<String, Refusal> {
        let invalid = |why: String| Err(Refusal::Invalid(why));
        let Some(parsed) = ToolId::parse(id) else {
            return invalid(format!("{id:?} is not a tool id (server:tool)"));
        };
        let (pin, served) = match (snapshot.tool(&parsed), snapshot.withheld_tool(&parsed)) {
            (Some(tool), _) => (tool.pin.clone(), true),
            (None, Some(withheld)) => (withheld.pin.clone(), withheld.verdict == Verdict::Approved),
            (None, None) => {
                return invalid(format!(
                    "no tool {id} is offered right now (is its server connected?)"
                ));
            }
        };
        if let Some(expected) = expected
            && expected != pin
        {
            return invalid(format!(
                "tool {id} changed since it was shown: its definition is now {}, not {}; review it again (mcplex tools show {id})",
                short(&pin),
                short(expected)
            ));
        }
        self.record(snapshot);
        let already = served
            && self
                .approvals
                .tool(&parsed.server, &parsed.tool)
                .is_some_and(|r| r.pinned.as_deref() == Some(pin.as_str()) && !r.blocked);
        match self
            .store
            .approve_observed(&parsed.server, &parsed.tool, &pin)
            .map_err(not_saved)?
        {
            Ok(()) => {}
            Err(ApproveRefusal::Changed { current }) => {
                return invalid(format!(
                    "tool {id} changed since it was shown: another gateway now sees {}; review it again (mcplex tools show {id})",
                    short(&current)
                ));
            }
            Err(ApproveRefusal::NotObserved) => {
                return invalid(format!("no definition of {id} was observed"));
            }
        }
        self.approvals
            .approve_tool(&parsed.server, &parsed.tool, &pin);
        let mut message = if already {
            format!("tool {id} was already approved")
        } else {
            format!("tool {id} approved (pinned {})", short(&pin))
        };
        if !self.approvals.server_approved(&parsed.server) {
            message.push_str(&format!(
                "; its server {} is quarantined, approve it too",
                parsed.server
            ));
        }
        Ok(message)
    }
}

/// The first 12 characters of a hash, as shown to operators.
fn short(hash: &str) -> &str {
    &hash[..hash.len().min(12)]
}

/// Why [`apply`] changed nothing; a [`Refusal::Invalid`] to the operator.
#[derive(Debug)]
enum Inapplicable {
    UnknownServer(String),
    NotAToolId(String),
    /// A tool approval reached the in-memory path, which cannot decide it.
    ToolApproval,
}

impl std::fmt::Display for Inapplicable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Inapplicable::UnknownServer(name) => {
                write!(f, "no server named {name:?} in the config")
            }
            Inapplicable::NotAToolId(id) => write!(f, "{id:?} is not a tool id (server:tool)"),
            Inapplicable::ToolApproval => {
                f.write_str("a tool approval is decided by the store (Trust::approve_tool)")
            }
        }
    }
}

fn apply(
    approvals: &mut Approvals,
    action: &TrustAction,
    config: &Config,
) -> Result<(Vec<Change>, String), Inapplicable> {
    let configured = |name: &str| {
        if config.servers.iter().any(|s| s.name == name) {
            Ok(())
        } else {
            Err(Inapplicable::UnknownServer(name.to_owned()))
        }
    };
    match action {
        TrustAction::ApproveServer(name) => {
            configured(name)?;
            let changes = approvals.approve_server(name);
            Ok((changes, format!("server {name} approved")))
        }
        TrustAction::QuarantineServer(name) => {
            configured(name)?;
            let changes = approvals.quarantine_server(name);
            Ok((changes, format!("server {name} quarantined")))
        }
        TrustAction::ApproveTool { .. } => Err(Inapplicable::ToolApproval),
        TrustAction::BlockTool(id) => {
            let parsed =
                ToolId::parse(id).ok_or_else(|| Inapplicable::NotAToolId(id.to_owned()))?;
            configured(&parsed.server)?;
            let changes = approvals.block_tool(&parsed.server, &parsed.tool);
            Ok((changes, format!("tool {id} blocked")))
        }
    }
}
