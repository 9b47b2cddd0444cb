//! Which origin a browser's request was sent to: the one place that reads `Origin`, `Host` and
//! a TLS-ending proxy's word on the scheme. Callbacks are made under [`request_origin`], cookies
//! are `Secure` where [`reached_over_https`], and a form is accepted only
//! [`from_this_origin`].

use axum::http::{HeaderMap, header};

/// The origin of the page that sends the request, as its browser names it (`Origin`; none, or
/// the opaque `null`, is `None`).
fn browser_origin(request: &HeaderMap) -> Option<&str> {
    request
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .filter(|origin| !origin.is_empty() && *origin != "null")
}

/// The origin the request was addressed to: its scheme (see [`reached_over_https`]) and its
/// `Host` (which the edge's guard accepted: loopback, an IP address or a trusted name).
fn addressed_origin(request: &HeaderMap) -> Option<String> {
    let host = request
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|host| !host.is_empty())?;
    let scheme = if reached_over_https(request) {
        "https"
    } else {
        "http"
    };
    Some(format!("{scheme}://{host}"))
}

/// Where the browser that sent the request can be sent back to (`scheme://host[:port]`): its
/// page's origin, else the origin the request was addressed to (a top-level navigation sends
/// no `Origin`). `None` without either.
pub(crate) fn request_origin(request: &HeaderMap) -> Option<String> {
    browser_origin(request)
        .map(str::to_owned)
        .or_else(|| addressed_origin(request))
}

/// Whether a page of this very origin sends the request: its `Origin` is the origin the
/// request was addressed to, scheme and port included. The edge admits any loopback origin (and
/// every trusted host), and a page on another port of the same host is the same site to the
/// browser's cookies, so a form checks this itself.
pub(crate) fn from_this_origin(request: &HeaderMap) -> bool {
    match (browser_origin(request), addressed_origin(request)) {
        (Some(origin), Some(addressed)) => origin.eq_ignore_ascii_case(&addressed),
        _ => false,
    }
}

/// Whether the browser's request came over HTTPS: its page's `Origin`, or what the proxy in
/// front says (`X-Forwarded-Proto`, RFC 7239's `Forwarded: proto=`; the first hop's value).
pub(crate) fn reached_over_https(request: &HeaderMap) -> bool {
    let text = |name: &str| request.get(name).and_then(|v| v.to_str().ok());
    fn first(value: &str) -> &str {
        value.split(',').next().unwrap_or_default().trim()
    }
    if text("origin").is_some_and(|origin| origin.to_ascii_lowercase().starts_with("https://")) {
        return true;
    }
    if text("x-forwarded-proto").is_some_and(|proto| first(proto).eq_ignore_ascii_case("https")) {
        return true;
    }
    text("forwarded").is_some_and(|forwarded| {
        first(forwarded).split(';').any(|pair| {
            pair.split_once('=').is_some_and(|(key, value)| {
                key.trim().eq_ignore_ascii_case("proto")
                    && value.trim().trim_matches('"').eq_ignore_ascii_case("https")
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.insert(*name, HeaderValue::from_static(value));
        }
        headers
    }

    #[test]
    fn a_request_is_sent_back_to_its_page_else_where_it_was_addressed_behind_a_proxy_too() {
        fn at(pairs: &[(&'static str, &'static str)]) -> Option<String> {
            request_origin(&headers(pairs))
        }
        assert_eq!(at(&[]), None);
        assert_eq!(
            at(&[("host", "gw.example")]).as_deref(),
            Some("http://gw.example")
        );
        // A TLS-ending proxy: a navigation carries no Origin, the proxy says https.
        for proxy in [
            ("x-forwarded-proto", "https"),
            ("x-forwarded-proto", "https, http"),
            ("forwarded", "for=1.2.3.4;proto=https"),
        ] {
            assert_eq!(
                at(&[("host", "gw.example"), proxy]).as_deref(),
                Some("https://gw.example"),
                "{proxy:?}"
            );
        }
        assert_eq!(
            at(&[("host", "10.0.0.5:8080"), ("origin", "https://gw.example")]).as_deref(),
            Some("https://gw.example")
        );
        assert_eq!(
            at(&[("host", "gw.example"), ("origin", "null")]).as_deref(),
            Some("http://gw.example")
        );
    }

    #[test]
    fn only_a_page_of_the_addressed_origin_is_this_origin() {
        fn from(pairs: &[(&'static str, &'static str)]) -> bool {
            from_this_origin(&headers(pairs))
        }
        assert!(!from(&[("host", "127.0.0.1:8080")]), "no Origin");
        for (origin, same) in [
            ("http://127.0.0.1:8080", true),
            ("HTTP://127.0.0.1:8080", true),
            ("https://127.0.0.1:8080", true),
            ("http://127.0.0.1:8081", false),
            ("http://127.0.0.1", false),
            ("null", false),
            ("http://127.0.0.1:8080.evil", false),
        ] {
            assert_eq!(
                from(&[("host", "127.0.0.1:8080"), ("origin", origin)]),
                same,
                "{origin}"
            );
        }
        // Behind a TLS-ending proxy a page served over plain HTTP is another origin.
        assert!(!from(&[
            ("host", "gw.example"),
            ("x-forwarded-proto", "https"),
            ("origin", "http://gw.example")
        ]));
        assert!(from(&[
            ("host", "gw.example"),
            ("x-forwarded-proto", "https"),
            ("origin", "https://gw.example")
        ]));
    }
}
