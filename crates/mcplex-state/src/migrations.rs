//! The schema's history: one ordered ladder of migrations, each step written for both
//! databases (SQLite and PostgreSQL). A database at version `v` gets every step above `v`, in
//! order, in the transaction that opens the store (`store.rs`).

/// The schema version this build writes; older databases are migrated forward.
pub(crate) const SCHEMA_VERSION: i64 = 12;

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
/// The tables version 10 adds, the same in both dialects but for the type of bytes.
macro_rules! version_10_tables {
    ($bytes:literal) => {
        concat!(
            "
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
    sealed ",
            $bytes,
            " NOT NULL,
    begun_at BIGINT NOT NULL
);
"
        )
    };
}

const SCHEMA_V10: &str = concat!(
    "ALTER TABLE tokens ADD COLUMN limits TEXT;",
    version_10_tables!("BLOB")
);

/// Version 11: each caller's own OAuth login to a `per_user` server, sealed like the
/// gateway's (see `logins.rs`); the same in both dialects but for the type of bytes.
macro_rules! version_11_tables {
    ($bytes:literal) => {
        concat!(
            "
CREATE TABLE IF NOT EXISTS caller_logins (
    server TEXT NOT NULL,
    caller TEXT NOT NULL,
    sealed ",
            $bytes,
            " NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (server, caller)
);
"
        )
    };
}

/// Version 12: servers added from the dashboard (`added_servers.rs`), sealed like logins.
macro_rules! version_12_tables {
    ($bytes:literal) => {
        concat!(
            "
CREATE TABLE IF NOT EXISTS added_servers (
    name TEXT PRIMARY KEY,
    sealed ",
            $bytes,
            " NOT NULL,
    added_by TEXT,
    added_at BIGINT NOT NULL
);
"
        )
    };
}

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
    Migration {
        version: 11,
        sqlite: version_11_tables!("BLOB"),
        postgres: version_11_tables!("BYTEA"),
    },
    Migration {
        version: 12,
        sqlite: version_12_tables!("BLOB"),
        postgres: version_12_tables!("BYTEA"),
    },
];

/// Version 10 in PostgreSQL: as [`SCHEMA_V10`], idempotent.
const POSTGRES_V10: &str = concat!(
    "ALTER TABLE tokens ADD COLUMN IF NOT EXISTS limits TEXT;",
    version_10_tables!("BYTEA")
);

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
