//! Session-era sessions: rmcp's [`LocalSessionManager`] with a cap, idle expiry and a true
//! count. [`SessionBook`] is shared by every MCP route of the gateway: it counts the open
//! sessions (the `mcplex_sessions` gauge) and refuses a new one past `max_sessions`. Each route's
//! [`Sessions`] wraps its own manager and remembers, per session, how many answer streams are
//! open and when it was last used; a session with none open for `session_idle_timeout` is
//! ended (a long call or an open GET stream is not idle). A deleted or ended session is removed
//! from both at once, so its memory goes with it.
//!
//! For the fast call path (`fast.rs`) each initialized session also keeps its rmcp peer, a token
//! cancelled when the session ends, and the numbers of the answer streams the fast path opened.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use rmcp::Peer;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::RoleServer;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::session_owners::{Owner, Owners};

/// The gateway-wide count of open sessions and its cap, and who opened each.
pub(crate) struct SessionBook {
    max: usize,
    idle: Duration,
    open: AtomicUsize,
    pub(crate) owners: Owners,
}

impl SessionBook {
    pub(crate) fn new(max: usize, max_per_caller: usize, idle: Duration) -> Arc<SessionBook> {
        Arc::new(SessionBook {
            max,
            idle,
            open: AtomicUsize::new(0),
            owners: Owners::new(max_per_caller),
        })
    }

    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// Whether a new session of `owner` would be refused now. The last places (a tenth, at most
    /// ten) are the operator's: callers' sessions together never lock the API key out.
    pub(crate) fn full_for(&self, owner: &Owner) -> bool {
        let open = self.open.load(Ordering::Acquire);
        match owner {
            None => open >= self.max,
            Some(_) => open + (self.max / 10).min(10) >= self.max,
        }
    }

    fn reserve(&self) -> bool {
        let reserved = self
            .open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .is_ok();
        if reserved {
            mcplex_telemetry::metrics().sessions.inc();
        }
        reserved
    }

    fn release(&self) {
        let released = self
            .open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok();
        if released {
            mcplex_telemetry::metrics().sessions.dec();
        }
    }
}

/// Why a session could not be served.
#[derive(Debug)]
pub(crate) enum SessionsError {
    Local(LocalSessionManagerError),
    Full(usize),
}

impl std::fmt::Display for SessionsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SessionsError::Local(e) => e.fmt(f),
            SessionsError::Full(max) => write!(f, "too many open sessions (max_sessions {max})"),
        }
    }
}

impl std::error::Error for SessionsError {}

impl From<LocalSessionManagerError> for SessionsError {
    fn from(e: LocalSessionManagerError) -> SessionsError {
        SessionsError::Local(e)
    }
}

struct Activity {
    /// Answer streams open (requests in flight, the GET stream).
    streams: usize,
    last: Instant,
    /// The session's peer, once its client sent `notifications/initialized`.
    peer: Option<Peer<RoleServer>>,
    /// Cancelled once `peer` is known.
    peer_known: CancellationToken,
    /// Cancelled when the session ends.
    ended: CancellationToken,
    /// The number of the next answer stream the fast path opens.
    next_fast_stream: u64,
}

impl Activity {
    fn new(ended: CancellationToken) -> Activity {
        Activity {
            streams: 0,
            last: Instant::now(),
            peer: None,
            peer_known: CancellationToken::new(),
            ended,
            next_fast_stream: FAST_STREAMS_FROM,
        }
    }
}

/// The answer streams of the fast path are numbered from here, apart from rmcp's own (numbered
/// from 0 per session), so an event id never names another request's stream.
pub(crate) const FAST_STREAMS_FROM: u64 = 1_000_000_000_000_000;

/// A session the fast path may answer in: its peer, a token cancelled when it ends, the number
/// of the answer stream opened, and that stream's place among the session's open streams.
pub(crate) struct FastSession {
    pub peer: Peer<RoleServer>,
    pub ended: CancellationToken,
    pub stream: u64,
    pub retry: Option<Duration>,
    pub open: StreamOpen,
}

/// What one route knows about its sessions' use.
struct Ledger {
    book: Arc<SessionBook>,
    sessions: Mutex<HashMap<SessionId, Activity>>,
}

impl Ledger {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Activity>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn touch(&self, id: &SessionId) {
        if let Some(activity) = self.lock().get_mut(id) {
            activity.last = Instant::now();
        }
    }

    fn open_stream(self: &Arc<Ledger>, id: &SessionId) -> StreamOpen {
        if let Some(activity) = self.lock().get_mut(id) {
            activity.streams += 1;
            activity.last = Instant::now();
        }
        StreamOpen {
            ledger: Arc::downgrade(self),
            id: id.clone(),
        }
    }

    /// Forgets `id`; true when it was known (so it is counted down once).
    fn forget(&self, id: &SessionId) -> bool {
        let removed = self.lock().remove(id);
        let known = removed.is_some();
        if let Some(activity) = removed {
            activity.ended.cancel();
            self.book.release();
            self.book.owners.ended(id);
        }
        known
    }

    /// Sessions with no stream open and unused for the idle timeout.
    fn idle(&self, now: Instant) -> Vec<SessionId> {
        let idle = self.book.idle;
        self.lock()
            .iter()
            .filter(|(_, a)| a.streams == 0 && now.duration_since(a.last) >= idle)
            .map(|(id, _)| id.clone())
            .collect()
    }
}

/// An open answer stream of a session; dropping it (the answer ended, or the client went away)
/// starts the session's idle clock again.
pub(crate) struct StreamOpen {
    ledger: Weak<Ledger>,
    id: SessionId,
}

impl Drop for StreamOpen {
    fn drop(&mut self) {
        if let Some(ledger) = self.ledger.upgrade()
            && let Some(activity) = ledger.lock().get_mut(&self.id)
        {
            activity.streams = activity.streams.saturating_sub(1);
            activity.last = Instant::now();
        }
    }
}

type SseStream = Pin<Box<dyn Stream<Item = ServerSseMessage> + Send + Sync>>;

struct Tracked {
    inner: SseStream,
    _open: StreamOpen,
}

impl Stream for Tracked {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

/// One route's session manager.
pub(crate) struct Sessions {
    inner: LocalSessionManager,
    ledger: Arc<Ledger>,
    /// Ends every session's token at shutdown.
    shutdown: CancellationToken,
}

impl Sessions {
    /// A manager counting into `book`; its idle sessions are ended by a task that lives as long
    /// as the manager.
    pub(crate) fn new(book: Arc<SessionBook>, shutdown: CancellationToken) -> Arc<Sessions> {
        let mut inner = LocalSessionManager::default();
        // Idle expiry is ours: rmcp's would end a session whose only activity is a long call
        // or an open GET stream.
        inner.session_config.keep_alive = None;
        let idle = book.idle;
        let sessions = Arc::new(Sessions {
            inner,
            ledger: Arc::new(Ledger {
                book,
                sessions: Mutex::default(),
            }),
            shutdown,
        });
        let weak = Arc::downgrade(&sessions);
        let period = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(period).await;
                let Some(sessions) = weak.upgrade() else {
                    return;
                };
                for id in sessions.ledger.idle(Instant::now()) {
                    tracing::debug!("ending session {id}: idle for {idle:?}");
                    if let Err(e) = sessions.close_session(&id).await {
                        tracing::debug!("cannot end idle session {id}: {e}");
                    }
                }
            }
        });
        sessions
    }

    /// Keeps the peer of session `id` (called when its client sent `notifications/initialized`).
    pub(crate) fn remember_peer(&self, id: &str, peer: Peer<RoleServer>) {
        if let Some(activity) = self.ledger.lock().get_mut(id) {
            activity.peer = Some(peer);
            activity.peer_known.cancel();
        }
    }

    /// Cancelled once session `id`'s peer is known (its `notifications/initialized` handled by
    /// rmcp's worker, which happens after rmcp accepted the notification); `None` for a session
    /// this route does not know.
    /// The second token is cancelled when the session ends (its peer will never be known).
    pub(crate) fn peer_known(&self, id: &str) -> Option<(CancellationToken, CancellationToken)> {
        self.ledger
            .lock()
            .get(id)
            .map(|activity| (activity.peer_known.clone(), activity.ended.clone()))
    }

    /// Session `id`, when it is initialized and open, with a new answer stream opened in it.
    pub(crate) fn fast_session(&self, id: &str) -> Option<FastSession> {
        let mut sessions = self.ledger.lock();
        let key = sessions.get_key_value(id)?.0.clone();
        let activity = sessions.get_mut(id)?;
        let peer = activity.peer.clone()?;
        if peer.is_transport_closed() || activity.ended.is_cancelled() {
            return None;
        }
        let stream = activity.next_fast_stream;
        activity.next_fast_stream += 1;
        activity.streams += 1;
        activity.last = Instant::now();
        let ended = activity.ended.clone();
        drop(sessions);
        Some(FastSession {
            peer,
            ended,
            stream,
            retry: self.inner.session_config.sse_retry,
            open: StreamOpen {
                ledger: Arc::downgrade(&self.ledger),
                id: key,
            },
        })
    }

    fn tracked(
        &self,
        id: &SessionId,
        stream: impl Stream<Item = ServerSseMessage> + Send + Sync + 'static,
    ) -> Tracked {
        Tracked {
            inner: Box::pin(stream),
            _open: self.ledger.open_stream(id),
        }
    }
}

impl SessionManager for Sessions {
    type Error = SessionsError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), SessionsError> {
        if !self.ledger.book.reserve() {
            return Err(SessionsError::Full(self.ledger.book.max));
        }
        match self.inner.create_session().await {
            Ok((id, transport)) => {
                self.ledger
                    .lock()
                    .insert(id.clone(), Activity::new(self.shutdown.child_token()));
                Ok((id, transport))
            }
            Err(e) => {
                self.ledger.book.release();
                Err(e.into())
            }
        }
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, SessionsError> {
        self.ledger.touch(id);
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, SessionsError> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), SessionsError> {
        let closed = self.inner.close_session(id).await;
        self.ledger.forget(id);
        Ok(closed?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionsError> {
        let stream = self.inner.create_stream(id, message).await?;
        Ok(self.tracked(id, stream))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), SessionsError> {
        self.ledger.touch(id);
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionsError> {
        let stream = self.inner.create_standalone_stream(id).await?;
        Ok(self.tracked(id, stream))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionsError> {
        let stream = self.inner.resume(id, last_event_id).await?;
        Ok(self.tracked(id, stream))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_cap_refuses_and_closing_frees_a_place() {
        let book = SessionBook::new(2, 2, Duration::from_secs(3600));
        let sessions = Sessions::new(book.clone(), CancellationToken::new());
        let (a, _ta) = sessions.create_session().await.expect("first");
        let (_b, _tb) = sessions.create_session().await.expect("second");
        assert!(book.full_for(&None));
        assert!(matches!(
            sessions.create_session().await,
            Err(SessionsError::Full(2))
        ));
        sessions.close_session(&a).await.expect("close");
        // Closing twice (DELETE, then the worker's own end) counts down once.
        sessions.close_session(&a).await.expect("close again");
        assert!(!book.full_for(&None));
        assert_eq!(book.open.load(Ordering::Acquire), 1);
        assert!(sessions.create_session().await.is_ok());
    }

    #[tokio::test]
    async fn only_sessions_without_open_streams_are_idle() {
        let book = SessionBook::new(10, 10, Duration::from_secs(3600));
        let sessions = Sessions::new(book.clone(), CancellationToken::new());
        let (busy, _t1) = sessions.create_session().await.expect("busy");
        let (quiet, _t2) = sessions.create_session().await.expect("quiet");
        let open = sessions.ledger.open_stream(&busy);
        let later = Instant::now() + Duration::from_secs(7200);
        assert_eq!(sessions.ledger.idle(later), vec![quiet.clone()]);
        drop(open);
        let later = Instant::now() + Duration::from_secs(7200);
        let mut idle = sessions.ledger.idle(later);
        idle.sort();
        let mut both = vec![busy, quiet];
        both.sort();
        assert_eq!(idle, both);
    }
}
