//! The one error type of config loading: what is wrong, where (file and key), and why.

/// A config the gateway refuses to run with.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file is not JSON at all.
    #[error("{file}: not valid JSON: {reason}")]
    Syntax { file: String, reason: String },
    /// A key has a value of the wrong type or an unacceptable value.
    #[error("{file}: {key}: {reason}")]
    Invalid {
        file: String,
        key: String,
        reason: String,
    },
}

impl ConfigError {
    pub(crate) fn invalid(file: &str, key: impl Into<String>, reason: impl Into<String>) -> Self {
        ConfigError::Invalid {
            file: file.to_owned(),
            key: key.into(),
            reason: reason.into(),
        }
    }

    /// The dotted path of the offending key, when there is one.
    pub fn key(&self) -> Option<&str> {
        match self {
            ConfigError::Syntax { .. } => None,
            ConfigError::Invalid { key, .. } => Some(key),
        }
    }
}
