//! The 2026-07-28 (stateless) era of an MCP route: every request stands alone, answered on its
//! own POST.
//!
//! Each request gets a peer of its own (an rmcp serve loop over [`RequestTransport`]), so that
//! what its handler sends the client meanwhile (progress, the log messages it opted in to,
//! `subscriptions/listen` notifications) reaches this request's stream and no other: request
//! ids of different clients collide, so nothing shared could tell them apart. A client that
//! goes away cancels the request (its handler sees the cancellation and ends by itself). Notifications are accepted and ignored (cancellation is by
//! disconnecting); a JSON-RPC answer from a client that was asked nothing is refused.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    ClientCapabilities, ClientJsonRpcMessage, ClientRequest, GetMeta, Implementation,
    InitializeRequestParams, JsonRpcMessage,
};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::answer::{self, Framing, Pending};
use crate::decode::rpc_error;
use crate::detached::Detached;
use crate::dispatch::{self, Call};
use crate::route::Surface;
use crate::stateless_transport::{EVENTS_WAITING, RequestTransport};
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
        RequestTransport::new(events_tx),
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
