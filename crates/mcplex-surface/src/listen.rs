//! `notifications/tools/list_changed` for session-era clients. (2026-07-28 clients get theirs
//! through `subscriptions/listen`, see `DirectSurface::listen`.) Every initialized session's
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
        tokio::spawn(async move {
            changes.mark_unchanged();
            while changes.changed().await.is_ok() {
                let (Some(sessions), Some(gateway)) =
                    (weak_sessions.upgrade(), weak_gateway.upgrade())
                else {
                    return;
                };
                let snapshot = gateway.snapshot();
                drop(gateway);
                let due: Vec<Peer<RoleServer>> = {
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
                            let now = tools.get(&snapshot, &builtins, &session.scope);
                            let changed = !Arc::ptr_eq(&now, &session.seen) && now != session.seen;
                            session.seen = now;
                            changed.then(|| session.peer.clone())
                        })
                        .collect()
                };
                for peer in due {
                    if let Err(e) = peer.notify_tool_list_changed().await {
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
