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
    #[error("store: {0}")]
    Postgres(#[from] postgres::Error),
}
