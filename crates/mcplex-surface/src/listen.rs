//! Change notifications to clients: `notifications/{tools,prompts,resources}/list_changed` for
//! session-era clients ([`LegacyPeers`]: every initialized session's peer is kept, with its
//! caller's scope and the listing it last saw, until its transport closes; closed ones are
//! dropped when a session starts, when a listing changes, and every few seconds), and the
//! 2026-07-28 `subscriptions/listen` stream ([`listen`]). A client is notified only when what
//! *it* may see changed.

use std::sync::{Arc, Mutex, PoisonError};

use mcplex_catalog::{Scope, Snapshot};
use mcplex_dispatch::Gateway;
use rmcp::model::{SubscriptionFilter, Tool};
use rmcp::service::{RoleServer, SubscriptionContext};
use rmcp::{ErrorData, Peer};
use serde_json::Value;

use crate::Caller;
use crate::subscriptions::{MAX_PER_SUBSCRIBER, Subscriber, Subscriptions};
use crate::typed::ToolsCache;

/// A tool listing that changes with the catalog (the direct surface's), as its clients see it.
/// The retrieve and code surfaces list constant tools and have none.
#[derive(Clone)]
pub(crate) struct ListedTools {
    pub cache: ToolsCache,
    /// Built-ins listed before the upstream tools, decided from the config alone.
    pub builtins: Arc<Vec<Value>>,
}

impl ListedTools {
    pub(crate) fn get(&self, snapshot: &Snapshot, scope: &Scope) -> Arc<Vec<Tool>> {
        self.cache.get(snapshot, &self.builtins, scope)
    }
}

/// What a surface keeps about its clients: session peers (for `list_changed`), resource
/// subscriptions, and its tool listing when that can change.
#[derive(Clone)]
pub(crate) struct Clients {
    pub peers: LegacyPeers,
    pub subscriptions: Subscriptions,
    pub tools: Option<ListedTools>,
}

impl Clients {
    /// Starts forwarding changes and resource updates to the clients of one surface.
    pub(crate) fn start(gateway: &Arc<Gateway>, tools: Option<ListedTools>) -> Clients {
        Clients {
            peers: LegacyPeers::start(gateway.clone(), tools.clone()),
            subscriptions: Subscriptions::start(gateway),
            tools,
        }
    }
}

/// How often closed sessions' peers are dropped when nothing else happens.
const PRUNE_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

struct Session {
    peer: Peer<RoleServer>,
    scope: Scope,
    seen: Arc<Vec<Tool>>,
}

#[derive(Clone)]
pub(crate) struct LegacyPeers {
    sessions: Arc<Mutex<Vec<Session>>>,
    gateway: Arc<Gateway>,
    tools: Option<ListedTools>,
}

impl LegacyPeers {
    /// Starts the forwarding task; it ends when the gateway's watch is dropped.
    pub(crate) fn start(gateway: Arc<Gateway>, tools: Option<ListedTools>) -> LegacyPeers {
        let peers = LegacyPeers {
            sessions: Arc::default(),
            gateway,
            tools,
        };
        // The task holds nothing strongly: it ends when the surface or the gateway is gone.
        let weak_sessions = Arc::downgrade(&peers.sessions);
        let weak_gateway = Arc::downgrade(&peers.gateway);
        let tools = peers.tools.clone();
        let mut changes = peers.gateway.listing_changes();
        let mut offer_changes = peers.gateway.offers_changes();
        tokio::spawn(async move {
            changes.mark_unchanged();
            offer_changes.mark_unchanged();
            let mut prune = tokio::time::interval(PRUNE_EVERY);
            prune.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
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
                    _ = prune.tick() => {
                        let Some(sessions) = weak_sessions.upgrade() else {
                            return;
                        };
                        sessions
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .retain(|s| !s.peer.is_transport_closed());
                        continue;
                    }
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
                    sessions.retain(|s| !s.peer.is_transport_closed());
                    sessions
                        .iter_mut()
                        .filter_map(|session| {
                            let due = if let (true, Some(tools)) = (tools_changed, &tools) {
                                let now = tools.get(&snapshot, &session.scope);
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
        let seen = match &self.tools {
            Some(tools) => tools.get(&self.gateway.snapshot(), &scope),
            None => Arc::default(),
        };
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        // A closed session's peer is dropped here, not at the next listing change: its
        // memory goes with it. (The open-session count is kept by `sessions.rs`.)
        sessions.retain(|s| !s.peer.is_transport_closed());
        sessions.push(Session { peer, scope, seen });
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

/// The part of a client's `subscriptions/listen` filter a surface honours: list changes of
/// prompts and resources, of tools when its listing can change, and resource subscriptions
/// (which URIs resolve is decided per caller in [`listen`]; one that does not is dropped there,
/// with a log line).
pub(crate) fn accepted_filter(requested: &SubscriptionFilter, tools: bool) -> SubscriptionFilter {
    let mut accepted = SubscriptionFilter::new();
    if tools {
        accepted.tools_list_changed = requested.tools_list_changed.filter(|wanted| *wanted);
    }
    accepted.prompts_list_changed = requested.prompts_list_changed.filter(|wanted| *wanted);
    accepted.resources_list_changed = requested.resources_list_changed.filter(|wanted| *wanted);
    accepted.resource_subscriptions = requested.resource_subscriptions.clone();
    accepted
}

/// Serves one 2026-07-28 `subscriptions/listen` request until it is cancelled: list changes of
/// what this caller may see, and updates of the resources it subscribed to.
pub(crate) async fn listen(
    gateway: &Gateway,
    subscriptions: &Subscriptions,
    caller: Caller,
    tools: Option<&ListedTools>,
    subscription: SubscriptionContext,
) -> Result<(), ErrorData> {
    let scope = &caller.scope;
    let mut changes = gateway.listing_changes();
    changes.mark_unchanged();
    let mut offer_changes = gateway.offers_changes();
    offer_changes.mark_unchanged();
    let accepted = subscription.accepted().clone();
    let wants_tools = accepted.tools_list_changed == Some(true);
    let wants_prompts = accepted.prompts_list_changed == Some(true);
    let wants_resources = accepted.resources_list_changed == Some(true);
    let cancel = subscription.request_context().ct.clone();
    let listen_id = subscriptions.listen_id();
    let uris = accepted.resource_subscriptions.iter().flatten();
    if uris.clone().count() > MAX_PER_SUBSCRIBER {
        tracing::debug!(
            "subscriptions/listen: only the first {MAX_PER_SUBSCRIBER} resource subscriptions are taken"
        );
    }
    for uri in uris.take(MAX_PER_SUBSCRIBER) {
        let subscriber = Subscriber::Listen(subscription.sink().clone(), listen_id);
        if let Err(e) = subscriptions
            .subscribe(gateway, &caller, uri, subscriber, cancel.clone())
            .await
        {
            tracing::debug!(
                "subscriptions/listen: not subscribed to {uri}: {}",
                e.message
            );
        }
    }
    // Only a change to what this caller sees is worth a notification.
    let mut seen = tools.map(|t| t.get(&gateway.snapshot(), scope));
    let mut seen_offers = gateway.snapshot();
    let sink = subscription.sink();
    loop {
        tokio::select! {
            changed = changes.changed() => {
                if changed.is_err() {
                    break;
                }
                let Some(tools) = tools else { continue };
                let now = tools.get(&gateway.snapshot(), scope);
                if seen.as_ref() == Some(&now) {
                    continue;
                }
                seen = Some(now);
                if wants_tools && sink.notify_tool_list_changed().await.is_err() {
                    break;
                }
            }
            changed = offer_changes.changed() => {
                if changed.is_err() {
                    break;
                }
                let now = gateway.snapshot();
                let (prompts, resources) = now.offers().changed_for(seen_offers.offers(), scope);
                seen_offers = now;
                if wants_prompts && prompts && sink.notify_prompt_list_changed().await.is_err() {
                    break;
                }
                if wants_resources && resources && sink.notify_resource_list_changed().await.is_err() {
                    break;
                }
            }
            () = subscription.cancelled() => break,
        }
    }
    subscriptions.end_listen(gateway, listen_id).await;
    Ok(())
}
