//! Cookies at the edge: reading one out of a request's `Cookie` headers, and comparing secrets
//! (a cookie's or a header's against the one kept) in time that does not leak them. What a
//! cookie stands for is the business of the routes that set it.

use axum::http::{HeaderMap, header};

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

    #[test]
    fn a_cookie_is_read_from_any_cookie_header() {
        let mut headers = HeaderMap::new();
        for value in ["a=1; x=sid; b=2", "y=", "z=late"] {
            headers.append(header::COOKIE, HeaderValue::from_static(value));
        }
        assert_eq!(cookie(&headers, "x"), Some("sid"));
        assert_eq!(cookie(&headers, "z"), Some("late"));
        assert_eq!(cookie(&headers, "y"), None);
        assert_eq!(cookie(&headers, "x_other"), None);
    }

    #[test]
    fn secrets_compare_by_content_and_length() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "abcd"));
        assert!(same_secret("", ""));
    }
}
