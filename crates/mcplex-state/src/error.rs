//! The one error type of the state crate.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("cannot use the data directory {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("state database: {0}")]
    Database(#[from] rusqlite::Error),
    #[error("no randomness available: {0}")]
    Random(String),
    #[error("state database is from a newer mcplex (schema {found}, this build knows {known})")]
    NewerSchema { found: i64, known: i64 },
    #[error("a token named {0:?} already exists")]
    TokenExists(String),
    #[error("{0}")]
    Invalid(String),
    #[error("store: {0}")]
    Store(String),
    /// Not the error's source: a server error's own text carries its DETAIL, which may quote
    /// the values a statement wrote, and a chain of sources is printed whole (`{:#}`).
    #[error("store: {}", postgres_reason(.0))]
    Postgres(postgres::Error),
}

impl From<postgres::Error> for StateError {
    fn from(error: postgres::Error) -> StateError {
        StateError::Postgres(error)
    }
}

/// What went wrong, in the server's words where it gave a reason (the driver's own text for a
/// server's error is only "db error"): "permission denied for table tokens (42501)".
/// The server's message, never its detail, which may quote the values a statement carried.
fn postgres_reason(error: &postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => match std::error::Error::source(error) {
            Some(source) => format!("{error}: {source}"),
            None => error.to_string(),
        },
    }
}
