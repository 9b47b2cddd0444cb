//! The dashboard's session cookie, as the guard reads it. A browser that logged in to `/ui`
//! holds an HttpOnly `mcplex_ui` cookie with a random session id (never the API key); the
//! binary keeps the sessions and answers [`crate::Authenticator::session_csrf`]. On `/api/…`,
//! a request with no `Authorization` header and a live session stands for the admin key only
//! with an `X-CSRF-Token` header equal to the session's token, on every method (reads too),
//! and on every state-changing method (anything but GET, HEAD, OPTIONS) an `Origin` header
//! (which the guard has already checked against the listener's Host/Origin rules). Browsers
//! send a host's cookies to every port of it, so the cookie alone is no credential: the token
//! lives only in the page (its origin's storage), which another port cannot read, and no route
//! gives it for the cookie alone.

use axum::http::{HeaderMap, Method, header};

/// The cookie's name.
pub const SESSION_COOKIE: &str = "mcplex_ui";
/// The header that carries the session's CSRF token.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// What a request's session cookie allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CookieAccess {
    /// No cookie, or a session that is unknown or expired: the request is judged without it.
    None,
    /// A live session and, for a state-changing method, the right token and an Origin.
    Admin,
    /// A live session, but a state-changing request without its token or without an Origin.
    Refused(&'static str),
}

/// Judges the request's session cookie; `csrf_of` gives a live session's CSRF token.
pub(crate) fn cookie_access(
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

/// The value of the request's cookie `name`, when it has a non-empty one.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(found, _)| *found == name)
        .map(|(_, value)| value.trim())
        .filter(|value| !value.is_empty())
}

/// Compares two secrets in time that depends only on their lengths.
pub fn same_secret(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
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

    #[test]
    fn secrets_compare_by_content_and_length() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "abcd"));
        assert!(same_secret("", ""));
    }
}
