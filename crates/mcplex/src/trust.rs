//! The running gateway's approvals: loaded from the state store, updated by the catalog builds
//! (pins that a server approval or `trust: auto` covers) and by operator requests from the
//! management API, and written back to the store transactionally. Owned by the live catalog task;
//! nothing else mutates approvals.

use std::collections::HashSet;
use std::sync::Arc;

use mcplex_catalog::Snapshot;
use mcplex_config::Config;
use mcplex_names::ToolId;
use mcplex_state::Store;
use mcplex_trust::{Approvals, Change, ServerState, Verdict};
use tokio::sync::oneshot;

/// What an operator asks of the approvals.
#[derive(Debug, Clone)]
pub enum TrustAction {
    ApproveServer(String),
    QuarantineServer(String),
    /// Pins the tool's current definition (`server:tool`).
    ApproveTool(String),
    BlockTool(String),
}

/// An action and where its outcome goes: `Ok(what happened)` or `Err(why not)`.
pub struct TrustRequest {
    pub action: TrustAction,
    pub reply: oneshot::Sender<Result<String, String>>,
}

impl TrustRequest {
    pub fn refuse(self, why: &str) {
        let _ = self.reply.send(Err(why.to_owned()));
    }
}

pub struct Trust {
    store: Arc<Store>,
    approvals: Approvals,
    /// When this start created the installation: the servers of the config it started with,
    /// which are the user's own setup and start approved.
    founding_servers: Option<HashSet<String>>,
}

impl Trust {
    /// Loads the approvals of `store`. `created`: the store was created by this start, from
    /// `config`.
    pub fn load(store: Arc<Store>, created: bool, config: &Config) -> anyhow::Result<Trust> {
        let approvals = store.load_approvals()?;
        let founding_servers =
            created.then(|| config.servers.iter().map(|s| s.name.clone()).collect());
        Ok(Trust {
            store,
            approvals,
            founding_servers,
        })
    }

    pub fn approvals_mut(&mut self) -> &mut Approvals {
        &mut self.approvals
    }

    /// Records every configured server not seen before: approved if it is part of the founding
    /// config (and not marked `quarantined`), quarantined otherwise.
    pub fn register(&mut self, config: &Config) {
        let mut changes = Vec::new();
        for server in &config.servers {
            let founding = self
                .founding_servers
                .as_ref()
                .is_some_and(|names| names.contains(&server.name));
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

    /// Carries out an operator request against the current snapshot and replies.
    pub fn handle(&mut self, request: TrustRequest, config: &Config, snapshot: &Snapshot) {
        let mut next = self.approvals.clone();
        let outcome = apply(&mut next, &request.action, config, snapshot);
        let outcome = outcome.and_then(|(changes, message)| {
            self.store
                .apply(&changes)
                .map_err(|e| format!("not saved: {e}"))?;
            self.approvals = next;
            Ok(message)
        });
        let _ = request.reply.send(outcome);
    }
}

fn apply(
    approvals: &mut Approvals,
    action: &TrustAction,
    config: &Config,
    snapshot: &Snapshot,
) -> Result<(Vec<Change>, String), String> {
    let configured = |name: &str| {
        if config.servers.iter().any(|s| s.name == name) {
            Ok(())
        } else {
            Err(format!("no server named {name:?} in the config"))
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
        TrustAction::ApproveTool(id) => {
            let parsed = ToolId::parse(id)
                .ok_or_else(|| format!("{id:?} is not a tool id (server:tool)"))?;
            let (pin, served) = match (snapshot.tool(&parsed), snapshot.withheld_tool(&parsed)) {
                (Some(tool), _) => (tool.pin.clone(), true),
                (None, Some(withheld)) => {
                    (withheld.pin.clone(), withheld.verdict == Verdict::Approved)
                }
                (None, None) => {
                    return Err(format!(
                        "no tool {id} is offered right now (is its server connected?)"
                    ));
                }
            };
            let changes = approvals.approve_tool(&parsed.server, &parsed.tool, &pin);
            let mut message = if served && changes.is_empty() {
                format!("tool {id} was already approved")
            } else {
                format!("tool {id} approved (pinned {})", &pin[..pin.len().min(12)])
            };
            if !approvals.server_approved(&parsed.server) {
                message.push_str(&format!(
                    "; its server {} is quarantined, approve it too",
                    parsed.server
                ));
            }
            Ok((changes, message))
        }
        TrustAction::BlockTool(id) => {
            let parsed = ToolId::parse(id)
                .ok_or_else(|| format!("{id:?} is not a tool id (server:tool)"))?;
            configured(&parsed.server)?;
            let changes = approvals.block_tool(&parsed.server, &parsed.tool);
            Ok((changes, format!("tool {id} blocked")))
        }
    }
}
