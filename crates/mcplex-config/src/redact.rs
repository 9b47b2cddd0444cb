//! Removes secrets from text before it leaves the process (logs, API answers, CLI output,
//! `/readyz`, error messages): a server's configured secret values (env values, header values,
//! its URL's user info and query values) wherever they appear, and the user info and query
//! values of any URL in the text, whoever wrote it.

use crate::ServerConfig;
use crate::Transport;
use crate::redact_url::{redact_urls, url_secrets};

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Replaces every configured secret of one server with `[redacted]`, and scrubs every URL. Its
/// `Debug` counts the secrets and shows none.
#[derive(Clone, Default)]
pub struct Redactor {
    secrets: Vec<String>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor")
            .field("secrets", &self.secrets.len())
            .finish()
    }
}

/// Values shorter than this are too common (`"1"`, `"true"`) to be worth hiding and would mangle logs.
const MIN_SECRET_LEN: usize = 4;

impl Redactor {
    /// Collects the secret values of `server`: all env values, all header values (and the
    /// credential after an auth scheme such as `Bearer`), and its URL's user info and query values.
    pub fn for_server(server: &ServerConfig) -> Redactor {
        let mut secrets: Vec<String> = Vec::new();
        for value in server.secret_values() {
            secrets.push(value.to_owned());
            // `Bearer <token>`: an upstream may echo the token alone.
            if let Some((_, credential)) = value.trim().split_once(char::is_whitespace) {
                secrets.push(credential.trim().to_owned());
            }
        }
        if let Transport::Http { url, .. } | Transport::Sse { url, .. } = &server.transport {
            secrets.extend(url_secrets(url));
        }
        Redactor::of(secrets)
    }

    /// A redactor of exactly these values (those shorter than 4 characters are ignored).
    pub fn of(secrets: impl IntoIterator<Item = String>) -> Redactor {
        let mut secrets: Vec<String> = secrets
            .into_iter()
            .filter(|v| v.len() >= MIN_SECRET_LEN && v != REDACTED)
            .collect();
        // Longest first, so a secret that contains another is hidden whole.
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        Redactor { secrets }
    }

    /// This redactor, hiding `more` too (a secret read from the environment when it is used).
    pub fn with(self, more: impl IntoIterator<Item = String>) -> Redactor {
        Redactor::of(self.secrets.into_iter().chain(more))
    }

    /// `text` with every secret replaced and every URL's credentials and query values hidden.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
        if out.contains("://") {
            out = redact_urls(&out);
        }
        out
    }

    /// The first `max_chars` characters of `text` redacted, as [`snippet`] cuts them, reading
    /// only the text's start when it is long (an upstream's message may hold 64 MiB). A secret
    /// that the start cuts in two lies at its end, past what is shown: the start is read far
    /// enough for that unless its own secrets shrink it by more than [`SHRINK_ALLOWED`]
    /// characters, and then the whole text is redacted.
    pub fn redact_start(&self, text: &str, max_chars: usize) -> String {
        // The secrets are sorted by bytes, not characters: the longest in characters is sought.
        let longest = self.secrets.iter().map(|s| s.chars().count()).max();
        // What is left of a cut secret may grow as it is redacted: the shorter secrets inside
        // it become `[redacted]`, up to this many times their length.
        let growth = REDACTED.len().div_ceil(MIN_SECRET_LEN);
        // What is shown, the part a cut secret or URL may occupy, and room to shrink.
        let kept = max_chars + longest.unwrap_or(0) * growth + URL_ALLOWED;
        let end = text
            .char_indices()
            .nth(kept + SHRINK_ALLOWED)
            .map_or(text.len(), |(at, _)| at);
        if end == text.len() {
            return snippet(&self.redact(text), max_chars);
        }
        let start = self.redact(&text[..end]);
        // A URL that runs on to the cut may hide its credentials' end (`@`) past it.
        let cut_url = text[..end]
            .rfind("://")
            .is_some_and(|at| !text[at..end].contains(char::is_whitespace));
        if start.chars().count() >= kept && !cut_url {
            snippet(&start, max_chars)
        } else {
            snippet(&self.redact(text), max_chars)
        }
    }
}

/// How far a URL may reach past what [`Redactor::redact_start`] shows and still be read whole
/// (a URL cut in two may show credentials its end would have marked); one that reaches the cut
/// has the whole text redacted.
const URL_ALLOWED: usize = 2048;

/// By how many characters the secrets in the start of a text may shrink it before
/// [`Redactor::redact_start`] redacts the whole text.
const SHRINK_ALLOWED: usize = 4096;

/// At most `max_chars` characters of `text`, with `…` when it was cut.
pub fn snippet(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn http(url: &str, headers: &[(&str, &str)]) -> ServerConfig {
        let headers: BTreeMap<String, String> = headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ServerConfig::new(
            "h",
            Transport::Http {
                url: url.to_owned(),
                headers,
                fallback_to_sse: false,
            },
        )
    }

    #[test]
    fn url_credentials_and_header_values_are_hidden_wherever_they_appear() {
        let redactor = Redactor::for_server(&http(
            "http://admin:hunter22@h/mcp?api_key=KEY-123",
            &[("Authorization", "Bearer TOKEN-456"), ("X-Key", "XKEY-789")],
        ));
        let echoed = "HTTP 401: got KEY-123 and TOKEN-456 and XKEY-789 and hunter22 and \
                      YWRtaW46aHVudGVyMjI= from http://h/mcp?api_key=KEY-123";
        let redacted = redactor.redact(echoed);
        for secret in [
            "KEY-123",
            "TOKEN-456",
            "XKEY-789",
            "hunter22",
            "YWRtaW46aHVudGVyMjI=",
        ] {
            assert!(!redacted.contains(secret), "{secret}: {redacted}");
        }
        assert!(
            redacted.starts_with("HTTP 401: got [redacted]"),
            "{redacted}"
        );
        assert_eq!(redactor.redact(&redacted), redacted, "idempotent");
    }

    #[test]
    fn short_values_are_left_alone_but_urls_are_always_scrubbed() {
        let redactor = Redactor::of(["1".to_owned(), "abc".to_owned()]);
        assert_eq!(redactor.redact("1 abc"), "1 abc");
        assert_eq!(
            Redactor::default().redact("at https://u:p@x/?q=v"),
            "at https://[redacted]@x/?q=[redacted]"
        );
    }

    #[test]
    fn the_start_of_a_long_text_is_shown_redacted_without_a_cut_secret() {
        let secret = "S".repeat(40);
        let redactor = Redactor::of([secret.clone()]);
        let short = format!("key {secret} end");
        assert_eq!(redactor.redact_start(&short, 200), "key [redacted] end");
        // A secret of 1,000 characters shrinks the text by 990 each time: the start read holds
        // seven and the first 344 characters of the eighth, which would land in what is shown
        // were the start redacted alone.
        let secret = "S".repeat(1_000);
        let redactor = Redactor::of([secret.clone()]);
        let long = format!("{}{}", secret.repeat(20), "x".repeat(10_000));
        let shown = redactor.redact_start(&long, 200);
        assert_eq!(shown, format!("{}…", "[redacted]".repeat(20)));
        // A secret the start cuts in two, with nothing to shrink it, lies past what is shown.
        for at in [4_300, 6_350, 7_300] {
            let straddled = format!("{}{secret}{}", "a".repeat(at), "b".repeat(100_000));
            let shown = redactor.redact_start(&straddled, 200);
            assert_eq!(shown, format!("{}…", "a".repeat(200)));
        }
        // A secret longest in bytes need not be longest in characters.
        let wide = "😀".repeat(1_000);
        let redactor = Redactor::of([wide.clone(), "B".repeat(3_999)]);
        let text = format!(
            "{}{}{}",
            wide.repeat(4),
            "B".repeat(3_999),
            "z".repeat(100_000)
        );
        assert_eq!(
            redactor.redact_start(&text, 200),
            format!("{}…", "[redacted]".repeat(5) + &"z".repeat(150))
        );
        // A URL whose user info runs on past the start read is redacted as the whole text is.
        let long_user = format!(
            "see https://user:{}@h/ {}",
            "p".repeat(7_000),
            "z".repeat(100_000)
        );
        assert_eq!(
            Redactor::default().redact_start(&long_user, 30),
            "see https://[redacted]@h/ zzzz…"
        );
        let url = format!("see https://u:pw@h/?k=v {}", "z".repeat(100_000));
        assert!(
            redactor
                .redact_start(&url, 30)
                .starts_with("see https://[redacted]@h/")
        );
    }

    #[test]
    fn a_snippet_cuts_at_characters_and_marks_the_cut() {
        assert_eq!(snippet("héllo", 5), "héllo");
        assert_eq!(snippet("héllo", 2), "hé…");
        assert_eq!(snippet("", 0), "");
    }
}
