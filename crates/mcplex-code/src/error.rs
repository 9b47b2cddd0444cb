//! Why a run produced no value.

/// A failed run. Every variant names what the script author can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// A limit was hit; `limit` is its config name.
    #[error("{message}")]
    Limit {
        limit: &'static str,
        message: String,
    },
    /// The script threw (or did not compile); `line` is in the script's own numbering.
    #[error("{message}")]
    Script { message: String, line: Option<u32> },
    /// The engine itself failed (it could not start, or a result was not JSON).
    #[error("code execution failed: {0}")]
    Internal(String),
}
