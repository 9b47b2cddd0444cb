//! Removes secrets from text before it leaves the process (logs, API answers, CLI output,
//! `/readyz`, error messages): a server's configured secret values (env values, header values,
//! its URL's user info and query values) wherever they appear, and the user info and query
//! values of any URL in the text, whoever wrote it.

use crate::ServerConfig;
use crate::Transport;
use crate::redact_url::{redact_urls, url_secrets};

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Replaces every configured secret of one server with `[redacted]`, and scrubs every URL.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    secrets: Vec<String>,
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
}
