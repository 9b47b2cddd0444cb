//! Session-era sessions of the MCP routes. [`SessionBook`] is shared by every MCP route of the
//! gateway: it counts the open sessions (the `mcplex_sessions` gauge), refuses a new one past
//! `max_sessions`, and knows who opened each. Each route's [`Sessions`] holds its own sessions
//! (`session.rs`) by id; a session with no stream open for `session_idle_timeout` is ended (a
//! long call or an open GET stream is not idle). A deleted or ended session is removed from both
//! at once, so its memory goes with it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::service::RoleServer;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::kept_events::KeptBudget;
use crate::session::Session;
use crate::session_owners::{Owner, Owners, Reservation};

/// The bytes all sessions' answer streams together keep for `Last-Event-ID`: each session's own
/// caps (2 MiB kept after its answers, 1 MiB for each of up to 64 answers being written) would
/// otherwise add up with `max_sessions`. A stream past it is still delivered, but cannot be
/// resumed until some is let go.
const KEPT_BYTES: usize = 256 << 20;
/// The bytes all sessions' GET stream caches keep together past each one's first 64 KiB (its
/// own, how messages reach a client with no GET stream open: 62.5 MiB more at the default 1,000
/// sessions). A budget apart from the answer streams': a GET stream keeps its cache for as long
/// as it is open, and what it keeps must not take what answer streams keep for resumption.
const CACHED_KEPT_BYTES: usize = 32 << 20;
/// The least share of [`KEPT_BYTES`] one credential's sessions keep within: what one session
/// may keep after its answers, and a few answers being written.
const KEPT_PER_CALLER_AT_LEAST: usize = 16 << 20;

/// One credential's share of [`KEPT_BYTES`]: in proportion to the sessions it may hold
/// (25.6 MiB for 100 of 1,000, the defaults), at least [`KEPT_PER_CALLER_AT_LEAST`].
fn kept_per_caller(max_sessions: usize, max_per_caller: usize) -> usize {
    let proportional = KEPT_BYTES as u128 * max_per_caller as u128 / max_sessions.max(1) as u128;
    usize::try_from(proportional)
        .unwrap_or(usize::MAX)
        .clamp(KEPT_PER_CALLER_AT_LEAST, KEPT_BYTES)
}

/// The gateway-wide count of open sessions and its cap, and who opened each (and so what
/// their answer streams keep draws on).
pub(crate) struct SessionBook {
    max: usize,
    idle: Duration,
    open: AtomicUsize,
    pub(crate) owners: Owners,
    /// What the GET stream caches of every session keep past their own bytes.
    cached: Arc<KeptBudget>,
    /// Which openers are still in force (`None`: all are, in this crate's tests).
    auth: Option<Arc<dyn crate::Authenticator>>,
}

impl SessionBook {
    pub(crate) fn new(
        max: usize,
        max_per_caller: usize,
        idle: Duration,
        auth: Option<Arc<dyn crate::Authenticator>>,
    ) -> Arc<SessionBook> {
        Arc::new(SessionBook {
            max,
            idle,
            open: AtomicUsize::new(0),
            owners: Owners::new(
                max_per_caller,
                KeptBudget::new(KEPT_BYTES),
                kept_per_caller(max, max_per_caller),
            ),
            cached: KeptBudget::new(CACHED_KEPT_BYTES),
            auth,
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

/// One route's sessions.
pub(crate) struct Sessions {
    book: Arc<SessionBook>,
    open: Mutex<HashMap<Arc<str>, Arc<Session>>>,
    /// Ends every session at shutdown.
    shutdown: CancellationToken,
}

impl Sessions {
    /// A route's sessions counting into `book`; its idle sessions are ended by a task that
    /// lives as long as it does.
    pub(crate) fn new(book: Arc<SessionBook>, shutdown: CancellationToken) -> Arc<Sessions> {
        let idle = book.idle;
        let sessions = Arc::new(Sessions {
            book,
            open: Mutex::default(),
            shutdown,
        });
        let weak = Arc::downgrade(&sessions);
        // At most a second: a revoked token's sessions end with their streams within it.
        let period = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(period).await;
                let Some(sessions) = weak.upgrade() else {
                    return;
                };
                for id in sessions.idle(Instant::now()) {
                    tracing::debug!("ending session {id}: idle for {idle:?}");
                    sessions.close(&id);
                }
                for id in sessions.out_of_force() {
                    tracing::info!("ending session {id}: its token was revoked or expired");
                    sessions.close(&id);
                }
            }
        });
        sessions
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, Arc<Session>>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Open session `id`.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<Session>> {
        self.lock().get(id).cloned()
    }

    /// Opens a session serving `service` on the place its opener reserved: its answer streams
    /// draw on that place's share of what is kept, and the place is claimed by the session.
    /// `None` past `max_sessions` (the place is given back).
    pub(crate) fn start<S: rmcp::Service<RoleServer>>(
        &self,
        service: S,
        place: Reservation<'_>,
    ) -> Option<Arc<Session>> {
        if !self.book.reserve() {
            return None;
        }
        let id: Arc<str> = new_session_id().into();
        let session = Arc::new(Session::start(
            id.clone(),
            service,
            self.shutdown.child_token(),
            place.kept(),
            self.book.cached.clone(),
        ));
        place.claim(&id);
        self.lock().insert(id, session.clone());
        Some(session)
    }

    /// Ends session `id`; false when it was not open.
    pub(crate) fn close(&self, id: &str) -> bool {
        let Some(session) = self.lock().remove(id) else {
            return false;
        };
        session.ended.cancel();
        self.book.release();
        self.book.owners.ended(id);
        true
    }

    /// This route's sessions whose opener is no longer in force (a revoked or expired token):
    /// its requests are refused already, and its streams end with the session.
    fn out_of_force(&self) -> Vec<String> {
        let Some(auth) = &self.book.auth else {
            return Vec::new();
        };
        let open = self.lock();
        // Each opener asked once, however many sessions it holds.
        let mut in_force: HashMap<Arc<str>, bool> = HashMap::new();
        self.book
            .owners
            .opened()
            .into_iter()
            .filter(|(session, _)| open.contains_key(session.as_str()))
            .filter(|(_, owner)| {
                !*in_force
                    .entry(owner.clone())
                    .or_insert_with(|| auth.in_force(owner))
            })
            .map(|(session, _)| session)
            .collect()
    }

    /// Sessions with no stream open and unused for the idle timeout.
    fn idle(&self, now: Instant) -> Vec<Arc<str>> {
        let idle = self.book.idle;
        self.lock()
            .iter()
            .filter(|(_, session)| {
                session
                    .idle_since(now)
                    .is_some_and(|since| now.duration_since(since) >= idle)
            })
            .map(|(id, _)| id.clone())
            .collect()
    }
}

/// A session id no one can guess: 128 random bits, in hex.
fn new_session_id() -> String {
    let mut bytes = [0u8; 16];
    if let Err(e) = getrandom::fill(&mut bytes) {
        // Without the system's randomness nothing the gateway does is safe.
        tracing::error!("cannot draw a session id: {e}");
        std::process::abort();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone)]
    struct Nothing;
    impl rmcp::ServerHandler for Nothing {}

    fn open(sessions: &Sessions) -> Option<Arc<Session>> {
        let place = sessions
            .book
            .owners
            .reserve(&None)
            .expect("the operator has no quota");
        sessions.start(Nothing, place)
    }

    #[tokio::test]
    async fn the_cap_refuses_and_closing_frees_a_place() {
        let book = SessionBook::new(2, 2, Duration::from_secs(3600), None);
        let sessions = Sessions::new(book.clone(), CancellationToken::new());
        let a = open(&sessions).expect("first");
        let _b = open(&sessions).expect("second");
        assert!(book.full_for(&None));
        assert!(open(&sessions).is_none());
        assert!(sessions.close(&a.id));
        // Closing twice (DELETE, then the idle task) counts down once.
        assert!(!sessions.close(&a.id));
        assert!(a.ended.is_cancelled());
        assert!(!book.full_for(&None));
        assert_eq!(book.open.load(Ordering::Acquire), 1);
        assert!(open(&sessions).is_some());
    }

    #[tokio::test]
    async fn only_sessions_without_open_streams_are_idle() {
        let book = SessionBook::new(10, 10, Duration::from_secs(3600), None);
        let sessions = Sessions::new(book.clone(), CancellationToken::new());
        let busy = open(&sessions).expect("busy");
        let quiet = open(&sessions).expect("quiet");
        let call = busy
            .begin(&rmcp::model::RequestId::Number(1), None)
            .expect("begun");
        let later = Instant::now() + Duration::from_secs(7200);
        assert_eq!(sessions.idle(later), vec![quiet.id.clone()]);
        drop(call);
        let later = Instant::now() + Duration::from_secs(7200);
        let mut idle = sessions.idle(later);
        idle.sort();
        let mut both = vec![busy.id.clone(), quiet.id.clone()];
        both.sort();
        assert_eq!(idle, both);
        assert_ne!(busy.id, quiet.id);
        assert_eq!(busy.id.len(), 32);
    }

    #[test]
    fn a_callers_share_of_what_is_kept_follows_the_sessions_it_may_hold() {
        assert_eq!(kept_per_caller(1000, 100), KEPT_BYTES / 10, "the defaults");
        assert_eq!(
            kept_per_caller(1000, 5000),
            KEPT_BYTES,
            "never more than the whole"
        );
        assert_eq!(kept_per_caller(1000, 1), KEPT_PER_CALLER_AT_LEAST);
        assert_eq!(kept_per_caller(0, 1), KEPT_BYTES);
    }
}
