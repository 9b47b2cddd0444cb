//! Serving one live connection for its supervisor: notices handed on, `list_changed` re-listed
//! (bursts coalesced, re-lists at least [`RELIST_SPACING`] apart), a logout, a lost connection
//! or a stop noticed at once, even while a re-list is waiting for its answer. A re-list has the
//! server's `init_timeout`, as the first listing has; one that takes longer, or that is larger
//! than a listing may be, ends the connection with the reason (the server's status shows it).

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcplex_protocol::Offer;
use serde_json::Value;
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

use crate::UpstreamError;
use crate::lifecycle::{self, OfferParts};
use crate::login::{LoginCheck, check_login, login_change};
use crate::rpc::RpcConnection;
use crate::rpc::notifications::{ListChanges, NotificationReceiver, Received};
use crate::supervisor::{ServerSlot, UpstreamNotice, UpstreamReport};

/// The least time between two re-lists of one server: a server that floods `list_changed`
/// costs at most this many listings per second, however many notifications it sends.
const RELIST_SPACING: Duration = Duration::from_millis(250);

/// What one live connection last reported.
pub(crate) struct Listed {
    pub(crate) tools: Arc<Vec<Value>>,
    pub(crate) offer: Arc<Offer>,
}

impl Listed {
    pub(crate) fn report(&self) -> UpstreamReport {
        UpstreamReport::Listed {
            tools: self.tools.clone(),
            offer: self.offer.clone(),
        }
    }
}

/// Which listings to re-read.
#[derive(Default)]
struct Stale {
    tools: bool,
    offer: OfferParts,
}

impl Stale {
    fn add(&mut self, changes: ListChanges) {
        self.tools |= changes.tools;
        self.offer.prompts |= changes.prompts;
        self.offer.resources |= changes.resources;
    }
}

/// How a re-list ended.
enum Relisted {
    /// Something changed: this is the new listing.
    Changed(Listed),
    /// Nothing changed (or a part failed and keeps what it had).
    Same,
    /// The connection ends: lost, logged out or refused (`Some(reason)`), or stopped (`None`).
    Ended(Option<String>),
}

/// What serving a connection watches besides its notifications.
pub(crate) struct Watch<'a> {
    pub(crate) slot: &'a ServerSlot,
    pub(crate) connection: &'a Arc<RpcConnection>,
    pub(crate) logins_changed: Option<&'a mut watch::Receiver<u64>>,
    pub(crate) shutdown: &'a CancellationToken,
}

impl Watch<'_> {
    /// Resolves with the end of the connection: lost or logged out (`Some(reason)`), or
    /// stopped (`None`). A login change that leaves it a login does not end it.
    async fn ended(&mut self) -> Option<String> {
        loop {
            tokio::select! {
                () = self.connection.closed() => return Some(self.connection.lost_reason().await),
                () = login_change(self.logins_changed.as_deref_mut()) => {
                    // A logout (or a login refused meanwhile) ends the connection at once.
                    let login = self.slot.login();
                    if let LoginCheck::NeedsLogin(reason) = check_login(&self.slot.config, login.as_deref()).await {
                        return Some(reason);
                    }
                }
                () = self.shutdown.cancelled() => return None,
            }
        }
    }
}

/// Serves one live connection until it dies (`Some(reason)`) or its server stops (`None`).
/// `listed` is what was last reported for it.
pub(crate) async fn serve(
    mut watch: Watch<'_>,
    notifications: &mut NotificationReceiver,
    mut listed: Listed,
    emit: &impl Fn(UpstreamReport),
    notices: &broadcast::Sender<UpstreamNotice>,
) -> Option<String> {
    let (slot, connection) = (watch.slot, watch.connection);
    let name = slot.config.name.as_str();
    let server: Arc<str> = name.into();
    let notice = |notification: Value| {
        let method = notification
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default();
        tracing::debug!(
            server = name,
            "notification from upstream: {}",
            slot.redactor.redact_start(method, 100)
        );
        let _ = notices.send(UpstreamNotice {
            server: server.clone(),
            method: method.to_owned(),
            params: notification.get("params").cloned().unwrap_or(Value::Null),
        });
    };
    let mut last_relist: Option<Instant> = None;
    loop {
        let received = tokio::select! {
            received = notifications.recv() => received,
            ended = watch.ended() => return ended,
        };
        let changes = match received {
            None => return Some(connection.lost_reason().await),
            Some(Received::Notice(notification)) => {
                notice(notification);
                continue;
            }
            Some(Received::Changed(changes)) => changes,
        };
        // The first change is re-listed at once; later ones wait out the spacing, and
        // everything that arrives meanwhile costs the same one re-list.
        if let Some(at) = last_relist {
            let wait = RELIST_SPACING.saturating_sub(at.elapsed());
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                ended = watch.ended() => return ended,
            }
        }
        let mut stale = Stale::default();
        stale.add(changes);
        if let Some(more) = notifications.take_changes() {
            stale.add(more);
        }
        stale.offer = stale.offer.within(OfferParts::of(&slot.config));
        last_relist = Some(Instant::now());
        let relisting = relist(slot, connection, &listed, &stale);
        let relisted = tokio::select! {
            relisted = relisting => relisted,
            ended = watch.ended() => return ended,
        };
        match relisted {
            Relisted::Changed(new) => {
                listed = new;
                emit(listed.report());
            }
            Relisted::Same => {}
            Relisted::Ended(ended) => return ended,
        }
    }
}

/// Re-reads what `stale` names, within the server's `init_timeout`. An unchanged list changes
/// nothing downstream: no rebuild, no list_changed.
async fn relist(
    slot: &ServerSlot,
    connection: &RpcConnection,
    listed: &Listed,
    stale: &Stale,
) -> Relisted {
    let limit = slot.config.init_timeout;
    match tokio::time::timeout(limit, read_again(connection, listed, stale, limit)).await {
        Ok(relisted) => relisted,
        Err(_) => {
            let secs = limit.as_secs_f32();
            let reason = format!("re-listing did not finish within init_timeout ({secs}s)");
            tracing::warn!(server = connection.server(), "{reason}");
            Relisted::Ended(Some(reason))
        }
    }
}

/// [`relist`] without its overall limit; each request has `timeout`.
async fn read_again(
    connection: &RpcConnection,
    listed: &Listed,
    stale: &Stale,
    timeout: Duration,
) -> Relisted {
    let name = connection.server();
    let mut tools = listed.tools.clone();
    if stale.tools {
        match lifecycle::list_tools(connection, timeout).await {
            Ok(new) if *tools == new => {}
            Ok(new) => {
                tracing::info!(
                    server = name,
                    tools = new.len(),
                    "upstream tool list changed"
                );
                tools = Arc::new(new);
            }
            Err(e) if fatal(&e) => {
                tracing::warn!(server = name, "re-listing tools failed: {e}");
                return Relisted::Ended(Some(format!("re-listing tools failed: {e}")));
            }
            Err(e) => tracing::warn!(server = name, "re-listing tools failed: {e}"),
        }
    }
    let mut offer = listed.offer.clone();
    if stale.offer != OfferParts::default() {
        let mut read = Offer::clone(&listed.offer);
        lifecycle::read_offer(connection, &mut read, stale.offer, timeout).await;
        if read != *listed.offer {
            tracing::info!(server = name, "upstream prompts or resources changed");
            offer = Arc::new(read);
        }
    }
    if Arc::ptr_eq(&tools, &listed.tools) && Arc::ptr_eq(&offer, &listed.offer) {
        return Relisted::Same;
    }
    Relisted::Changed(Listed { tools, offer })
}

/// Whether a failed re-list ends the connection: a server that does not answer its listing in
/// time, or whose listing is larger than a listing may be, is not served on a stale one.
fn fatal(error: &UpstreamError) -> bool {
    matches!(
        error,
        UpstreamError::Timeout { .. } | UpstreamError::ListingTooLarge { .. }
    )
}
