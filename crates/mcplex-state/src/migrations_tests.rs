//! The one ladder of migrations: a store left by each earlier schema version, on SQLite and on
//! PostgreSQL, opens at the current version with exactly the tables and columns of a new store,
//! and keeps its rows.

use std::collections::BTreeMap;

use rusqlite::Connection;

use crate::migrations::{MIGRATIONS, SCHEMA_VERSION};
use crate::tests::postgres_database;
use crate::{Location, Store};

/// Every table's columns and their declared types.
type Columns = BTreeMap<String, Vec<(String, String)>>;

fn sqlite_columns(conn: &Connection) -> Columns {
    let mut tables = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .expect("prepare");
    let names: Vec<String> = tables
        .query_map([], |row| row.get(0))
        .expect("tables")
        .flatten()
        .collect();
    names
        .into_iter()
        .map(|table| {
            let mut info = conn
                .prepare(&format!("PRAGMA table_info({table})"))
                .expect("prepare");
            let columns = info
                .query_map([], |row| Ok((row.get(1)?, row.get(2)?)))
                .expect("columns")
                .flatten()
                .collect();
            (table, columns)
        })
        .collect()
}

fn kept(store: &Store) -> bool {
    store
        .load_approvals()
        .expect("approvals")
        .server("kept")
        .is_some()
}

#[test]
fn every_earlier_sqlite_schema_upgrades_to_the_current_one() {
    let fresh = tempfile::tempdir().expect("tempdir");
    drop(Store::open(fresh.path()).expect("a new store"));
    let expected = sqlite_columns(&Connection::open(fresh.path().join("state.db")).expect("db"));
    assert!(expected.len() >= 12, "{expected:?}");
    for version in 1..SCHEMA_VERSION {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let conn = Connection::open(dir.path().join("state.db")).expect("db");
            for step in MIGRATIONS.iter().filter(|s| s.version <= version) {
                conn.execute_batch(step.sqlite).expect("an earlier schema");
            }
            conn.pragma_update(None, "user_version", version)
                .expect("its version");
            conn.execute("INSERT INTO servers VALUES ('kept', 'approved', 0, 1)", [])
                .expect("a row");
        }
        let (store, opened) = Store::open(dir.path()).expect("upgraded");
        assert!(!opened.created, "version {version}");
        assert!(kept(&store), "version {version}: the rows stay");
        drop(store);
        let upgraded = sqlite_columns(&Connection::open(dir.path().join("state.db")).expect("db"));
        assert_eq!(upgraded, expected, "from version {version}");
    }
}

fn postgres_columns(url: &str) -> Columns {
    let mut client = postgres::Client::connect(url, postgres::NoTls).expect("connect");
    let mut columns = Columns::new();
    for row in client
        .query(
            "SELECT table_name::text, column_name::text, data_type::text FROM information_schema.columns \
             WHERE table_schema = 'public' ORDER BY table_name, ordinal_position",
            &[],
        )
        .expect("columns")
    {
        columns
            .entry(row.get(0))
            .or_default()
            .push((row.get(1), row.get(2)));
    }
    columns
}

#[test]
fn every_earlier_postgres_schema_upgrades_to_the_current_one() {
    let Some(fresh) = postgres_database("mcplex_ladder_fresh") else {
        return;
    };
    drop(Store::open_at(&Location::Postgres(fresh.clone())).expect("a new store"));
    let expected = postgres_columns(&fresh);
    assert!(expected.len() >= 12, "{expected:?}");
    for version in 1..SCHEMA_VERSION {
        let Some(url) = postgres_database(&format!("mcplex_ladder_{version}")) else {
            return;
        };
        {
            let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
            for step in MIGRATIONS.iter().filter(|s| s.version <= version) {
                client
                    .batch_execute(step.postgres)
                    .expect("an earlier schema");
            }
            client
                .batch_execute(&format!(
                    "CREATE TABLE schema_version (version BIGINT NOT NULL); \
                     INSERT INTO schema_version VALUES ({version}); \
                     INSERT INTO servers VALUES ('kept', 'approved', 0, 1);"
                ))
                .expect("its version and a row");
        }
        let (store, opened) = Store::open_at(&Location::Postgres(url.clone())).expect("upgraded");
        assert!(!opened.created, "version {version}");
        assert!(kept(&store), "version {version}: the rows stay");
        drop(store);
        assert_eq!(postgres_columns(&url), expected, "from version {version}");
    }
}
