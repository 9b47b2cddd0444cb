//! [`Store`]: the SQLite or PostgreSQL database (its schema's ladder is `migrations.rs`), and approval records.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use mcplex_trust::{Approvals, Change, ServerRecord, ServerState, ToolRecord};
use rusqlite::Connection;

use crate::StateError;
use crate::dir::{DATABASE_FILE, ensure_dir};
use crate::migrations::{MIGRATIONS, SCHEMA_VERSION};
use crate::secret::random_bytes;
use crate::sql::{Db, Dialect, Mode, Param, Postgres, Tx};
use crate::tokens::now_unix;

/// Prepared SQLite statements kept for reuse: the audit writer's seven INSERTs (1, 2, 4, … 64
/// rows a statement) and every other statement the store runs. Preparing the INSERT again for
/// each batch was 2.6 % of the gateway's CPU under load.
const STATEMENT_CACHE: usize = 128;

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
            Location::Postgres(url) => f.write_str(&mcplex_config::redact_store_url(url)),
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
