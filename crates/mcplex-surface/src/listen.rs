//! `notifications/tools/list_changed` for session-era clients. (2026-07-28 clients get theirs
//! through `subscriptions/listen`, see `DirectSurface::listen`.) Every initialized session's
//! peer is kept until its transport closes; each tick of the gateway's listing watch is sent to
//! all of them.

use std::sync::{Arc, Mutex, PoisonError};

use rmcp::Peer;
use rmcp::service::RoleServer;
use tokio::sync::watch;

#[derive(Clone)]
pub(crate) struct LegacyPeers {
    peers: Arc<Mutex<Vec<Peer<RoleServer>>>>,
}

impl LegacyPeers {
    /// Starts the forwarding task; it ends when the gateway's watch is dropped.
    pub(crate) fn start(mut changes: watch::Receiver<u64>) -> LegacyPeers {
        let peers: Arc<Mutex<Vec<Peer<RoleServer>>>> = Arc::default();
        let weak = Arc::downgrade(&peers);
        tokio::spawn(async move {
            changes.mark_unchanged();
            while changes.changed().await.is_ok() {
                let Some(peers) = weak.upgrade() else { return };
                let live: Vec<Peer<RoleServer>> = {
                    let mut peers = peers.lock().unwrap_or_else(PoisonError::into_inner);
                    peers.retain(|peer| !peer.is_transport_closed());
                    peers.clone()
                };
                for peer in live {
                    if let Err(e) = peer.notify_tool_list_changed().await {
                        tracing::debug!("cannot send list_changed to a session: {e}");
                    }
                }
            }
        });
        LegacyPeers { peers }
    }

    pub(crate) fn add(&self, peer: Peer<RoleServer>) {
        self.peers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(peer);
    }
}
