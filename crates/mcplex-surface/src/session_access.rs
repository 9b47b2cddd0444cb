//! A dashboard session on the management API, once its cookie and CSRF token are proven: an
//! operator's (the API key's, or a person's the operators' claims matched) stands for the API
//! key; a viewer's (a person signed in who is not an operator) reads only what its handlers
//! narrow by the caller's scope, and changes nothing. Either way the request carries a
//! [`SessionActor`] for the audit log.

use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::response::Response;

use crate::Caller;
use crate::access::{Authenticator, refuse};
use crate::cookie_session::session_id;

/// Who acts on the management API through a dashboard session, attached by the guard for the
/// audit log: the person signed in at the issuer, or `None` for a session of the API key. A
/// request with the API key itself carries none.
#[derive(Debug, Clone)]
pub struct SessionActor(pub Option<String>);

/// Lets the request of a proven session on to `path` with its caller and actor (`None`), or
/// answers the refusal of what a viewer may not do.
pub(crate) fn admit(
    auth: &dyn Authenticator,
    request: &mut Request,
    path: &str,
) -> Option<Response> {
    let id = session_id(request.headers());
    let person = id.and_then(|id| auth.session_person(id));
    let caller = match id.and_then(|id| auth.session_viewer(id)) {
        Some(reach) if viewer_may(request.method(), path) => Caller {
            token: None,
            scope: reach,
            credential: None,
        },
        Some(_) => {
            return Some(refuse(
                StatusCode::FORBIDDEN,
                &format!(
                    "read-only: {} is signed in as a viewer, not an operator",
                    person.as_deref().unwrap_or("this person")
                ),
            ));
        }
        None => Caller::local(),
    };
    request.extensions_mut().insert(caller);
    request.extensions_mut().insert(SessionActor(person));
    None
}

/// What a viewer's session may ask: the reads whose answers are narrowed to the caller's scope
/// (servers, tools, what waits for approval, the hour's counts, a tool's review, search). The
/// audit log, tokens, limits, the config and stderr tails are the operators' alone, and so is
/// every change.
fn viewer_may(method: &Method, path: &str) -> bool {
    let reads = matches!(
        path,
        "/api/v1/servers" | "/api/v1/tools" | "/api/v1/approvals" | "/api/v1/stats"
    ) || (path.starts_with("/api/v1/tools/") && path.ends_with("/review"));
    (method == Method::GET && reads) || (method == Method::POST && path == "/api/v1/search")
}
