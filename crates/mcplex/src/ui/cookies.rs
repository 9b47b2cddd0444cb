//! The cookies the dashboard and its flows set: every one HttpOnly (no script reads it), Secure
//! when the browser reached the gateway over HTTPS (through a proxy that ends TLS; a header
//! claiming HTTPS can only make a caller's own cookie stricter), appended to the response (one
//! answer may set several, or set one and drop another).

use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;

/// What a cookie is for, which decides its SameSite and its lifetime.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    /// The dashboard's session: SameSite=Strict (no other site's page sends it), as long as the
    /// session lasts.
    Session,
    /// A step of a flow that leaves the gateway and comes back (a sign-in at the issuer, a
    /// caller's upstream login): SameSite=Lax (the redirect back is a navigation from another
    /// site), as long as a begun login waits.
    Flow,
}

impl Kind {
    fn attributes(self) -> (&'static str, u64) {
        match self {
            Kind::Session => ("Strict", super::sessions::SESSION_LIFETIME.as_secs()),
            Kind::Flow => (
                "Lax",
                u64::try_from(mcplex_oauth::PENDING_FOR_SECS).unwrap_or(0),
            ),
        }
    }
}

/// `response` setting cookie `name` to `value` for `path`.
pub(crate) fn set(
    response: Response,
    name: &str,
    value: &str,
    path: &str,
    kind: Kind,
    request: &HeaderMap,
) -> Response {
    let (same_site, max_age) = kind.attributes();
    append(response, name, value, path, same_site, max_age, request)
}

/// `response` dropping cookie `name` of `path`.
pub(crate) fn expire(
    response: Response,
    name: &str,
    path: &str,
    kind: Kind,
    request: &HeaderMap,
) -> Response {
    let (same_site, _) = kind.attributes();
    append(response, name, "", path, same_site, 0, request)
}

fn append(
    mut response: Response,
    name: &str,
    value: &str,
    path: &str,
    same_site: &str,
    max_age: u64,
    request: &HeaderMap,
) -> Response {
    let secure = if crate::origin::reached_over_https(request) {
        "; Secure"
    } else {
        ""
    };
    let cookie = format!(
        "{name}={value}; Path={path}; HttpOnly; SameSite={same_site}; Max-Age={max_age}{secure}"
    );
    match HeaderValue::from_str(&cookie) {
        Ok(value) => {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
        // Names and values are ours (hex, base64url): never, but said if it were.
        Err(_) => tracing::error!("cannot write the cookie {name:?}: not a header value"),
    }
    response
}
