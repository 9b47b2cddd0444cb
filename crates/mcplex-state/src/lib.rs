//! The gateway's persistent state: one SQLite database in the data directory, plus the admin API
//! key file beside it.
//!
//! Owns: the schema and its migrations, transactional writes of approval [`Change`]s, agent
//! tokens (stored only as HMAC-SHA256 under a per-installation secret), and the admin API key
//! (created on first start, file mode 0600), and the audit log of calls with its retention. SQLite because the database is a single file a user
//! can inspect with `sqlite3`, every write is one ACID transaction (a crash never leaves half an
//! approval), WAL lets the CLI and a running gateway share it, and the audit log (#8) wants
//! queries by time and retention deletes. Also the tool embeddings of hybrid search, so that a
//! restart does not embed the catalog again. The store is the control plane: every write of an
//! operator's decision moves a generation counter that running gateways follow, and running
//! gateways register themselves in it so that the CLI finds them.
//! Must not: decide anything. Verdicts and scopes are `mcplex-trust`'s; this crate stores them.
//!
//! [`Change`]: mcplex_trust::Change

mod activity;
mod added_servers;
mod admin_key;
mod caller_logins;
mod control;
mod dashboard;
mod dir;
mod embeddings;
mod error;
mod identity;
mod logins;
mod migrations;
mod pending_logins;
mod pg_session;
mod pg_tls;
mod reviews;
mod secret;
mod sql;
mod store;
mod tokens;
mod trends;
mod usage;

pub use activity::{Activity, ActivityCount, ActivityQuery, ExportCursor};
pub use added_servers::AddedServerRow;
pub use admin_key::{AdminKey, GivenKey};
pub use caller_logins::CallerLoginRow;
pub use control::{ChangeSignal, INSTANCE_STALE_AFTER_SECS, Instance};
pub use dir::{API_KEY_FILE, DATABASE_FILE, TOKEN_KEY_FILE, api_key, default_data_dir};
pub use embeddings::Embedding;
pub use error::StateError;
pub use identity::{identity_nonce, identity_proof, well_formed_nonce};
pub use logins::{LoginRow, TOKEN_KEY_ENV};
pub use reviews::{ApproveRefusal, Observation, Review};
pub use store::{Location, Opened, Store};
pub use tokens::{
    NewToken, OAUTH_CALLER_PREFIX, OPERATOR_CALLER_PREFIX, TokenRecord, TokenSpec, now_unix,
};
pub use trends::{TrendBucket, TrendScope};
pub use usage::UsageCount;

#[cfg(test)]
mod activity_tests;
#[cfg(test)]
mod admin_key_tests;
#[cfg(test)]
mod logins_tests;
#[cfg(test)]
mod migrations_tests;
#[cfg(test)]
mod pg_session_tests;
#[cfg(test)]
mod tests;
