//! The one error type of config loading: what is wrong, where (file and key), and why.

/// A config the gateway refuses to run with.
#[derive(Debug, Clone, thiserror::Error)]
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

/// A duration (`"30s"`, `"2m"`) that is not one; what the config or a command line prefixes
/// with where it was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Not a number with a unit; `reason` is the parser's.
    #[error("{reason} (write e.g. \"30s\", \"2m\", \"1500ms\")")]
    Unreadable { reason: String },
    #[error("must be greater than zero")]
    Zero,
    #[error("must be at most 100 years")]
    TooLong,
}

/// A `store` that is not a Postgres URL. Holds nothing of the URL: it may carry a password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreUrlError {
    #[error("must be a postgres:// URL (without it, the store is SQLite in data_dir)")]
    NotPostgres,
}

/// A `limits` object from an API request, a stored token or `--limit` that cannot be used.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LimitsError {
    /// A key with a value of the wrong type or out of range.
    #[error(transparent)]
    Invalid(#[from] ConfigError),
    /// A key `limits` does not have (outside the config file this is refused, not warned of).
    #[error("{0}")]
    UnknownKey(String),
    /// A `--limit` without `=`.
    #[error(
        "--limit {assignment:?}: write it as key=value, e.g. calls_per_minute=60 or write.concurrent_calls=2"
    )]
    NoValue { assignment: String },
    #[error("--limit {assignment:?}: {value:?} is not a whole number")]
    NotANumber { assignment: String, value: String },
    /// A `--limit class.key=...` whose class is already set to a number.
    #[error("--limit {assignment:?}: {class} is not a class")]
    NotAClass { assignment: String, class: String },
}
