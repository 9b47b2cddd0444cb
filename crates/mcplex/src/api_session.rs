//! A dashboard session on the management API (`/api/…`): the session cookie, its CSRF rules,
//! and what the session may do. A browser that logged in to `/ui` holds an HttpOnly
//! `mcplex_ui` cookie with a random session id (never the API key); [`crate::ui::Sessions`]
//! keeps the sessions. A request with no `Authorization` header and a live session stands for
//! the admin key only with an `X-CSRF-Token` header equal to the session's token, on every
//! method (reads too), and on every state-changing method (anything but GET, HEAD, OPTIONS) an
//! `Origin` header (which the edge has already checked against the listener's Host/Origin
//! rules). Browsers send a host's cookies to every port of it, so the cookie alone is no
//! credential: the token lives only in the page (its origin's storage), which another port
//! cannot read, and no route gives it for the cookie alone.
//!
//! Once the cookie and the token are proven, an operator's session (the API key's, or a
//! person's the operators' claims matched) stands for the API key; a viewer's (a person signed
//! in who is not an operator) reads only what its handlers narrow by the caller's scope, and
//! changes nothing. Either way the request carries a [`SessionActor`] for the audit log.

use axum::extract::Request;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::Response;
use mcplex_api::paths;
use mcplex_surface::{Caller, cookie, refuse, same_secret};

use crate::auth::Access;
use crate::operator_audit::Actions;

/// What the request's session cookie makes of it on `path`: `None` when it carries no live
/// session (it is judged by its credentials); else `Some`, with its caller and actor attached
/// (`Ok`) or the refusal (`Err`). A viewer's refusal is written to `actions`.
pub fn admit(
    access: &Access,
    request: &mut Request,
    path: &str,
    actions: Option<&Actions>,
) -> Option<Result<(), Response>> {
    let proven = cookie_access(request.method(), request.headers(), |id| {
        access.session_csrf(id)
    });
    match proven {
        CookieAccess::None => None,
        CookieAccess::Refused(why) => Some(Err(refuse(StatusCode::FORBIDDEN, why))),
        CookieAccess::Admin => Some(match admit_session(access, request, path, actions) {
            Some(refusal) => Err(refusal),
            None => Ok(()),
        }),
    }
}

/// The cookie's name.
pub const SESSION_COOKIE: &str = "mcplex_ui";
/// The header that carries the session's CSRF token.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// What a request's session cookie allows.
#[derive(Debug, Clone, PartialEq, Eq)]
enum CookieAccess {
    /// No cookie, or a session that is unknown or expired: the request is judged without it.
    None,
    /// A live session and, for a state-changing method, the right token and an Origin.
    Admin,
    /// A live session, but a state-changing request without its token or without an Origin.
    Refused(&'static str),
}

/// Judges the request's session cookie; `csrf_of` gives a live session's CSRF token.
fn cookie_access(
    method: &Method,
    headers: &HeaderMap,
    csrf_of: impl Fn(&str) -> Option<String>,
) -> CookieAccess {
    let Some(id) = session_id(headers) else {
        return CookieAccess::None;
    };
    let Some(csrf) = csrf_of(id) else {
        return CookieAccess::None;
    };
    let sent = headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok());
    if !sent.is_some_and(|sent| same_secret(sent, &csrf)) {
        return CookieAccess::Refused(
            "CSRF token missing or wrong: a request with the dashboard's cookie needs the session's X-CSRF-Token header",
        );
    }
    if is_safe(method) {
        return CookieAccess::Admin;
    }
    if !headers.contains_key(header::ORIGIN) {
        return CookieAccess::Refused(
            "a state-changing request with the dashboard's cookie needs an Origin header",
        );
    }
    CookieAccess::Admin
}

fn is_safe(method: &Method) -> bool {
    matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// The value of the first `mcplex_ui` cookie in the `Cookie` headers.
pub fn session_id(headers: &HeaderMap) -> Option<&str> {
    cookie(headers, SESSION_COOKIE)
}

/// Who acts on the management API through a dashboard session, attached by the `/api` guard for the
/// audit log: the person signed in at the issuer, or `None` for a session of the API key. A
/// request with the API key itself carries none.
#[derive(Debug, Clone)]
pub struct SessionActor(pub Option<String>);

/// Marks a request of a viewer's session: an operator's answers (who connected their own
/// account) are left out of its reads even where its reach is every server.
#[derive(Debug, Clone, Copy)]
pub struct Viewer;

/// Lets the request of a proven session on to `path` with its caller and actor (`None`), or
/// answers the refusal of what a viewer may not do (and writes it to `actions`).
fn admit_session(
    access: &Access,
    request: &mut Request,
    path: &str,
    actions: Option<&Actions>,
) -> Option<Response> {
    let id = session_id(request.headers());
    let person = id.and_then(|id| access.session_person(id));
    let viewer = id.and_then(|id| access.session_viewer(id));
    let is_viewer = viewer.is_some();
    let caller = match viewer {
        Some(reach) if viewer_may(request.method(), path) => Caller {
            token: None,
            scope: reach,
            credential: None,
        },
        Some(_) => {
            if let Some(actions) = actions {
                let who = person.as_deref().unwrap_or("unknown");
                actions.refused(who, request.method(), path);
            }
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
    if is_viewer {
        request.extensions_mut().insert(Viewer);
    }
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
        paths::SERVERS | paths::TOOLS | paths::APPROVALS | paths::STATS
    ) || (path.starts_with("/api/v1/tools/") && path.ends_with("/review"));
    (method == Method::GET && reads) || (method == Method::POST && path == paths::SEARCH)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            if let Ok(value) = HeaderValue::from_str(value) {
                map.append(*name, value);
            }
        }
        map
    }

    fn live(id: &str) -> Option<String> {
        (id == "sid").then(|| "token".to_owned())
    }

    #[test]
    fn the_session_id_is_read_from_any_cookie_header() {
        let with = |cookie: &str| {
            let map = headers(&[("cookie", cookie)]);
            session_id(&map).map(str::to_owned)
        };
        assert_eq!(with("a=1; mcplex_ui=sid; b=2"), Some("sid".to_owned()));
        assert_eq!(with("mcplex_ui_other=x"), None);
        assert_eq!(with("mcplex_ui="), None);
        let two = headers(&[("cookie", "a=1"), ("cookie", "mcplex_ui=sid")]);
        assert_eq!(session_id(&two), Some("sid"));
    }

    #[test]
    fn reads_need_a_live_session_and_writes_its_token_and_an_origin() {
        let cookie = ("cookie", "mcplex_ui=sid");
        let origin = ("origin", "http://127.0.0.1:1");
        let judge = |method: Method, pairs: &[(&'static str, &str)]| {
            cookie_access(&method, &headers(pairs), live)
        };
        assert!(
            matches!(judge(Method::GET, &[cookie]), CookieAccess::Refused(_)),
            "the cookie alone reads nothing"
        );
        assert_eq!(
            judge(Method::GET, &[cookie, ("x-csrf-token", "token")]),
            CookieAccess::Admin
        );
        assert_eq!(judge(Method::GET, &[]), CookieAccess::None);
        assert_eq!(
            judge(Method::GET, &[("cookie", "mcplex_ui=expired")]),
            CookieAccess::None
        );
        let token = ("x-csrf-token", "token");
        assert_eq!(
            judge(Method::POST, &[cookie, origin, token]),
            CookieAccess::Admin
        );
        assert_eq!(
            judge(Method::DELETE, &[cookie, origin, token]),
            CookieAccess::Admin
        );
        for refused in [
            vec![cookie, origin],
            vec![cookie, token],
            vec![cookie, origin, ("x-csrf-token", "tokem")],
            vec![cookie, origin, ("x-csrf-token", "")],
        ] {
            assert!(
                matches!(judge(Method::POST, &refused), CookieAccess::Refused(_)),
                "{refused:?}"
            );
        }
    }
}
