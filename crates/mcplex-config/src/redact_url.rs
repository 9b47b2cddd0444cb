//! URLs and their secrets: the always-redacted display form of a URL, the scrubbing of every URL
//! inside a text (user info and the value of every query parameter), and the literal secrets a
//! configured URL carries, in every spelling an upstream or a library may echo them in.

use crate::redact::REDACTED;

/// `url` with its user info and the value of every query parameter replaced by `[redacted]`:
/// `http://admin:pw@host/mcp?api_key=k` → `http://[redacted]@host/mcp?api_key=[redacted]`.
/// The form in which a server's URL may be shown anywhere.
pub fn redact_url(url: &str) -> String {
    redact_urls(url)
}

/// A PostgreSQL store's URL as it may be shown, the whole string read as one URL, and read so
/// that no part of a password shows whatever characters it holds: the user info up to the last
/// `@` (its driver takes the first, a password may hold one, and one with `/`, `?`, `#`, a quote
/// or a space still connects), every query value and whatever has no `=` (a value may hold `&`
/// or `#`), and nothing past the scheme when an `@` lies in the query:
/// `postgres://mcplex:ab/c"d@db:5432/app?sslmode=require` →
/// `postgres://[redacted]@db:5432/app?sslmode=[redacted]`.
pub fn redact_store_url(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, body)) => format!("{scheme}://{}", scrub_store(body)),
        None => REDACTED.to_owned(),
    }
}

/// What follows `postgres://` as [`redact_store_url`] shows it, in a text too.
fn scrub_store(body: &str) -> String {
    let query_start = body.find('?');
    let (place_and_query, user_info) = match body.rfind('@') {
        Some(at) if query_start.is_some_and(|query| at > query) => return REDACTED.to_owned(),
        Some(at) => (&body[at + 1..], true),
        None => (body, false),
    };
    let mut out = String::with_capacity(body.len());
    if user_info {
        out.push_str(REDACTED);
        out.push('@');
    }
    match place_and_query.split_once('?') {
        None => out.push_str(place_and_query),
        Some((place, query)) => {
            out.push_str(place);
            out.push('?');
            let pairs: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((name, _)) => format!("{name}={REDACTED}"),
                    None => REDACTED.to_owned(),
                })
                .collect();
            out.push_str(&pairs.join("&"));
        }
    }
    out
}

/// `text` with every URL in it (`scheme://…`, up to whitespace or a quote) shown as
/// [`redact_url`] shows it. Text outside URLs is unchanged.
pub fn redact_urls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let scheme_start = rest[..at]
            .char_indices()
            .rev()
            .take_while(|(_, c)| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
            .last()
            .map_or(at, |(i, _)| i);
        let body_start = at + 3;
        let end = rest[body_start..]
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`' | '\\'))
            .map_or(rest.len(), |i| body_start + i);
        if scheme_start == at {
            // `://` without a scheme: not a URL.
            out.push_str(&rest[..body_start]);
            rest = &rest[body_start..];
            continue;
        }
        out.push_str(&rest[..body_start]);
        // Punctuation that closes a sentence or a parenthesis is not part of the URL.
        let token = &rest[body_start..end];
        let kept = token.trim_end_matches([')', '.', ',', ';', ':']);
        out.push_str(&scrub(&rest[scheme_start..at], kept));
        out.push_str(&token[kept.len()..]);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Whether `scheme` is PostgreSQL's, whose drivers read a URL's user info up to the first `@`,
/// across `/`, `?` and `#`: a store URL's password with a `/` (as `openssl rand -base64` makes)
/// still connects, so it must still be hidden.
fn postgres(scheme: &str) -> bool {
    ["postgres", "postgresql"].contains(&scheme.to_ascii_lowercase().as_str())
}

/// Where the authority (user info and host) of what follows `scheme://` ends: as URLs are
/// parsed, at the first `/`, `?` or `#`; for PostgreSQL past the first `@`, as its drivers read.
fn authority_end(scheme: &str, body: &str) -> usize {
    let from = match body.find('@') {
        Some(at) if postgres(scheme) => at + 1,
        _ => 0,
    };
    body[from..]
        .find(['/', '?', '#'])
        .map_or(body.len(), |end| from + end)
}

/// What follows `scheme://`: user info and query values replaced (a PostgreSQL URL as a store
/// URL is shown).
fn scrub(scheme: &str, body: &str) -> String {
    if postgres(scheme) {
        return scrub_store(body);
    }
    let (authority, tail) = body.split_at(authority_end(scheme, body));
    let mut out = String::with_capacity(body.len());
    match authority.rfind('@') {
        Some(at) => {
            out.push_str(REDACTED);
            out.push_str(&authority[at..]);
        }
        None => out.push_str(authority),
    }
    let Some(query_start) = tail.find('?') else {
        out.push_str(tail);
        return out;
    };
    out.push_str(&tail[..=query_start]);
    let query_and_fragment = &tail[query_start + 1..];
    let query_end = query_and_fragment
        .find('#')
        .unwrap_or(query_and_fragment.len());
    let (query, fragment) = query_and_fragment.split_at(query_end);
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, value)) if !value.is_empty() => format!("{name}={REDACTED}"),
            _ => pair.to_owned(),
        })
        .collect();
    out.push_str(&pairs.join("&"));
    out.push_str(fragment);
    out
}

/// The secrets a configured URL carries: its user info (as written, decoded, and as the base64
/// of an HTTP Basic credential, which is how HTTP clients send it) and its query values (as
/// written and decoded).
pub(crate) fn url_secrets(url: &str) -> Vec<String> {
    secrets_of(url, |_| true)
}

/// The credentials a URL found in the environment carries: its user info, and the values of
/// the query parameters named like credentials (`?password=…`, `?api_key=…`), not every value
/// (`?sslmode=require`, `?w=majority` are no secrets, and hiding them would mangle a server's
/// output).
pub fn url_credentials(url: &str) -> Vec<String> {
    secrets_of(url, crate::names_a_secret)
}

/// [`url_secrets`] of the query parameters whose name `secret` accepts.
fn secrets_of(url: &str, secret: impl Fn(&str) -> bool) -> Vec<String> {
    let mut secrets = Vec::new();
    let Some((scheme, body)) = url.split_once("://") else {
        return secrets;
    };
    let (authority, tail) = body.split_at(authority_end(scheme, body));
    if let Some((userinfo, _)) = authority.rsplit_once('@') {
        secrets.push(userinfo.to_owned());
        let (user, password) = match userinfo.split_once(':') {
            Some((user, password)) => (percent_decode(user), Some(percent_decode(password))),
            None => (percent_decode(userinfo), None),
        };
        match &password {
            Some(password) => secrets.push(password.clone()),
            // A lone user name is the credential (`https://TOKEN@host`).
            None => secrets.push(user.clone()),
        }
        // The password as written, escapes and all.
        secrets.extend(userinfo.split_once(':').map(|(_, p)| p.to_owned()));
        secrets.push(base64(&format!(
            "{user}:{}",
            password.as_deref().unwrap_or_default()
        )));
    }
    if let Some((_, query)) = tail.split_once('?') {
        let query = query.split('#').next().unwrap_or_default();
        for pair in query.split('&') {
            if let Some((name, value)) = pair.split_once('=')
                && secret(&percent_decode(name))
            {
                secrets.push(value.to_owned());
                secrets.push(percent_decode(value));
            }
        }
    }
    secrets
}

/// `%XX` escapes decoded (and `+` as a space, as in form-encoded queries); anything malformed
/// is kept as it is.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(high), Some(low)) => {
                    out.push((high * 16 + low) as u8);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            other => out.push(other),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Standard base64 with padding (RFC 4648), as an HTTP Basic credential is sent.
fn base64(text: &str) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (k, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if k <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_credentials_or_query_values() {
        assert_eq!(
            redact_url("http://admin:pw@host:8080/mcp?api_key=k&x=1#frag"),
            "http://[redacted]@host:8080/mcp?api_key=[redacted]&x=[redacted]#frag"
        );
        assert_eq!(redact_url("https://host/mcp"), "https://host/mcp");
        assert_eq!(redact_url("https://TOKEN@host"), "https://[redacted]@host");
        assert_eq!(redact_url("http://[::1]:9/p?flag"), "http://[::1]:9/p?flag");
    }

    #[test]
    fn a_store_url_shows_no_part_of_its_password_whatever_it_holds() {
        for (url, shown) in [
            (
                "postgres://mcplex:ab/c\"d e@db:5432/app?sslmode=require",
                "postgres://[redacted]@db:5432/app?sslmode=[redacted]",
            ),
            (
                "postgres://mcplex:p@ss@db/app",
                "postgres://[redacted]@db/app",
            ),
            (
                "postgres://db/app?password=hunter@2",
                "postgres://[redacted]",
            ),
            (
                "postgres://db/app?password=ab#cd&x&sslmode=verify-full",
                "postgres://db/app?password=[redacted]&[redacted]&sslmode=[redacted]",
            ),
            (
                "postgresql://db.example.com/app",
                "postgresql://db.example.com/app",
            ),
            ("not a url", "[redacted]"),
        ] {
            assert_eq!(redact_store_url(url), shown, "{url}");
        }
    }

    #[test]
    fn a_store_urls_password_is_hidden_as_its_driver_reads_it() {
        // PostgreSQL's drivers take the user info up to the first `@`, `/` and `?` included.
        for (url, shown) in [
            (
                "postgres://mcplex:ab/cd+ef@db:5432/mcplex?sslmode=require",
                "postgres://[redacted]@db:5432/mcplex?sslmode=[redacted]",
            ),
            (
                "postgresql://mcplex:a?b#c@db/mcplex",
                "postgresql://[redacted]",
            ),
            (
                "postgres://db/app?password=hunter@2",
                "postgres://[redacted]",
            ),
            ("postgres://db/mcplex", "postgres://db/mcplex"),
        ] {
            assert_eq!(redact_url(url), shown);
            assert_eq!(
                redact_urls(&format!("cannot open {url}: refused")),
                format!("cannot open {shown}: refused")
            );
        }
        assert!(url_secrets("postgres://mcplex:ab/cd@db/m").contains(&"ab/cd".to_owned()));
        // Elsewhere URLs are read as URLs: an `@` in a path is no user info.
        assert_eq!(
            redact_url("https://server.example/@owner/repo/mcp"),
            "https://server.example/@owner/repo/mcp"
        );
    }

    #[test]
    fn urls_inside_text_are_scrubbed_and_the_rest_kept() {
        assert_eq!(
            redact_urls("POST http://h/mcp?api_key=k: error for url (http://h/mcp?api_key=k)."),
            "POST http://h/mcp?api_key=[redacted]: error for url (http://h/mcp?api_key=[redacted])."
        );
        assert_eq!(redact_urls("no url :// here"), "no url :// here");
        assert_eq!(redact_urls("\"ws://u:p@h\""), "\"ws://[redacted]@h\"");
        let once = redact_urls("see http://a:b@h/?t=1");
        assert_eq!(redact_urls(&once), once, "idempotent");
    }

    #[test]
    fn a_configured_url_yields_its_secrets_in_every_spelling() {
        let secrets = url_secrets("http://admin:p%40ss@h/mcp?api_key=a%2Fb&t=tok");
        for expected in ["admin:p%40ss", "p@ss", "p%40ss", "a%2Fb", "a/b", "tok"] {
            assert!(
                secrets.iter().any(|s| s == expected),
                "{expected}: {secrets:?}"
            );
        }
        // What an HTTP client sends for the user info: Basic base64("admin:p@ss").
        assert!(
            secrets.iter().any(|s| s == "YWRtaW46cEBzcw=="),
            "{secrets:?}"
        );
        assert_eq!(base64("ab"), "YWI=");
        assert_eq!(base64("abc"), "YWJj");
        assert_eq!(base64("a"), "YQ==");
    }

    #[test]
    fn a_url_from_the_environment_yields_its_credentials_only() {
        let found =
            url_credentials("mongodb://app:pw-9@db/x?retryWrites=true&w=majority&api_key=k-1");
        for expected in ["app:pw-9", "pw-9", "k-1"] {
            assert!(found.iter().any(|s| s == expected), "{expected}: {found:?}");
        }
        assert!(
            !found.iter().any(|s| s == "majority" || s == "true"),
            "{found:?}"
        );
    }

    #[test]
    fn percent_decoding_keeps_what_is_malformed() {
        assert_eq!(percent_decode("a%2Fb%zz%4"), "a/b%zz%4");
        assert_eq!(percent_decode("a+b"), "a b");
    }
}
