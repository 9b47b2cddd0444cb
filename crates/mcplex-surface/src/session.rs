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
}

struct InFlight {
    cancel: CancellationToken,
    progress: Option<ProgressToken>,
    /// The JSON of each message for the request's stream.
    events: mpsc::UnboundedSender<Bytes>,
}

/// A request taken into its session: its token (cancelled by the client's
/// `notifications/cancelled` or the session's end), the messages routed to its answer stream,
/// the number of that stream, and its place in the session (held by its handler until done: the
/// session is busy meanwhile).
pub(crate) struct Begun {
    pub cancel: CancellationToken,
    pub events: mpsc::UnboundedReceiver<Bytes>,
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
    /// A new session of `id` serving `service`, ending with `ended`.
    pub(crate) fn start<S>(id: Arc<str>, service: S, ended: CancellationToken) -> Session
    where
        S: rmcp::Service<RoleServer>,
    {
        let state = Arc::new(Mutex::new(State {
            streams: 0,
            last_used: Instant::now(),
            requests: HashMap::new(),
            next_stream: 0,
            common: Common::default(),
        }));
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

    /// Takes request `id` into the session; `None` when a request of that id is in flight (the
    /// answers of two alike would be told apart by nothing).
    pub(crate) fn begin(&self, id: &RequestId, progress: Option<ProgressToken>) -> Option<Begun> {
        let mut state = self.lock();
        if state.requests.contains_key(id) {
            return None;
        }
        let cancel = self.ended.child_token();
        let (events_tx, events) = mpsc::unbounded_channel();
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
        Some(Begun {
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

    /// Opens a GET stream: the session's stream (resumed after `last_event_id`, when given), or
    /// an idle one while another GET holds it.
    pub(crate) fn open_get(&self, last_event_id: Option<&str>) -> Option<(GetStream, Held)> {
        let mut state = self.lock();
        let stream = state.common.open(last_event_id, &self.ended)?;
        state.streams += 1;
        state.last_used = Instant::now();
        drop(state);
        let held = Held {
            state: Arc::downgrade(&self.state),
            id: None,
        };
        Some((stream, held))
    }

    /// Since when the session has been idle (no stream open), if it is.
    pub(crate) fn idle_since(&self) -> Option<Instant> {
        let state = self.lock();
        (state.streams == 0).then_some(state.last_used)
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
/// it belongs to while that request is in flight, else the GET stream.
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
        Some(request) => match request.events.send(json) {
            Ok(()) => return,
            Err(unsent) => unsent.0,
        },
        None => json,
    };
    state.common.send(&json);
}

#[cfg(test)]
#[allow(deprecated)] // logging: the commonest message that belongs to no request
mod tests {
    use super::*;
    use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam};

    fn empty_state() -> State {
        State {
            streams: 0,
            last_used: Instant::now(),
            requests: HashMap::new(),
            next_stream: 0,
            common: Common::default(),
        }
    }

    #[tokio::test]
    async fn progress_goes_to_its_request_and_the_rest_to_the_get_stream() {
        let mut state = empty_state();
        let (events, mut received) = mpsc::unbounded_channel();
        let token = ProgressToken(RequestId::Number(9));
        state.requests.insert(
            RequestId::Number(1),
            InFlight {
                cancel: CancellationToken::new(),
                progress: Some(token.clone()),
                events,
            },
        );
        let progress =
            ServerJsonRpcMessage::notification(ServerNotification::ProgressNotification(
                rmcp::model::Notification::new(ProgressNotificationParam::new(token, 0.5)),
            ));
        route(&mut state, progress);
        assert!(received.try_recv().is_ok(), "progress reached its request");
        let log = ServerJsonRpcMessage::notification(
            ServerNotification::LoggingMessageNotification(rmcp::model::Notification::new(
                LoggingMessageNotificationParam::new(LoggingLevel::Info, serde_json::json!("x")),
            )),
        );
        route(&mut state, log);
        assert!(received.try_recv().is_err(), "a log is not the request's");
        assert_eq!(state.common.cached(), 1, "the log waits for the GET stream");
    }
}
