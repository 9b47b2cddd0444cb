//! [`Store`]: the SQLite database, its schema, and approval records.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use mcplex_trust::{Approvals, Change, ServerRecord, ServerState, ToolRecord};
use rusqlite::Connection;

use crate::StateError;
use crate::dir::{DATABASE_FILE, ensure_dir};
use crate::secret::random_bytes;
use crate::sql::{Db, Dialect, Mode, Param, Postgres, Tx};
use crate::tokens::now_unix;

/// The schema version this build writes; older databases are migrated forward.
pub(crate) const SCHEMA_VERSION: i64 = 10;

/// Prepared SQLite statements kept for reuse: the audit writer's INSERT for each batch size (up to
/// 64 rows a statement) and every other statement the store runs. Preparing the INSERT again for
/// each batch was 2.6 % of the gateway's CPU under load.
const STATEMENT_CACHE: usize = 128;

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

/// Version 4: the control plane. `counters.generation` counts the writes every running gateway must
/// follow (approvals, tokens); `instances` is where running gateways register themselves;
/// `definitions` (by pin hash) and `observed` (each tool's latest hash) are what operators
/// review and approve.
const SCHEMA_V4: &str = "
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT INTO counters (name, value) VALUES ('generation', 0) ON CONFLICT (name) DO NOTHING;
CREATE TABLE IF NOT EXISTS definitions (hash TEXT PRIMARY KEY, definition TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS observed (
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    hash TEXT NOT NULL,
    observed_at INTEGER NOT NULL,
    PRIMARY KEY (server, tool)
);
CREATE TABLE IF NOT EXISTS instances (
    id TEXT PRIMARY KEY,
    address TEXT NOT NULL,
    pid INTEGER NOT NULL,
    started_at INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL
);
";

/// Version 5: the audit log names the replica that served each call.
const SCHEMA_V5: &str = "ALTER TABLE activity ADD COLUMN replica TEXT;";

/// Version 6: the audit log records every request that reaches an upstream, not only tool
/// calls, and says which method each was (older rows, all tool calls, have none).
const SCHEMA_V6: &str = "ALTER TABLE activity ADD COLUMN method TEXT;";

/// Version 7: OAuth logins of upstream servers, sealed (see `logins.rs`).
const SCHEMA_V7: &str = "
CREATE TABLE IF NOT EXISTS oauth_logins (
    server TEXT PRIMARY KEY,
    sealed BLOB NOT NULL,
    updated_at INTEGER NOT NULL
);
";

/// Version 8: dashboard sessions ended by a logout, by keyed hash (see `dashboard.rs`); the
/// same text in both dialects.
const SCHEMA_V8: &str = "
CREATE TABLE IF NOT EXISTS dashboard_logouts (
    session TEXT PRIMARY KEY,
    ends_at BIGINT NOT NULL
);
";

/// Version 10: an agent token's own limits on tool calls (`limits`, the config's JSON shape),
/// each replica's counts of limited callers' calls, which the replicas exchange twice a second
/// (see `usage.rs`), and logins begun in the dashboard (`pending_logins.rs`).
const SCHEMA_V10: &str = "
ALTER TABLE tokens ADD COLUMN limits TEXT;
CREATE TABLE IF NOT EXISTS call_usage (
    instance TEXT NOT NULL,
    caller TEXT NOT NULL,
    class TEXT NOT NULL,
    minute BIGINT NOT NULL,
    current_calls BIGINT NOT NULL,
    previous_calls BIGINT NOT NULL,
    in_flight BIGINT NOT NULL,
    PRIMARY KEY (instance, caller, class)
);
CREATE TABLE IF NOT EXISTS pending_logins (
    state TEXT PRIMARY KEY,
    sealed BLOB NOT NULL,
    begun_at BIGINT NOT NULL
);
";

/// One step of the schema, written for both databases. Every PostgreSQL step is idempotent
/// (`IF NOT EXISTS`): PostgreSQL stores of earlier releases were created whole at version 4 and
/// on, with columns of later steps already there.
pub(crate) struct Migration {
    /// The version the database is at once this step is applied.
    pub(crate) version: i64,
    pub(crate) sqlite: &'static str,
    pub(crate) postgres: &'static str,
}

/// The schema's history, in order: a database at version `v` gets every step above `v`.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        sqlite: SCHEMA_V1,
        postgres: POSTGRES_V1,
    },
    Migration {
        version: 2,
        sqlite: SCHEMA_V2,
        postgres: POSTGRES_V2,
    },
    Migration {
        version: 3,
        sqlite: SCHEMA_V3,
        postgres: POSTGRES_V3,
    },
    Migration {
        version: 4,
        sqlite: SCHEMA_V4,
        postgres: POSTGRES_V4,
    },
    Migration {
        version: 5,
        sqlite: SCHEMA_V5,
        postgres: "ALTER TABLE activity ADD COLUMN IF NOT EXISTS replica TEXT;",
    },
    Migration {
        version: 6,
        sqlite: SCHEMA_V6,
        postgres: "ALTER TABLE activity ADD COLUMN IF NOT EXISTS method TEXT;",
    },
    Migration {
        version: 7,
        sqlite: SCHEMA_V7,
        postgres: POSTGRES_V7,
    },
    Migration {
        version: 8,
        sqlite: SCHEMA_V8,
        postgres: SCHEMA_V8,
    },
    // Version 9: a PostgreSQL store's API key leaves the database for its verifier (done by
    // `Store::admin_key`); no table changes, but a release that would write the key in clear
    // again refuses a store at this version.
    Migration {
        version: 9,
        sqlite: "",
        postgres: "",
    },
    Migration {
        version: 10,
        sqlite: SCHEMA_V10,
        postgres: POSTGRES_V10,
    },
];

/// Version 10 in PostgreSQL: as [`SCHEMA_V10`], idempotent.
const POSTGRES_V10: &str = "
ALTER TABLE tokens ADD COLUMN IF NOT EXISTS limits TEXT;
CREATE TABLE IF NOT EXISTS call_usage (
    instance TEXT NOT NULL,
    caller TEXT NOT NULL,
    class TEXT NOT NULL,
    minute BIGINT NOT NULL,
    current_calls BIGINT NOT NULL,
    previous_calls BIGINT NOT NULL,
    in_flight BIGINT NOT NULL,
    PRIMARY KEY (instance, caller, class)
);
CREATE TABLE IF NOT EXISTS pending_logins (
    state TEXT PRIMARY KEY,
    sealed BYTEA NOT NULL,
    begun_at BIGINT NOT NULL
);
";

/// Version 1 in PostgreSQL: every integer 64-bit, bytes as `BYTEA`.
const POSTGRES_V1: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BYTEA NOT NULL);
CREATE TABLE IF NOT EXISTS servers (
    name TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    pin_next_listing BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS tools (
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    pinned_hash TEXT,
    blocked BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (server, tool)
);
CREATE TABLE IF NOT EXISTS tokens (
    name TEXT PRIMARY KEY,
    mac TEXT NOT NULL UNIQUE,
    servers TEXT,
    permissions TEXT NOT NULL,
    profile TEXT,
    created_at BIGINT NOT NULL,
    expires_at BIGINT,
    revoked_at BIGINT
);
";

/// Version 2 in PostgreSQL: the audit log, its `rowid` made explicit.
const POSTGRES_V2: &str = "
CREATE TABLE IF NOT EXISTS activity (
    rowid BIGSERIAL PRIMARY KEY,
    at_ms BIGINT NOT NULL,
    request_id TEXT NOT NULL,
    token TEXT,
    tool TEXT NOT NULL,
    status TEXT NOT NULL,
    duration_us BIGINT NOT NULL,
    request_bytes BIGINT NOT NULL,
    response_bytes BIGINT NOT NULL,
    arguments TEXT
);
CREATE INDEX IF NOT EXISTS activity_at ON activity (at_ms);
";

/// Version 3 in PostgreSQL.
const POSTGRES_V3: &str = "
CREATE TABLE IF NOT EXISTS embeddings (
    model TEXT NOT NULL,
    passage BYTEA NOT NULL,
    vector BYTEA NOT NULL,
    PRIMARY KEY (model, passage)
);
";

/// Version 4 in PostgreSQL.
const POSTGRES_V4: &str = "
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value BIGINT NOT NULL);
INSERT INTO counters (name, value) VALUES ('generation', 0) ON CONFLICT (name) DO NOTHING;
CREATE TABLE IF NOT EXISTS definitions (hash TEXT PRIMARY KEY, definition TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS observed (
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    hash TEXT NOT NULL,
    observed_at BIGINT NOT NULL,
    PRIMARY KEY (server, tool)
);
CREATE TABLE IF NOT EXISTS instances (
    id TEXT PRIMARY KEY,
    address TEXT NOT NULL,
    pid BIGINT NOT NULL,
    started_at BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL
);
";

/// Version 7 in PostgreSQL.
const POSTGRES_V7: &str = "
CREATE TABLE IF NOT EXISTS oauth_logins (
    server TEXT PRIMARY KEY,
    sealed BYTEA NOT NULL,
    updated_at BIGINT NOT NULL
);
";

/// `meta.founding` of a store whose founding servers no process has decided yet.
const FOUNDING_UNDECIDED: &[u8] = b"undecided";

/// Where the store is: a data directory holding a SQLite file, or a PostgreSQL database.
#[derive(Clone, PartialEq, Eq)]
pub enum Location {
    Directory(PathBuf),
    /// `postgres://…` (or `postgresql://…`).
    Postgres(String),
}

impl Location {
    /// `postgres://…` and `postgresql://…` URLs are PostgreSQL; anything else is a directory.
    pub fn parse(store: &str) -> Location {
        if store.starts_with("postgres://") || store.starts_with("postgresql://") {
            Location::Postgres(store.to_owned())
        } else {
            Location::Directory(PathBuf::from(store))
        }
    }
}

/// Shown in messages and logs: a URL's user info and query values are never part of it.
impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Directory(dir) => write!(f, "{}", dir.display()),
            Location::Postgres(url) => f.write_str(&mcplex_config::redact_url(url)),
        }
    }
}

impl std::fmt::Debug for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Location({self})")
    }
}

/// The open store. Every method is one transaction. Agent-token checks read an in-memory copy,
/// never this.
pub struct Store {
    pub(crate) db: Db,
    pub(crate) secret: Vec<u8>,
    location: Location,
}

/// What opening found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opened {
    /// The database did not exist before: this is the installation's first start.
    pub created: bool,
}

impl Store {
    /// Opens (creating if needed) the SQLite database in `dir`.
    pub fn open(dir: &Path) -> Result<(Store, Opened), StateError> {
        ensure_dir(dir)?;
        crate::dir::warn_if_exposed(dir);
        let path = dir.join(DATABASE_FILE);
        // 0600 before SQLite opens it; SQLite gives the -wal and -shm files the database's mode.
        crate::dir::private_file(&path)?;
        let conn = Connection::open(&path)?;
        conn.busy_timeout(Duration::from_secs(5))?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        for suffix in ["-wal", "-shm"] {
            crate::dir::tighten(&dir.join(format!("{DATABASE_FILE}{suffix}")))?;
        }
        Store::start(
            Db::Sqlite(Mutex::new(conn)),
            Location::Directory(dir.to_owned()),
        )
    }

    /// Opens the store at `location`: a data directory's SQLite file, or a PostgreSQL database
    /// (its schema created or migrated).
    pub fn open_at(location: &Location) -> Result<(Store, Opened), StateError> {
        match location {
            Location::Directory(dir) => Store::open(dir),
            Location::Postgres(url) => {
                let db = Postgres::connect(url)
                    .map_err(|e| StateError::Store(format!("cannot connect to {location}: {e}")))?;
                Store::start(Db::Postgres(Box::new(db)), location.clone())
            }
        }
    }

    fn start(db: Db, location: Location) -> Result<(Store, Opened), StateError> {
        let mut store = Store {
            db,
            secret: Vec::new(),
            location,
        };
        let created = store.migrate()?;
        store.secret = store.installation_secret()?;
        Ok((store, Opened { created }))
    }

    /// Where this store is.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// Brings the schema to [`SCHEMA_VERSION`]; true when the database was empty.
    fn migrate(&self) -> Result<bool, StateError> {
        let dialect = self.db.dialect();
        self.db.transaction(Mode::Write, |tx| {
            let version = schema_version(tx, dialect)?;
            if version > SCHEMA_VERSION {
                return Err(StateError::NewerSchema {
                    found: version,
                    known: SCHEMA_VERSION,
                });
            }
            for step in MIGRATIONS.iter().filter(|step| step.version > version) {
                tx.batch(match dialect {
                    Dialect::Sqlite => step.sqlite,
                    Dialect::Postgres => step.postgres,
                })?;
            }
            record_version(tx, dialect, SCHEMA_VERSION)?;
            if version == 0 {
                // Which servers an installation starts with is decided once, by the first
                // process that registers servers (see `founding_servers`).
                tx.execute(
                    "INSERT INTO meta (key, value) VALUES ('founding', ?1)",
                    &[Param::Bytes(FOUNDING_UNDECIDED)],
                )?;
            }
            Ok(version == 0)
        })
    }

    /// The servers this installation was founded with, which start approved: decided by the
    /// first process that asks after the store was created (its `candidates`, the servers of
    /// its config), in one transaction, so replicas that start together on a new store agree.
    /// Empty for a store created before this was recorded.
    pub fn founding_servers(&self, candidates: &[String]) -> Result<BTreeSet<String>, StateError> {
        let decided =
            serde_json::to_vec(candidates).map_err(|e| StateError::Invalid(e.to_string()))?;
        let stored = self.db.transaction(Mode::Write, |tx| {
            tx.execute(
                "UPDATE meta SET value = ?1 WHERE key = 'founding' AND value = ?2",
                &[Param::Bytes(&decided), Param::Bytes(FOUNDING_UNDECIDED)],
            )?;
            tx.query_first("SELECT value FROM meta WHERE key = 'founding'", &[])?
                .map(|row| row.bytes(0))
                .transpose()
        })?;
        Ok(stored
            .and_then(|bytes| serde_json::from_slice::<BTreeSet<String>>(&bytes).ok())
            .unwrap_or_default())
    }

    /// The per-installation HMAC key, created with the database.
    fn installation_secret(&self) -> Result<Vec<u8>, StateError> {
        let fresh = random_bytes(32)?;
        self.db.transaction(Mode::Write, |tx| {
            tx.execute(
                "INSERT INTO meta (key, value) VALUES ('secret', ?1) ON CONFLICT (key) DO NOTHING",
                &[Param::Bytes(&fresh)],
            )?;
            match tx.query_first("SELECT value FROM meta WHERE key = 'secret'", &[])? {
                Some(row) => row.bytes(0),
                None => Err(StateError::Invalid(
                    "the installation secret is missing".into(),
                )),
            }
        })
    }

    /// Every approval record.
    pub fn load_approvals(&self) -> Result<Approvals, StateError> {
        self.db.transaction(Mode::Read, |tx| {
            let mut servers = Vec::new();
            for row in tx.query("SELECT name, state, pin_next_listing FROM servers", &[])? {
                // An unreadable state is treated as quarantined: unknown never means trusted.
                let state = ServerState::parse(&row.text(1)?).unwrap_or(ServerState::Quarantined);
                servers.push((
                    row.text(0)?,
                    ServerRecord {
                        state,
                        pin_next_listing: row.flag(2)?,
                    },
                ));
            }
            let mut tools = Vec::new();
            for row in tx.query("SELECT server, tool, pinned_hash, blocked FROM tools", &[])? {
                tools.push((
                    (row.text(0)?, row.text(1)?),
                    ToolRecord {
                        pinned: row.opt_text(2)?,
                        blocked: row.flag(3)?,
                    },
                ));
            }
            Ok(Approvals::from_records(servers, tools))
        })
    }

    /// Writes `changes` in one transaction: all of them or, on any error, none.
    pub fn apply(&self, changes: &[Change]) -> Result<(), StateError> {
        if changes.is_empty() {
            return Ok(());
        }
        let now = now_unix();
        self.db.transaction(Mode::Write, |tx| {
            for change in changes {
                match change {
                    Change::Server { name, record } => {
                        tx.execute(
                            "INSERT INTO servers (name, state, pin_next_listing, updated_at)
                             VALUES (?1, ?2, ?3, ?4)
                             ON CONFLICT (name) DO UPDATE SET state = ?2, pin_next_listing = ?3, updated_at = ?4",
                            &[
                                Param::Text(name),
                                Param::Text(record.state.as_str()),
                                Param::Int(i64::from(record.pin_next_listing)),
                                Param::Int(now),
                            ],
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
                            &[
                                Param::Text(server),
                                Param::Text(tool),
                                Param::OptText(record.pinned.as_deref()),
                                Param::Int(i64::from(record.blocked)),
                                Param::Int(now),
                            ],
                        )?;
                    }
                }
            }
            crate::control::bump_generation(tx)
        })
    }
}

/// Records that the database is at `version`.
pub(crate) fn record_version(
    tx: &mut dyn Tx,
    dialect: Dialect,
    version: i64,
) -> Result<(), StateError> {
    match dialect {
        Dialect::Sqlite => tx.batch(&format!("PRAGMA user_version = {version}")),
        Dialect::Postgres => {
            tx.execute("DELETE FROM schema_version", &[])?;
            tx.execute(
                "INSERT INTO schema_version (version) VALUES (?1)",
                &[Param::Int(version)],
            )
            .map(|_| ())
        }
    }
}

/// The schema version a database is at (0: empty).
fn schema_version(tx: &mut dyn Tx, dialect: Dialect) -> Result<i64, StateError> {
    match dialect {
        Dialect::Sqlite => match tx.query_first("PRAGMA user_version", &[])? {
            Some(row) => row.int(0),
            None => Ok(0),
        },
        Dialect::Postgres => {
            tx.batch("CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)")?;
            match tx.query_first("SELECT version FROM schema_version", &[])? {
                Some(row) => row.int(0),
                None => Ok(0),
            }
        }
    }
}
