//! [`Store`]: the SQLite database, its schema, and approval records.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use mcplex_trust::{Approvals, Change, ServerRecord, ServerState, ToolRecord};
use rusqlite::{Connection, OptionalExtension, params};

use crate::StateError;
use crate::dir::{DATABASE_FILE, ensure_dir};
use crate::secret::random_bytes;
use crate::tokens::now_unix;

/// The schema version this build writes; older databases are migrated forward.
const SCHEMA_VERSION: i64 = 4;

const SCHEMA_V1: &str = "
CREATE TABLE meta (key TEXT PRIMARY KEY, value BLOB NOT NULL);
CREATE TABLE servers (
    name TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    pin_next_listing INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE tools (
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    pinned_hash TEXT,
    blocked INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (server, tool)
);
CREATE TABLE tokens (
    name TEXT PRIMARY KEY,
    mac TEXT NOT NULL UNIQUE,
    servers TEXT,
    permissions TEXT NOT NULL,
    profile TEXT,
    created_at INTEGER NOT NULL,
    expires_at INTEGER,
    revoked_at INTEGER
);
";

/// Version 2: the audit log.
const SCHEMA_V2: &str = "
CREATE TABLE activity (
    at_ms INTEGER NOT NULL,
    request_id TEXT NOT NULL,
    token TEXT,
    tool TEXT NOT NULL,
    status TEXT NOT NULL,
    duration_us INTEGER NOT NULL,
    request_bytes INTEGER NOT NULL,
    response_bytes INTEGER NOT NULL,
    arguments TEXT
);
CREATE INDEX activity_at ON activity (at_ms);
";

/// Version 3: tool embeddings for hybrid search.
const SCHEMA_V3: &str = "
CREATE TABLE embeddings (
    model TEXT NOT NULL,
    passage BLOB NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, passage)
) WITHOUT ROWID;
";

/// Version 4: the control plane. `generation` counts the writes every running gateway must
/// follow (approvals, tokens); `instances` is where running gateways register themselves;
/// `definitions` (by pin hash) and `observed` (each tool's latest hash) are what operators
/// review and approve.
const SCHEMA_V4: &str = "
CREATE TABLE IF NOT EXISTS definitions (hash TEXT PRIMARY KEY, definition TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS observed (
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    hash TEXT NOT NULL,
    observed_at INTEGER NOT NULL,
    PRIMARY KEY (server, tool)
);
INSERT INTO meta (key, value) VALUES ('generation', 0) ON CONFLICT (key) DO NOTHING;
CREATE TABLE IF NOT EXISTS instances (
    id TEXT PRIMARY KEY,
    address TEXT NOT NULL,
    pid INTEGER NOT NULL,
    started_at INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL
);
";

/// The open database. Every method is one transaction; the connection is shared behind a mutex
/// (writes are rare and short; agent-token checks read an in-memory copy, never this).
pub struct Store {
    conn: Mutex<Connection>,
    pub(crate) secret: Vec<u8>,
    dir: PathBuf,
}

/// What opening found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opened {
    /// The database did not exist before: this is the installation's first start.
    pub created: bool,
}

impl Store {
    /// Opens (creating if needed) the database in `dir`.
    pub fn open(dir: &Path) -> Result<(Store, Opened), StateError> {
        ensure_dir(dir)?;
        crate::dir::warn_if_exposed(dir);
        let path = dir.join(DATABASE_FILE);
        // 0600 before SQLite opens it; SQLite gives the -wal and -shm files the database's mode.
        crate::dir::private_file(&path)?;
        let conn = Connection::open(&path)?;
        conn.busy_timeout(Duration::from_secs(5))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        for suffix in ["-wal", "-shm"] {
            crate::dir::tighten(&dir.join(format!("{DATABASE_FILE}{suffix}")))?;
        }
        let mut store = Store {
            conn: Mutex::new(conn),
            secret: Vec::new(),
            dir: dir.to_owned(),
        };
        let created = store.migrate()?;
        store.secret = store.installation_secret()?;
        Ok((store, Opened { created }))
    }

    /// The data directory this store lives in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Brings the schema to [`SCHEMA_VERSION`]; true when the database was empty.
    fn migrate(&self) -> Result<bool, StateError> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let version: i64 = tx.pragma_query_value(None, "user_version", |row| row.get(0))?;
        if version > SCHEMA_VERSION {
            return Err(StateError::NewerSchema {
                found: version,
                known: SCHEMA_VERSION,
            });
        }
        if version < 1 {
            tx.execute_batch(SCHEMA_V1)?;
        }
        if version < 2 {
            tx.execute_batch(SCHEMA_V2)?;
        }
        if version < 3 {
            tx.execute_batch(SCHEMA_V3)?;
        }
        if version < 4 {
            tx.execute_batch(SCHEMA_V4)?;
        }
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
        tx.commit()?;
        Ok(version == 0)
    }

    /// The per-installation HMAC key, created with the database.
    fn installation_secret(&self) -> Result<Vec<u8>, StateError> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let existing: Option<Vec<u8>> = tx
            .query_row("SELECT value FROM meta WHERE key = 'secret'", [], |row| {
                row.get(0)
            })
            .optional()?;
        let secret = match existing {
            Some(secret) => secret,
            None => {
                let secret = random_bytes(32)?;
                tx.execute(
                    "INSERT INTO meta (key, value) VALUES ('secret', ?1)",
                    params![secret],
                )?;
                secret
            }
        };
        tx.commit()?;
        Ok(secret)
    }

    /// Every approval record.
    pub fn load_approvals(&self) -> Result<Approvals, StateError> {
        let conn = self.conn();
        let mut servers = Vec::new();
        let mut statement = conn.prepare("SELECT name, state, pin_next_listing FROM servers")?;
        let rows = statement.query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, bool>(2)?,
            ))
        })?;
        for row in rows {
            let (name, state, pin_next_listing) = row?;
            // An unreadable state is treated as quarantined: unknown never means trusted.
            let state = ServerState::parse(&state).unwrap_or(ServerState::Quarantined);
            servers.push((
                name,
                ServerRecord {
                    state,
                    pin_next_listing,
                },
            ));
        }
        let mut tools = Vec::new();
        let mut statement = conn.prepare("SELECT server, tool, pinned_hash, blocked FROM tools")?;
        let rows = statement.query_map([], |row| {
            Ok((
                (row.get::<_, String>(0)?, row.get::<_, String>(1)?),
                ToolRecord {
                    pinned: row.get(2)?,
                    blocked: row.get(3)?,
                },
            ))
        })?;
        for row in rows {
            tools.push(row?);
        }
        Ok(Approvals::from_records(servers, tools))
    }

    /// Writes `changes` in one transaction: all of them or, on any error, none.
    pub fn apply(&self, changes: &[Change]) -> Result<(), StateError> {
        if changes.is_empty() {
            return Ok(());
        }
        let now = now_unix();
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        for change in changes {
            match change {
                Change::Server { name, record } => {
                    tx.execute(
                        "INSERT INTO servers (name, state, pin_next_listing, updated_at)
                         VALUES (?1, ?2, ?3, ?4)
                         ON CONFLICT (name) DO UPDATE SET state = ?2, pin_next_listing = ?3, updated_at = ?4",
                        params![name, record.state.as_str(), record.pin_next_listing, now],
                    )?;
                }
                Change::Tool {
                    server,
                    tool,
                    record,
                } => {
                    tx.execute(
                        "INSERT INTO tools (server, tool, pinned_hash, blocked, updated_at)
                         VALUES (?1, ?2, ?3, ?4, ?5)
                         ON CONFLICT (server, tool) DO UPDATE SET pinned_hash = ?3, blocked = ?4, updated_at = ?5",
                        params![server, tool, record.pinned, record.blocked, now],
                    )?;
                }
            }
        }
        crate::control::bump_generation(&tx)?;
        tx.commit()?;
        Ok(())
    }
}
