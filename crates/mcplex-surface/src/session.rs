//! One session-era session: its peer (rmcp's serve loop, which carries the gateway's own
//! requests and notifications to the client, and the client's answers and notifications back),
//! the requests in flight in it and where each one's messages go, its GET stream
//! (`common_stream.rs`), and its idle clock.
//!
//! Requests are not handed to the serve loop: the route answers each in place
//! (`dispatch.rs`) with the session's peer in its context. What the gateway sends the client
//! meanwhile goes through the peer to [`SessionTransport`], which routes it ([`route`]): a
//! progress notification to the answer stream of the request whose progress token it names, a
//! request that names the request it belongs to ([`OriginatingRequestId`]) to that request's
//! stream, everything else to the GET stream.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use bytes::Bytes;

use rmcp::Peer;
use rmcp::model::{
    ClientJsonRpcMessage, GetExtensions, JsonRpcMessage, ProgressToken, RequestId,
    ServerJsonRpcMessage, ServerNotification,
};
use rmcp::service::{OriginatingRequestId, RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::common_stream::{Common, GetStream};
use crate::kept_events::{KeptBudget, KeptEvents};

/// One open session.
pub(crate) struct Session {
    pub id: Arc<str>,
    pub peer: Peer<RoleServer>,
    /// Cancelled when the session ends: every stream of it ends, its serve loop stops.
    pub ended: CancellationToken,
    /// Client notifications and answers, for the serve loop.
    inbound: mpsc::UnboundedSender<ClientJsonRpcMessage>,
    /// Whether its client said it is ready (`notifications/initialized`): once is enough.
    ready: AtomicBool,
    state: Arc<Mutex<State>>,
    /// rmcp's handle of the serve loop: dropping it stops the loop.
    _serve_loop: Box<dyn Send + Sync>,
}

/// What a session's requests and streams share with its transport.
pub(crate) struct State {
    /// Streams open: answers being written, GET streams.
    streams: usize,
    last_used: Instant,
    requests: HashMap<RequestId, InFlight>,
    next_stream: u64,
    common: Common,
    /// The events of the answer streams that went out as streams, for `Last-Event-ID`.
    answers: HashMap<u64, Replay>,
    /// What the session's answer streams keep draws on: its caller's share of the gateway's
    /// budget (the GET stream's cache draws on another, past its own bytes).
    kept: Arc<KeptBudget>,
}

impl State {
    pub(crate) fn new(kept: Arc<KeptBudget>, cached: Arc<KeptBudget>) -> State {
        State {
            streams: 0,
            last_used: Instant::now(),
            requests: HashMap::new(),
            next_stream: 0,
            common: Common::new(cached),
            answers: HashMap::new(),
            kept,
        }
    }
}

/// The events of one answer stream, kept while it is written and [`REPLAY_KEPT`] after.
struct Replay {
    /// Numbered by their index in the stream.
    events: KeptEvents,
    /// Where new events go: the connection that opened the stream, or the one that resumed it.
    live: Option<mpsc::Sender<Bytes>>,
    finished: Option<Instant>,
    /// Whether the last events went to a connection still holding the stream when it finished:
    /// its client has the answer, so the stream is kept only in case that connection broke.
    delivered: bool,
}

/// How long a finished answer stream can still be resumed.
const REPLAY_KEPT: Duration = Duration::from_secs(60);
/// Events, and their bytes, kept per answer stream (a resumption from before the oldest kept
/// misses those before it; an answer larger than this cannot be resumed).
const REPLAY_EVENTS: usize = 256;
const REPLAY_BYTES: usize = 1 << 20;
/// Finished answer streams a session keeps, and their bytes: past either the oldest is
/// forgotten first, so that a client's slow calls cannot pile up what is kept for it.
const FINISHED_KEPT: usize = 16;
const FINISHED_BYTES: usize = 2 << 20;
/// Events that may wait for a resumed answer stream's client.
const RESUMED_QUEUE: usize = 16;
/// Messages for one request's stream not yet taken by its writer: past it they go to the GET
/// stream, as they do once the request is over.
const REQUEST_QUEUE: usize = 256;

struct InFlight {
    cancel: CancellationToken,
    progress: Option<ProgressToken>,
    /// The JSON of each message for the request's stream.
    events: mpsc::Sender<Bytes>,
}

/// Requests a session may have in flight: their handlers running, whether or not their clients
/// still wait (a client that drops its connection leaves its call running). Past it a request is
/// refused until one ends, so a client that sends and hangs up again and again cannot pile up
/// handlers, upstream calls and the answers kept for them.
pub(crate) const MAX_IN_FLIGHT: usize = 64;

/// Why a request was not taken into its session.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum NotBegun {
    /// A request of the same id is in flight.
    SameId,
    /// [`MAX_IN_FLIGHT`] requests are.
    Busy,
}

/// A request taken into its session: its token (cancelled by the client's
/// `notifications/cancelled` or the session's end), the messages routed to its answer stream,
/// the number of that stream, and its place in the session (held by its handler until done: the
/// session is busy meanwhile).
pub(crate) struct Begun {
    pub cancel: CancellationToken,
    pub events: mpsc::Receiver<Bytes>,
    pub stream: u64,
    pub held: Held,
}

/// A request's or a GET stream's place in its session, until dropped: while one is held the
/// session is not idle.
pub(crate) struct Held {
    state: Weak<Mutex<State>>,
    id: Option<RequestId>,
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(state) = self.state.upgrade() {
            let mut state = lock(&state);
            if let Some(id) = &self.id {
                state.requests.remove(id);
            }
            state.streams = state.streams.saturating_sub(1);
            state.last_used = Instant::now();
        }
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Session {
    /// A new session of `id` serving `service`, ending with `ended`, what its answer streams
    /// keep drawing on `kept` and what its GET stream caches (past its own bytes) on `cached`.
    pub(crate) fn start<S>(
        id: Arc<str>,
        service: S,
        ended: CancellationToken,
        kept: Arc<KeptBudget>,
        cached: Arc<KeptBudget>,
    ) -> Session
    where
        S: rmcp::Service<RoleServer>,
    {
        let state = Arc::new(Mutex::new(State::new(kept, cached)));
        let (inbound, received) = mpsc::unbounded_channel();
        let transport = SessionTransport {
            state: Arc::downgrade(&state),
            received,
        };
        let running =
            rmcp::service::serve_directly_with_ct(service, transport, None, ended.child_token());
        let peer = running.peer().clone();
        Session {
            id,
            peer,
            ended,
            inbound,
            ready: AtomicBool::new(false),
            state,
            _serve_loop: Box::new(running),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Takes request `id` into the session, unless a request of that id is in flight (the
    /// answers of two alike would be told apart by nothing) or [`MAX_IN_FLIGHT`] are.
    pub(crate) fn begin(
        &self,
        id: &RequestId,
        progress: Option<ProgressToken>,
    ) -> Result<Begun, NotBegun> {
        let mut state = self.lock();
        if state.requests.contains_key(id) {
            return Err(NotBegun::SameId);
        }
        if state.requests.len() >= MAX_IN_FLIGHT {
            return Err(NotBegun::Busy);
        }
        let cancel = self.ended.child_token();
        let (events_tx, events) = mpsc::channel(REQUEST_QUEUE);
        state.requests.insert(
            id.clone(),
            InFlight {
                cancel: cancel.clone(),
                progress,
                events: events_tx,
            },
        );
        let stream = state.next_stream;
        state.next_stream += 1;
        state.streams += 1;
        state.last_used = Instant::now();
        Ok(Begun {
            cancel,
            events,
            stream,
            held: Held {
                state: Arc::downgrade(&self.state),
                id: Some(id.clone()),
            },
        })
    }

    /// True the first time the client says it is ready, false after.
    pub(crate) fn first_ready(&self) -> bool {
        !self.ready.swap(true, Ordering::AcqRel)
    }

    /// The client cancelled request `id`: its handler's token is cancelled.
    pub(crate) fn cancel(&self, id: &RequestId) {
        if let Some(request) = self.lock().requests.get(id) {
            request.cancel.cancel();
        }
    }

    /// Hands a client notification or answer to the serve loop.
    pub(crate) fn forward(&self, message: ClientJsonRpcMessage) {
        self.lock().last_used = Instant::now();
        let _ = self.inbound.send(message);
    }

    /// Opens a GET stream (resumed after event `last_event_id`, when given).
    pub(crate) fn open_get(&self, last_event_id: Option<u64>) -> (GetStream, Held) {
        let mut state = self.lock();
        let stream = state.common.open(last_event_id, &self.ended);
        state.streams += 1;
        state.last_used = Instant::now();
        drop(state);
        let held = Held {
            state: Arc::downgrade(&self.state),
            id: None,
        };
        (stream, held)
    }

    /// Keeps answer stream `stream`'s events, `first` already sent to `live` (the connection
    /// that asked), so that a client whose connection broke can resume it.
    pub(crate) fn answer_log(
        &self,
        stream: u64,
        first: &[Bytes],
        live: mpsc::Sender<Bytes>,
    ) -> AnswerLog {
        let mut state = self.lock();
        state.forget_finished_answers(Instant::now());
        let mut events = KeptEvents::new(0, REPLAY_EVENTS, REPLAY_BYTES, Some(state.kept.clone()));
        for event in first {
            events.push(event.clone());
        }
        let replay = Replay {
            events,
            live: Some(live),
            finished: None,
            delivered: false,
        };
        state.answers.insert(stream, replay);
        AnswerLog {
            state: Arc::downgrade(&self.state),
            stream,
        }
    }

    /// Answer stream `stream` resumed after its event `after`: the events since, and (while
    /// the answer is being written) what follows. `None` for a stream not kept.
    pub(crate) fn resume_answer(
        &self,
        stream: u64,
        after: u64,
    ) -> Option<(Vec<Bytes>, Option<mpsc::Receiver<Bytes>>)> {
        let mut state = self.lock();
        state.forget_finished_answers(Instant::now());
        let replay = state.answers.get_mut(&stream)?;
        let events = replay.events.after(after).cloned().collect();
        if replay.finished.is_some() {
            return Some((events, None));
        }
        let (live, source) = mpsc::channel(RESUMED_QUEUE);
        replay.live = Some(live);
        Some((events, Some(source)))
    }

    /// Since when the session has been idle (no stream open), if it is. Asked on every tick of
    /// the idle clock, which is also when finished answer streams past their time are
    /// forgotten.
    pub(crate) fn idle_since(&self, now: Instant) -> Option<Instant> {
        let mut state = self.lock();
        state.forget_finished_answers(now);
        (state.streams == 0).then_some(state.last_used)
    }
}

impl State {
    /// Forgets the finished answer streams older than [`REPLAY_KEPT`], then, while more than
    /// [`FINISHED_KEPT`] or [`FINISHED_BYTES`] are kept, those a connection took to the end
    /// before those whose client may still come back for them, the oldest first. Streams
    /// still being written are left alone: each has its handler, and is capped by itself.
    fn forget_finished_answers(&mut self, now: Instant) {
        self.answers.retain(|_, replay| {
            replay
                .finished
                .is_none_or(|at| now.duration_since(at) < REPLAY_KEPT)
        });
        let mut finished: Vec<(bool, Instant, u64, usize)> = self
            .answers
            .iter()
            .filter_map(|(stream, replay)| {
                let at = replay.finished?;
                Some((!replay.delivered, at, *stream, replay.events.bytes()))
            })
            .collect();
        let mut bytes: usize = finished.iter().map(|(.., bytes)| bytes).sum();
        if finished.len() <= FINISHED_KEPT && bytes <= FINISHED_BYTES {
            return;
        }
        finished.sort_unstable();
        let mut count = finished.len();
        for (_, _, stream, kept) in finished {
            if count <= FINISHED_KEPT && bytes <= FINISHED_BYTES {
                break;
            }
            self.answers.remove(&stream);
            count -= 1;
            bytes -= kept;
        }
    }
}

/// The writer's end of an answer stream that can be resumed: each event is kept, then sent to
/// the connection that holds the stream now (if any). Dropping it finishes the stream.
pub(crate) struct AnswerLog {
    state: Weak<Mutex<State>>,
    stream: u64,
}

impl AnswerLog {
    /// Keeps `event`; returns the connection that holds the stream now, for the writer to send
    /// it to (`None`: no connection reads it, the client resumes from what is kept).
    pub(crate) fn keep(&self, event: &Bytes) -> Option<mpsc::Sender<Bytes>> {
        let state = self.state.upgrade()?;
        let mut state = lock(&state);
        let replay = state.answers.get_mut(&self.stream)?;
        replay.events.push(event.clone());
        replay.live.clone()
    }

    /// Lets `connection` go (it closed, or its client read nothing for too long), unless the
    /// client has resumed the stream on another one meanwhile.
    pub(crate) fn let_go(&self, connection: &mpsc::Sender<Bytes>) {
        if let Some(state) = self.state.upgrade()
            && let Some(replay) = lock(&state).answers.get_mut(&self.stream)
            && replay
                .live
                .as_ref()
                .is_some_and(|live| live.same_channel(connection))
        {
            replay.live = None;
        }
    }
}

impl Drop for AnswerLog {
    fn drop(&mut self) {
        if let Some(state) = self.state.upgrade() {
            let mut state = lock(&state);
            let now = Instant::now();
            if let Some(replay) = state.answers.get_mut(&self.stream) {
                replay.finished = Some(now);
                replay.delivered = replay.live.take().is_some_and(|live| !live.is_closed());
            }
            state.forget_finished_answers(now);
        }
    }
}

/// rmcp's end of a session: what the serve loop sends goes where [`route`] says; what it
/// receives is what the route forwards.
struct SessionTransport {
    state: Weak<Mutex<State>>,
    received: mpsc::UnboundedReceiver<ClientJsonRpcMessage>,
}

impl Transport<RoleServer> for SessionTransport {
    type Error = Infallible;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Infallible>> + Send + 'static {
        if let Some(state) = self.state.upgrade() {
            route(&mut lock(&state), item);
        }
        std::future::ready(Ok(()))
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        self.received.recv()
    }

    async fn close(&mut self) -> Result<(), Infallible> {
        self.received.close();
        Ok(())
    }
}

/// Where a message the gateway sends a session's client goes: the answer stream of the request
/// it belongs to while that request is in flight and its writer keeps up (see
/// [`REQUEST_QUEUE`]), else the GET stream.
fn route(state: &mut State, message: ServerJsonRpcMessage) {
    let owner = match &message {
        JsonRpcMessage::Notification(notification) => match &notification.notification {
            ServerNotification::ProgressNotification(progress) => {
                let token = &progress.params.progress_token;
                state
                    .requests
                    .values()
                    .find(|r| r.progress.as_ref() == Some(token))
            }
            _ => None,
        },
        JsonRpcMessage::Request(request) => request
            .request
            .extensions()
            .get::<OriginatingRequestId>()
            .and_then(|origin| state.requests.get(&origin.0)),
        // Requests are answered in place, never by the serve loop: nothing to route.
        JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => return,
    };
    let Some(json) = crate::sse::json(&message) else {
        return;
    };
    let json = match owner {
        Some(request) => match request.events.try_send(json) {
            Ok(()) => return,
            Err(
                mpsc::error::TrySendError::Full(json) | mpsc::error::TrySendError::Closed(json),
            ) => json,
        },
        None => json,
    };
    state.common.send(&json);
}

#[cfg(test)]
#[path = "session_tests.rs"]
pub(crate) mod tests;
