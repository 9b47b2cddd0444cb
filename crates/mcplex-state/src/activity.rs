//! The audit log: one row per tool call (who, what, outcome, time, sizes), kept for a retention
//! period. Argument values are stored only when the operator enabled it.

use rusqlite::params;

use crate::{StateError, Store};

/// One call, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Activity {
    /// Unix milliseconds when the call started.
    pub at_ms: i64,
    pub request_id: String,
    /// The agent token's name; `None` for the local user or the admin key.
    pub token: Option<String>,
    pub tool: String,
    pub status: String,
    pub duration_us: i64,
    pub request_bytes: i64,
    pub response_bytes: i64,
    /// The arguments as JSON text, only with `audit_arguments`.
    pub arguments: Option<String>,
}

/// Which rows to read, newest first.
#[derive(Debug, Clone, Default)]
pub struct ActivityQuery {
    pub limit: usize,
    pub token: Option<String>,
    pub tool: Option<String>,
}

impl Store {
    /// Appends `rows` in one transaction and drops rows older than `keep_after_ms`.
    pub fn record_activity(&self, rows: &[Activity], keep_after_ms: i64) -> Result<(), StateError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        {
            let mut insert = tx.prepare(
                "INSERT INTO activity (at_ms, request_id, token, tool, status, duration_us, request_bytes, response_bytes, arguments)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )?;
            for row in rows {
                insert.execute(params![
                    row.at_ms,
                    row.request_id,
                    row.token,
                    row.tool,
                    row.status,
                    row.duration_us,
                    row.request_bytes,
                    row.response_bytes,
                    row.arguments
                ])?;
            }
        }
        tx.execute(
            "DELETE FROM activity WHERE at_ms < ?1",
            params![keep_after_ms],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// The newest rows matching `query`.
    pub fn activity(&self, query: &ActivityQuery) -> Result<Vec<Activity>, StateError> {
        let conn = self.conn();
        let mut statement = conn.prepare(
            "SELECT at_ms, request_id, token, tool, status, duration_us, request_bytes, response_bytes, arguments
             FROM activity
             WHERE (?1 IS NULL OR token = ?1) AND (?2 IS NULL OR tool = ?2)
             ORDER BY at_ms DESC, rowid DESC LIMIT ?3",
        )?;
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let rows = statement.query_map(params![query.token, query.tool, limit], |row| {
            Ok(Activity {
                at_ms: row.get(0)?,
                request_id: row.get(1)?,
                token: row.get(2)?,
                tool: row.get(3)?,
                status: row.get(4)?,
                duration_us: row.get(5)?,
                request_bytes: row.get(6)?,
                response_bytes: row.get(7)?,
                arguments: row.get(8)?,
            })
        })?;
        let mut out = Vec::new();
        for row in rows {
            out.push(row?);
        }
        Ok(out)
    }
}
