//! One interface to the two databases the store runs on: SQLite (one file, embedded, the
//! default) and PostgreSQL (one database that several gateways share). Every query of the store
//! is written once, in the subset of SQL both accept, with `?N` parameters (rewritten to `$N` for
//! PostgreSQL); values are the few types the schema uses: 64-bit integers, text, bytes, null.
//!
//! A write transaction excludes every other writer of the same store, whatever process or
//! machine it runs on: SQLite's `BEGIN IMMEDIATE`, PostgreSQL's transaction-scoped advisory
//! lock. So a compare-and-set (read, decide, write) in one transaction is decided by the store.
//!
//! The PostgreSQL client is synchronous (`postgres`, which drives `tokio-postgres` on a runtime of
//! its own); it must not be driven from a thread inside a tokio runtime, so every PostgreSQL
//! transaction runs on a short-lived scoped thread. A connection that was lost is opened again
//! by the next transaction.

use std::sync::{Mutex, MutexGuard, PoisonError};

use bytes::BytesMut;
use postgres::types::{IsNull, ToSql, Type, to_sql_checked};

use crate::StateError;
use crate::pg_tls::PgTarget;

/// A query parameter.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Param<'a> {
    Int(i64),
    OptInt(Option<i64>),
    Text(&'a str),
    OptText(Option<&'a str>),
    Bytes(&'a [u8]),
}

/// One value of a result row.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cell {
    Null,
    Int(i64),
    Text(String),
    Bytes(Vec<u8>),
}

/// One result row.
#[derive(Debug, Clone)]
pub(crate) struct Row(Vec<Cell>);

impl Row {
    fn cell(&self, index: usize) -> Result<&Cell, StateError> {
        self.0
            .get(index)
            .ok_or_else(|| StateError::Invalid(format!("no column {index} in a result row")))
    }

    pub(crate) fn int(&self, index: usize) -> Result<i64, StateError> {
        self.opt_int(index)?
            .ok_or_else(|| unexpected(index, "an integer"))
    }

    pub(crate) fn opt_int(&self, index: usize) -> Result<Option<i64>, StateError> {
        match self.cell(index)? {
            Cell::Null => Ok(None),
            Cell::Int(value) => Ok(Some(*value)),
            _ => Err(unexpected(index, "an integer")),
        }
    }

    /// An integer column used as a flag (0 or 1).
    pub(crate) fn flag(&self, index: usize) -> Result<bool, StateError> {
        Ok(self.int(index)? != 0)
    }

    pub(crate) fn text(&self, index: usize) -> Result<String, StateError> {
        self.opt_text(index)?
            .ok_or_else(|| unexpected(index, "text"))
    }

    pub(crate) fn opt_text(&self, index: usize) -> Result<Option<String>, StateError> {
        match self.cell(index)? {
            Cell::Null => Ok(None),
            Cell::Text(value) => Ok(Some(value.clone())),
            _ => Err(unexpected(index, "text")),
        }
    }

    pub(crate) fn bytes(&self, index: usize) -> Result<Vec<u8>, StateError> {
        match self.cell(index)? {
            Cell::Bytes(value) => Ok(value.clone()),
            // SQLite keeps whatever type was written; text written into a blob column reads
            // back as text.
            Cell::Text(value) => Ok(value.clone().into_bytes()),
            _ => Err(unexpected(index, "bytes")),
        }
    }
}

fn unexpected(index: usize, wanted: &str) -> StateError {
    StateError::Invalid(format!("column {index} of a stored row is not {wanted}"))
}

/// A transaction in progress.
pub(crate) trait Tx {
    /// Runs a statement; the number of rows it changed.
    fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, StateError>;
    /// Runs a query; every row.
    fn query(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Vec<Row>, StateError>;
    /// Runs several statements without parameters (schema changes).
    fn batch(&mut self, sql: &str) -> Result<(), StateError>;
    /// Which database this is, for the few statements that differ.
    fn dialect(&self) -> Dialect;

    /// The first row of a query, if any.
    fn query_first(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Option<Row>, StateError> {
        Ok(self.query(sql, params)?.into_iter().next())
    }
}

/// Whether a transaction writes (and so excludes every other writer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Read,
    Write,
}

/// Which database, for the few statements that differ (schema, migrations).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
}

/// The open database.
pub(crate) enum Db {
    Sqlite(Mutex<rusqlite::Connection>),
    Postgres(Box<Postgres>),
}

/// A PostgreSQL database: how to connect, and the connection (opened again when lost).
pub(crate) struct Postgres {
    target: PgTarget,
    client: Mutex<Option<postgres::Client>>,
}

/// The advisory lock every write transaction of a PostgreSQL store takes.
const WRITE_LOCK: i64 = 0x6d63_706c_6578;

impl Db {
    pub(crate) fn dialect(&self) -> Dialect {
        match self {
            Db::Sqlite(_) => Dialect::Sqlite,
            Db::Postgres(_) => Dialect::Postgres,
        }
    }

    /// Runs `body` in one transaction, committed when it returns `Ok`, rolled back otherwise.
    pub(crate) fn transaction<T: Send>(
        &self,
        mode: Mode,
        body: impl FnOnce(&mut dyn Tx) -> Result<T, StateError> + Send,
    ) -> Result<T, StateError> {
        match self {
            Db::Sqlite(conn) => {
                let mut conn = lock(conn);
                let behavior = match mode {
                    Mode::Read => rusqlite::TransactionBehavior::Deferred,
                    Mode::Write => rusqlite::TransactionBehavior::Immediate,
                };
                let tx = conn.transaction_with_behavior(behavior)?;
                let mut adapter = SqliteTx(&tx);
                let value = body(&mut adapter)?;
                tx.commit()?;
                Ok(value)
            }
            Db::Postgres(pg) => off_runtime(|| pg.transaction(mode, body)),
        }
    }
}

impl Postgres {
    /// Connects to `url` (`postgres://user:password@host:port/database[?sslmode=…]`).
    pub(crate) fn connect(url: &str) -> Result<Postgres, StateError> {
        let mut target = PgTarget::parse(url)?;
        if target.config.get_connect_timeout().is_none() {
            target
                .config
                .connect_timeout(std::time::Duration::from_secs(5));
        }
        target.config.application_name("mcplex");
        let pg = Postgres {
            target,
            client: Mutex::new(None),
        };
        // Fail now, with the reason, rather than at the first request.
        off_runtime(|| pg.client().map(drop))?;
        Ok(pg)
    }

    /// How to connect (for a second connection, such as a listener's).
    pub(crate) fn target(&self) -> &PgTarget {
        &self.target
    }

    fn client(&self) -> Result<MutexGuard<'_, Option<postgres::Client>>, StateError> {
        let mut client = lock(&self.client);
        if client.as_ref().is_none_or(postgres::Client::is_closed) {
            *client = Some(self.target.connect()?);
        }
        Ok(client)
    }

    fn transaction<T>(
        &self,
        mode: Mode,
        body: impl FnOnce(&mut dyn Tx) -> Result<T, StateError>,
    ) -> Result<T, StateError> {
        let mut guard = self.client()?;
        let client = guard
            .as_mut()
            .ok_or_else(|| StateError::Store("no connection".into()))?;
        let mut tx = client.transaction()?;
        if mode == Mode::Write {
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&WRITE_LOCK])?;
        }
        let mut adapter = PostgresTx(&mut tx);
        let value = body(&mut adapter)?;
        tx.commit()?;
        Ok(value)
    }
}

impl Drop for Postgres {
    /// Closing the connection blocks on the client's own runtime: not on a tokio thread either.
    fn drop(&mut self) {
        if let Some(client) = lock(&self.client).take() {
            off_runtime(move || drop(client));
        }
    }
}

/// Runs `work` on a scoped thread: outside any tokio runtime, as the synchronous PostgreSQL
/// client requires.
fn off_runtime<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| match scope.spawn(work).join() {
        Ok(value) => value,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

struct SqliteTx<'a>(&'a rusqlite::Transaction<'a>);

impl Tx for SqliteTx<'_> {
    fn batch(&mut self, sql: &str) -> Result<(), StateError> {
        Ok(self.0.execute_batch(sql)?)
    }

    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, StateError> {
        let changed = self
            .0
            .prepare_cached(sql)?
            .execute(rusqlite::params_from_iter(params.iter()))?;
        Ok(changed as u64)
    }

    fn query(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Vec<Row>, StateError> {
        let mut statement = self.0.prepare_cached(sql)?;
        let columns = statement.column_count();
        let mut rows = statement.query(rusqlite::params_from_iter(params.iter()))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            let mut cells = Vec::with_capacity(columns);
            for index in 0..columns {
                use rusqlite::types::ValueRef;
                cells.push(match row.get_ref(index)? {
                    ValueRef::Null => Cell::Null,
                    ValueRef::Integer(value) => Cell::Int(value),
                    // The schema has no real column; a real is kept as its integer part.
                    ValueRef::Real(value) => Cell::Int(value as i64),
                    ValueRef::Text(text) => Cell::Text(String::from_utf8_lossy(text).into_owned()),
                    ValueRef::Blob(bytes) => Cell::Bytes(bytes.to_vec()),
                });
            }
            out.push(Row(cells));
        }
        Ok(out)
    }
}

impl rusqlite::ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, Value, ValueRef};
        Ok(match *self {
            Param::Int(value) | Param::OptInt(Some(value)) => {
                ToSqlOutput::Owned(Value::Integer(value))
            }
            Param::Text(text) | Param::OptText(Some(text)) => {
                ToSqlOutput::Borrowed(ValueRef::Text(text.as_bytes()))
            }
            Param::Bytes(bytes) => ToSqlOutput::Borrowed(ValueRef::Blob(bytes)),
            Param::OptInt(None) | Param::OptText(None) => ToSqlOutput::Owned(Value::Null),
        })
    }
}

struct PostgresTx<'a, 'b>(&'a mut postgres::Transaction<'b>);

impl Tx for PostgresTx<'_, '_> {
    fn batch(&mut self, sql: &str) -> Result<(), StateError> {
        Ok(self.0.batch_execute(sql)?)
    }

    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, StateError> {
        let params: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as _).collect();
        Ok(self.0.execute(&dollar_parameters(sql), &params)?)
    }

    fn query(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Vec<Row>, StateError> {
        let params: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as _).collect();
        let rows = self.0.query(&dollar_parameters(sql), &params)?;
        rows.iter().map(postgres_row).collect()
    }
}

fn postgres_row(row: &postgres::Row) -> Result<Row, StateError> {
    let mut cells = Vec::with_capacity(row.len());
    for (index, column) in row.columns().iter().enumerate() {
        let ty = column.type_();
        let cell = if *ty == Type::INT8 {
            row.try_get::<_, Option<i64>>(index)?.map(Cell::Int)
        } else if *ty == Type::INT4 {
            row.try_get::<_, Option<i32>>(index)?
                .map(|v| Cell::Int(i64::from(v)))
        } else if *ty == Type::INT2 {
            row.try_get::<_, Option<i16>>(index)?
                .map(|v| Cell::Int(i64::from(v)))
        } else if *ty == Type::BOOL {
            row.try_get::<_, Option<bool>>(index)?
                .map(|v| Cell::Int(i64::from(v)))
        } else if *ty == Type::BYTEA {
            row.try_get::<_, Option<Vec<u8>>>(index)?.map(Cell::Bytes)
        } else {
            row.try_get::<_, Option<String>>(index)?.map(Cell::Text)
        };
        cells.push(cell.unwrap_or(Cell::Null));
    }
    Ok(Row(cells))
}

impl ToSql for Param<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match *self {
            Param::Int(value) => value.to_sql_checked(ty, out),
            Param::OptInt(value) => value.to_sql_checked(ty, out),
            Param::Text(text) => text.to_sql_checked(ty, out),
            Param::OptText(text) => text.to_sql_checked(ty, out),
            Param::Bytes(bytes) => bytes.to_sql_checked(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        // Checked per value by the inner type's own `to_sql`.
        true
    }

    to_sql_checked!();
}

/// `?N` → `$N`: the store's queries use SQLite's numbered parameters, PostgreSQL wants dollars.
/// (No query of the store has a `?` inside a string literal.)
pub(crate) fn dollar_parameters(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '?' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out
}
