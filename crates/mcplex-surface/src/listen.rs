//! `notifications/{tools,prompts,resources}/list_changed` for session-era clients. (2026-07-28
//! clients get theirs through `subscriptions/listen`, see `DirectSurface::listen`.) Every
//! initialized session's
//! peer is kept, with its caller's scope and the listing it last saw, until its transport closes;
//! a session is notified only when what *it* may see changed.

use std::sync::{Arc, Mutex, PoisonError};

use mcplex_catalog::Scope;
use mcplex_dispatch::Gateway;
use rmcp::Peer;
use rmcp::model::Tool;
use rmcp::service::RoleServer;
use serde_json::Value;

use crate::typed::ToolsCache;

struct Session {
    peer: Peer<RoleServer>,
    scope: Scope,
    seen: Arc<Vec<Tool>>,
}

#[derive(Clone)]
pub(crate) struct LegacyPeers {
    sessions: Arc<Mutex<Vec<Session>>>,
    gateway: Arc<Gateway>,
    tools: ToolsCache,
    builtins: Arc<Vec<Value>>,
}

impl LegacyPeers {
    /// Starts the forwarding task; it ends when the gateway's watch is dropped.
    pub(crate) fn start(
        gateway: Arc<Gateway>,
        tools: ToolsCache,
        builtins: Arc<Vec<Value>>,
    ) -> LegacyPeers {
        let peers = LegacyPeers {
            sessions: Arc::default(),
            gateway,
            tools,
            builtins,
        };
        // The task holds nothing strongly: it ends when the surface or the gateway is gone.
        let weak_sessions = Arc::downgrade(&peers.sessions);
        let weak_gateway = Arc::downgrade(&peers.gateway);
        let (tools, builtins) = (peers.tools.clone(), peers.builtins.clone());
        let mut changes = peers.gateway.listing_changes();
        let mut offer_changes = peers.gateway.offers_changes();
        tokio::spawn(async move {
            changes.mark_unchanged();
            offer_changes.mark_unchanged();
            let mut offers_seen = match weak_gateway.upgrade() {
                Some(gateway) => gateway.snapshot(),
                None => return,
            };
            loop {
                let tools_changed = tokio::select! {
                    changed = changes.changed() => match changed {
                        Ok(()) => true,
                        Err(_) => return,
                    },
                    changed = offer_changes.changed() => match changed {
                        Ok(()) => false,
                        Err(_) => return,
                    },
                };
                let (Some(sessions), Some(gateway)) =
                    (weak_sessions.upgrade(), weak_gateway.upgrade())
                else {
                    return;
                };
                let snapshot = gateway.snapshot();
                drop(gateway);
                let due: Vec<(Peer<RoleServer>, Due)> = {
                    let mut sessions = sessions.lock().unwrap_or_else(PoisonError::into_inner);
                    let before = sessions.len();
                    sessions.retain(|s| !s.peer.is_transport_closed());
                    let closed = before - sessions.len();
                    mcplex_telemetry::metrics()
                        .sessions
                        .dec_by(i64::try_from(closed).unwrap_or(0));
                    sessions
                        .iter_mut()
                        .filter_map(|session| {
                            let due = if tools_changed {
                                let now = tools.get(&snapshot, &builtins, &session.scope);
                                let changed =
                                    !Arc::ptr_eq(&now, &session.seen) && now != session.seen;
                                session.seen = now;
                                Due {
                                    tools: changed,
                                    ..Due::default()
                                }
                            } else {
                                let (prompts, resources) = snapshot
                                    .offers()
                                    .changed_for(offers_seen.offers(), &session.scope);
                                Due {
                                    tools: false,
                                    prompts,
                                    resources,
                                }
                            };
                            due.any().then(|| (session.peer.clone(), due))
                        })
                        .collect()
                };
                if !tools_changed {
                    offers_seen = snapshot;
                }
                for (peer, due) in due {
                    if let Err(e) = due.send(&peer).await {
                        tracing::debug!("cannot send list_changed to a session: {e}");
                    }
                }
            }
        });
        peers
    }

    pub(crate) fn add(&self, peer: Peer<RoleServer>, scope: Scope) {
        let seen = self
            .tools
            .get(&self.gateway.snapshot(), &self.builtins, &scope);
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Session { peer, scope, seen });
        mcplex_telemetry::metrics().sessions.inc();
    }
}

/// Which `list_changed` notifications one session is owed.
#[derive(Default)]
struct Due {
    tools: bool,
    prompts: bool,
    resources: bool,
}

impl Due {
    fn any(&self) -> bool {
        self.tools || self.prompts || self.resources
    }

    async fn send(&self, peer: &Peer<RoleServer>) -> Result<(), rmcp::service::ServiceError> {
        if self.tools {
            peer.notify_tool_list_changed().await?;
        }
        if self.prompts {
            peer.notify_prompt_list_changed().await?;
        }
        if self.resources {
            peer.notify_resource_list_changed().await?;
        }
        Ok(())
    }
}
