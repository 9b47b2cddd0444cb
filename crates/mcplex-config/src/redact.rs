//! Removes secret values (env values, header values) from text before it is logged.

use crate::ServerConfig;

/// Replaces every configured secret of one server with `[redacted]`.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    secrets: Vec<String>,
}

/// Values shorter than this are too common (`"1"`, `"true"`) to be worth hiding and would mangle logs.
const MIN_SECRET_LEN: usize = 4;

impl Redactor {
    /// Collects the secret values of `server`: all env values and all header values.
    pub fn for_server(server: &ServerConfig) -> Redactor {
        let mut secrets: Vec<String> = server
            .secret_values()
            .filter(|v| v.len() >= MIN_SECRET_LEN)
            .map(str::to_owned)
            .collect();
        // Longest first, so a secret that contains another is hidden whole.
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        Redactor { secrets }
    }

    /// `text` with every secret replaced.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), "[redacted]");
            }
        }
        out
    }
}
