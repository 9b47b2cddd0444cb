//! Running one request in place: its handler (the surface's `Service::handle_request`, the same
//! code stdio runs) gets the context an rmcp serve loop would give it (the request's `_meta` and
//! extensions, the HTTP request's parts, a token, the client's peer), and its result becomes
//! the [`Reply`]. The token is cancelled once the handler is done or dropped, so what it
//! started for the request stops with it.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rmcp::Peer;
use rmcp::model::{
    ClientRequest, GetExtensions, GetMeta, RequestId, ServerJsonRpcMessage, ServerResult,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use crate::answer::Reply;
use crate::session::Held;

/// A request to run.
pub(crate) struct Call {
    pub id: RequestId,
    pub request: ClientRequest,
    pub parts: http::request::Parts,
    pub peer: Peer<RoleServer>,
    /// Cancelling it cancels the handler's token.
    pub cancel: CancellationToken,
    /// The request's place in its session, held until the handler is done (`None`: stateless).
    pub held: Option<Held>,
}

/// Runs `call` with `surface`'s handler.
pub(crate) async fn run<S: rmcp::Service<RoleServer>>(surface: S, call: Call) -> Reply {
    let Call {
        id,
        mut request,
        parts,
        peer,
        cancel,
        held,
    } = call;
    let _held = held;
    let ct = cancel.child_token();
    let _done = ct.clone().drop_guard();
    let mut context = RequestContext::new(id.clone(), peer);
    context.ct = ct;
    context.meta = std::mem::take(request.get_meta_mut());
    context.extensions = std::mem::take(request.extensions_mut());
    context.extensions.insert(parts);
    let untouched = Untouched::default();
    context.extensions.insert(untouched.clone());
    // Boxed: the handler's future is the largest of the request's (every surface method's
    // state), and this one is moved as the answer is set up; a box moves a pointer.
    let handled = Box::pin(surface.handle_request(request, context));
    match handled.await {
        Ok(ServerResult::CallToolResult(_)) if let Some(result) = untouched.take() => {
            Reply::AsWritten { id, result }
        }
        Ok(result) => Reply::Message(Box::new(ServerJsonRpcMessage::response(result, id))),
        Err(error) => Reply::Message(Box::new(ServerJsonRpcMessage::error(error, Some(id)))),
    }
}

/// Where the surface leaves a call's result as the upstream wrote it, when the caller's era takes
/// it as it is (`calls::CallAnswer::respond`): the answer then carries the upstream's bytes,
/// neither read again nor written again; the typed result rmcp's handler returned beside it is
/// a stand-in.
#[derive(Clone, Default)]
pub(crate) struct Untouched(Arc<Mutex<Option<Box<RawValue>>>>);

impl Untouched {
    pub(crate) fn offer(&self, result: Box<RawValue>) {
        *self.lock() = Some(result);
    }

    fn take(&self) -> Option<Box<RawValue>> {
        self.lock().take()
    }

    fn lock(&self) -> MutexGuard<'_, Option<Box<RawValue>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
