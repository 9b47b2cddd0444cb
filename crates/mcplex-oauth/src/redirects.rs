//! Which redirects the gateway's HTTP clients follow: within the same origin only (scheme, host
//! and port), at most a few. A redirect elsewhere would carry what the request carries (an
//! upstream's configured headers, a bearer token, a client secret, the `initialize` body) to a
//! server nobody configured; it is returned as it is, and the caller says why it stopped.

/// How many same-origin redirects one request may follow.
const MAX_REDIRECTS: usize = 5;

/// The redirect policy of every HTTP client of the gateway that talks to a configured server.
pub fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !same_origin || attempt.previous().len() > MAX_REDIRECTS {
            attempt.stop()
        } else {
            attempt.follow()
        }
    })
}

/// For an answer that is a redirect the policy did not follow: why the request stopped there,
/// naming the origin it pointed to (never its path or query, which may carry secrets).
pub fn redirect_refusal(response: &reqwest::Response) -> Option<String> {
    if !response.status().is_redirection() {
        return None;
    }
    let target = response
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|location| response.url().join(location).ok())
        .map_or_else(
            || "elsewhere".to_owned(),
            |url| url.origin().ascii_serialization(),
        );
    Some(format!(
        "the server redirected to {target}, another origin, which mcplex does not follow (the request's headers and credentials would go with it); configure that URL instead if you trust it"
    ))
}
