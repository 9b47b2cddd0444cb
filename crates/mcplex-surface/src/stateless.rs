//! The 2026-07-28 (stateless) era of an MCP route: every request stands alone, answered on its
//! own POST.
//!
//! Each request gets a peer of its own (an rmcp serve loop over [`RequestTransport`]), so that
//! what its handler sends the client meanwhile (progress, the log messages it opted in to,
//! `subscriptions/listen` notifications) reaches this request's stream and no other: request
//! ids of different clients collide, so nothing shared could tell them apart. A client that
//! goes away cancels the request (its handler sees the cancellation and ends by itself). Notifications are accepted and ignored (cancellation is by
//! disconnecting); a JSON-RPC answer from a client that was asked nothing is refused.

use std::convert::Infallible;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use rmcp::model::{
    ClientCapabilities, ClientJsonRpcMessage, ClientRequest, GetMeta, Implementation,
    InitializeRequestParams, JsonRpcMessage,
};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::answer::{self, Framing, Pending};
use crate::decode::rpc_error;
use crate::detached::Detached;
use crate::dispatch::{self, Call};
use crate::route::Surface;
use crate::wire::{self, Classified};

/// Answers one stateless message.
pub(crate) async fn post<S: Surface>(
    surface: &S,
    parts: http::request::Parts,
    message: ClientJsonRpcMessage,
    classified: Classified,
    shutdown: &CancellationToken,
) -> Response {
    let request = match message {
        JsonRpcMessage::Request(request) => request,
        JsonRpcMessage::Notification(_) => return StatusCode::ACCEPTED.into_response(),
        JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => {
            let message = "Invalid request: a stateless server asked nothing to answer";
            return rpc_error(StatusCode::BAD_REQUEST, Value::Null, -32600, message);
        }
    };
    let version = match &request.request {
        ClientRequest::InitializeRequest(init) => init.params.protocol_version.clone(),
        _ => classified.version.unwrap_or_default(),
    };
    let client =
        InitializeRequestParams::new(ClientCapabilities::default(), Implementation::default())
            .with_protocol_version(version);
    let meta_malformed = !request
        .request
        .get_meta()
        .missing_required_keys(&wire::stateless_version())
        .is_empty();
    let (events_tx, events) = mpsc::channel(EVENTS_WAITING);
    let running = rmcp::service::serve_directly(
        surface.clone(),
        RequestTransport { events: events_tx },
        Some(client),
    );
    let cancel = CancellationToken::new();
    let call = Call {
        id: request.id,
        request: request.request,
        parts,
        peer: running.peer().clone(),
        cancel: cancel.clone(),
        held: None,
    };
    let ended = shutdown.child_token();
    answer::respond(Pending {
        // Dropped when its client goes away: the guard below cancels it, and it runs on to
        // the end by itself, so what it holds upstream is let go (a listen's subscriptions).
        reply: Box::pin(Detached::new(dispatch::run(surface.clone(), call))),
        events,
        // Nothing else stops a stateless answer: its client going away drops it.
        stop: ended.clone(),
        ended,
        framing: Framing::Stateless { meta_malformed },
        guard: Box::new((running, cancel.drop_guard())),
    })
    .await
}

/// Messages of one request not yet taken by its writer: past it the request's serve loop waits
/// (and with it the handler's sends), until the writer takes one or the stream ends.
const EVENTS_WAITING: usize = 64;

/// rmcp's end of one stateless request: what its serve loop sends goes to the request's
/// stream; nothing is ever received.
struct RequestTransport {
    /// The JSON of each message for the request's stream.
    events: mpsc::Sender<Bytes>,
}

impl Transport<RoleServer> for RequestTransport {
    type Error = Infallible;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Infallible>> + Send + 'static {
        let json = match item {
            JsonRpcMessage::Notification(_) | JsonRpcMessage::Request(_) => crate::sse::json(&item),
            JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => None,
        };
        // Queued here when there is room, so that messages keep the order they were sent in
        // (rmcp runs each send as a task of its own); a full queue is waited on in that task,
        // which holds its sender back (a burst past the queue may then arrive out of order).
        let waiting = match json.map(|json| self.events.try_send(json)) {
            Some(Err(mpsc::error::TrySendError::Full(json))) => Some((self.events.clone(), json)),
            // Closed: the stream has ended, and with it the request.
            _ => None,
        };
        async move {
            if let Some((events, json)) = waiting {
                let _ = events.send(json).await;
            }
            Ok(())
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        std::future::pending()
    }

    async fn close(&mut self) -> Result<(), Infallible> {
        Ok(())
    }
}
