//! Resource subscriptions: `resources/subscribe` / `resources/unsubscribe` from session-era
//! clients and the `resourceSubscriptions` of a 2026-07-28 `subscriptions/listen`.
//!
//! A subscription is resolved to (server, upstream URI) like a read. The upstream is subscribed
//! once per URI however many clients want it, and unsubscribed when the last one leaves;
//! `notifications/resources/updated` from it reaches every subscriber under the URI that
//! subscriber used.

use std::sync::{Arc, Mutex, PoisonError};

use mcplex_catalog::Route;
use mcplex_dispatch::{Gateway, RequestContext, UpstreamRequest};
use rmcp::ErrorData;
use rmcp::Peer;
use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::{RoleServer, SubscriptionSink};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::Caller;

/// Where one subscriber's updates go.
#[derive(Clone)]
pub(crate) enum Subscriber {
    /// A session-era client; identified by its session's handshake record.
    Session(Peer<RoleServer>),
    /// One `subscriptions/listen` request of a 2026-07-28 client.
    Listen(SubscriptionSink, u64),
}

impl Subscriber {
    fn identity(&self) -> Identity {
        match self {
            // The handshake record is allocated once per session: its address names the session.
            Subscriber::Session(peer) => {
                Identity::Session(peer.peer_info().map(|info| Arc::as_ptr(&info) as usize))
            }
            Subscriber::Listen(_, id) => Identity::Listen(*id),
        }
    }

    fn is_gone(&self) -> bool {
        match self {
            Subscriber::Session(peer) => peer.is_transport_closed(),
            Subscriber::Listen(..) => false,
        }
    }
}

/// Resource subscriptions one session or one `subscriptions/listen` may hold: each is an entry
/// here and, the first for its URI, a request upstream.
pub(crate) const MAX_PER_SUBSCRIBER: usize = 256;

/// The longest resource URI a subscription takes.
const MAX_URI_BYTES: usize = 8 * 1024;

#[derive(PartialEq, Eq, Clone, Copy)]
enum Identity {
    Session(Option<usize>),
    Listen(u64),
}

struct Entry {
    route: Route,
    original: String,
    served: String,
    subscriber: Subscriber,
}

/// Every resource subscription of one surface.
#[derive(Clone)]
pub(crate) struct Subscriptions {
    entries: Arc<Mutex<Vec<Entry>>>,
    next_listen: Arc<std::sync::atomic::AtomicU64>,
}

impl Subscriptions {
    /// Starts forwarding the upstreams' `notifications/resources/updated`; the task ends with the
    /// surface.
    pub(crate) fn start(gateway: &Arc<Gateway>) -> Subscriptions {
        let subscriptions = Subscriptions {
            entries: Arc::default(),
            next_listen: Arc::default(),
        };
        let weak = Arc::downgrade(&subscriptions.entries);
        let mut notices = gateway.upstream_notices();
        tokio::spawn(async move {
            loop {
                let notice = match notices.recv().await {
                    Ok(notice) => notice,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::warn!(
                            "{missed} upstream notifications were dropped (a slow subscriber)"
                        );
                        continue;
                    }
                    Err(_) => return,
                };
                if notice.method != "notifications/resources/updated" {
                    continue;
                }
                let Some(entries) = weak.upgrade() else {
                    return;
                };
                let Some(uri) = notice.params.get("uri").and_then(Value::as_str) else {
                    continue;
                };
                let due: Vec<(Subscriber, String)> = {
                    let mut entries = entries.lock().unwrap_or_else(PoisonError::into_inner);
                    entries.retain(|e| !e.subscriber.is_gone());
                    entries
                        .iter()
                        .filter(|e| **e.route.server() == *notice.server && e.original == uri)
                        .map(|e| (e.subscriber.clone(), e.served.clone()))
                        .collect()
                };
                for (subscriber, served) in due {
                    let sent = match subscriber {
                        Subscriber::Session(peer) => peer
                            .notify_resource_updated(ResourceUpdatedNotificationParam::new(served))
                            .await
                            .map_err(|e| e.to_string()),
                        Subscriber::Listen(sink, _) => sink
                            .notify_resource_updated(served)
                            .await
                            .map_err(|e| e.to_string()),
                    };
                    if let Err(e) = sent {
                        tracing::debug!("cannot forward a resource update: {e}");
                    }
                }
            }
        });
        subscriptions
    }

    /// A fresh id for one `subscriptions/listen` request.
    pub(crate) fn listen_id(&self) -> u64 {
        self.next_listen
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// Subscribes `subscriber` to `uri` (as the client knows it): at most
    /// [`MAX_PER_SUBSCRIBER`] URIs for one session or listen, each at most [`MAX_URI_BYTES`].
    pub(crate) async fn subscribe(
        &self,
        gateway: &Gateway,
        caller: &Caller,
        uri: &str,
        subscriber: Subscriber,
        cancel: CancellationToken,
    ) -> Result<(), ErrorData> {
        if uri.len() > MAX_URI_BYTES {
            return Err(ErrorData::invalid_params(
                format!("a resource URI is at most {MAX_URI_BYTES} bytes"),
                None,
            ));
        }
        let snapshot = gateway.snapshot();
        let Some(target) = snapshot.offers().resolve_uri(uri, &caller.scope) else {
            return Err(ErrorData::resource_not_found(
                format!("unknown resource: {uri}"),
                Some(json!({"uri": uri})),
            ));
        };
        let supports = snapshot
            .offers()
            .features(target.route.server())
            .is_some_and(|f| f.subscribe);
        drop(snapshot);
        if !supports {
            return Err(ErrorData::invalid_params(
                format!("the server of {uri} does not support resource subscriptions"),
                Some(json!({"uri": uri})),
            ));
        }
        // Ended sessions' subscriptions go first (unsubscribed upstream where nobody else holds
        // them): they are no one's, and would keep the next subscriber of their URI from
        // reaching the upstream.
        self.remove(gateway, |e| e.subscriber.is_gone()).await;
        let identity = subscriber.identity();
        let first = {
            let mut entries = self.lock();
            let known = |e: &Entry| e.route == target.route && e.original == target.original;
            if entries
                .iter()
                .any(|e| known(e) && e.subscriber.identity() == identity)
            {
                return Ok(());
            }
            let held = entries
                .iter()
                .filter(|e| e.subscriber.identity() == identity)
                .count();
            if held >= MAX_PER_SUBSCRIBER {
                return Err(ErrorData::invalid_params(
                    format!(
                        "too many resource subscriptions: at most {MAX_PER_SUBSCRIBER} in one session or listen"
                    ),
                    Some(json!({"uri": uri})),
                ));
            }
            let first = !entries.iter().any(known);
            entries.push(Entry {
                route: target.route.clone(),
                original: target.original.clone(),
                served: uri.to_owned(),
                subscriber,
            });
            first
        };
        if first
            && let Err(e) = gateway
                .request(
                    &target.route,
                    UpstreamRequest::subscribe(&target.original),
                    RequestContext {
                        token: caller.token.clone(),
                        credential: caller.credential.clone(),
                        cancel,
                        // A caller's, with no call of its own to reach the client through.
                        relay: Some(Arc::new(mcplex_upstream::NoClient::default())),
                    },
                )
                .await
        {
            self.remove(gateway, |e| {
                e.subscriber.identity() == identity && e.served == uri
            })
            .await;
            return Err(ErrorData::internal_error(
                format!("the upstream refused the subscription: {e}"),
                None,
            ));
        }
        Ok(())
    }

    /// Ends the subscription of the session `peer` to `uri`.
    pub(crate) async fn unsubscribe_session(
        &self,
        gateway: &Gateway,
        peer: &Peer<RoleServer>,
        uri: &str,
    ) {
        let identity = Subscriber::Session(peer.clone()).identity();
        self.remove(gateway, |e| {
            e.subscriber.identity() == identity && e.served == uri
        })
        .await;
    }

    /// Ends every subscription of one `subscriptions/listen` request.
    pub(crate) async fn end_listen(&self, gateway: &Gateway, id: u64) {
        self.remove(
            gateway,
            |e| matches!(e.subscriber, Subscriber::Listen(_, i) if i == id),
        )
        .await;
    }

    /// Removes the matching entries; unsubscribes upstream from URIs nobody wants any more.
    async fn remove(&self, gateway: &Gateway, matching: impl Fn(&Entry) -> bool) {
        let orphans: Vec<(Route, String)> = {
            let mut entries = self.lock();
            let removed: Vec<(Route, String)> = entries
                .iter()
                .filter(|e| matching(e))
                .map(|e| (e.route.clone(), e.original.clone()))
                .collect();
            entries.retain(|e| !matching(e));
            removed
                .into_iter()
                .filter(|(route, original)| {
                    !entries
                        .iter()
                        .any(|e| &e.route == route && &e.original == original)
                })
                .collect()
        };
        for (route, original) in orphans {
            // Nobody asked for this one: the last subscriber left, or its session ended.
            let cx = RequestContext {
                token: None,
                credential: None,
                cancel: CancellationToken::new(),
                relay: None,
            };
            let unsubscribed = gateway
                .request(&route, UpstreamRequest::unsubscribe(&original), cx)
                .await;
            if let Err(e) = unsubscribed {
                tracing::debug!(server = %route, "resources/unsubscribe failed: {e}");
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
