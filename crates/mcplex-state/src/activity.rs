//! The audit log: one row per tool call (who, what, outcome, time, sizes), kept for a retention
//! period. Argument values are stored only when the operator enabled it.

use crate::sql::{Mode, Param};
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
    /// The gateway that served the call (`host:port`), where several share the store.
    pub replica: Option<String>,
    /// The JSON-RPC method that reached the upstream (`tools/call`, `prompts/get`, ...).
    pub method: String,
}

/// Which rows to read, newest first.
#[derive(Debug, Clone, Default)]
pub struct ActivityQuery {
    pub limit: usize,
    /// A token's name; [`ActivityQuery::NO_TOKEN`] for rows without one.
    pub token: Option<String>,
    /// Part of the tool (`server:tool`, any case).
    pub tool: Option<String>,
    /// The outcome (`ok`, `tool_error`, ...).
    pub status: Option<String>,
    /// Rows skipped from the newest (paging).
    pub offset: usize,
    /// Only rows of calls that started at or after this (Unix milliseconds).
    pub since_ms: Option<i64>,
}

/// Where an export has got to: the last row it read, oldest first (`rowid` breaks ties of
/// `at_ms`), so rows written meanwhile neither shift nor repeat a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExportCursor {
    at_ms: i64,
    rowid: i64,
}

/// The filters of [`ActivityQuery`] as SQL: `WHERE` conditions over parameters `?1`..`?5`, shared
/// by the page and the export so that both read the same rows.
const FILTERS: &str = "(CAST(?1 AS TEXT) IS NULL OR token = ?1)
    AND (CAST(?2 AS TEXT) IS NULL OR lower(tool) LIKE ?2 ESCAPE '\\')
    AND (CAST(?3 AS TEXT) IS NULL OR status = ?3) AND (CAST(?4 AS BIGINT) = 0 OR token IS NULL)
    AND at_ms >= ?5";

/// The selected columns, in the order [`activity_of`] reads them (from index `first`).
const SELECTED: &str = "at_ms, request_id, token, tool, status, duration_us, request_bytes, response_bytes, arguments, replica, COALESCE(method, 'tools/call')";

impl ActivityQuery {
    /// The `token` filter for calls made without a token (the local user, the admin key).
    pub const NO_TOKEN: &'static str = "-";
}

/// How many rows one tool had with one outcome ([`Store::activity_counts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivityCount {
    pub tool: String,
    pub status: String,
    pub count: i64,
}

/// Rows per `INSERT` statement (eleven parameters each: well under either database's limit).
const ROWS_PER_INSERT: usize = 64;

/// The columns an [`Activity`] is stored in, in the order of [`row_params`].
const COLUMNS: [&str; 11] = [
    "at_ms",
    "request_id",
    "token",
    "tool",
    "status",
    "duration_us",
    "request_bytes",
    "response_bytes",
    "arguments",
    "replica",
    "method",
];

/// The next chunk of a batch of `rows` rows to insert with one statement, and that statement:
/// the largest power of two rows up to [`ROWS_PER_INSERT`] (64, 32, …, 1). Seven statements
/// then serve every batch size, so they stay prepared in the store's cache; one for each size
/// was prepared anew for most batches whose size had not come before.
fn insert_chunk(rows: usize) -> (usize, &'static str) {
    static STATEMENTS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let statements = STATEMENTS.get_or_init(|| {
        (0..=ROWS_PER_INSERT.ilog2())
            .map(|power| insert_statement(1 << power))
            .collect()
    });
    let power = rows.clamp(1, ROWS_PER_INSERT).ilog2();
    let sql = statements.get(power as usize).map_or("", String::as_str);
    (1 << power, sql)
}

/// `INSERT INTO activity (…) VALUES (?1, …, ?11), (?12, …), …` for `rows` rows.
fn insert_statement(rows: usize) -> String {
    let mut sql = format!("INSERT INTO activity ({}) VALUES ", COLUMNS.join(", "));
    for row in 0..rows {
        if row > 0 {
            sql.push_str(", ");
        }
        let first = row * COLUMNS.len() + 1;
        let numbered: Vec<String> = (first..first + COLUMNS.len())
            .map(|n| format!("?{n}"))
            .collect();
        sql.push('(');
        sql.push_str(&numbered.join(", "));
        sql.push(')');
    }
    sql
}

/// One row's values, in the order of [`COLUMNS`].
fn row_params(row: &Activity) -> [Param<'_>; 11] {
    [
        Param::Int(row.at_ms),
        Param::Text(&row.request_id),
        Param::OptText(row.token.as_deref()),
        Param::Text(&row.tool),
        Param::Text(&row.status),
        Param::Int(row.duration_us),
        Param::Int(row.request_bytes),
        Param::Int(row.response_bytes),
        Param::OptText(row.arguments.as_deref()),
        Param::OptText(row.replica.as_deref()),
        Param::Text(&row.method),
    ]
}

impl Store {
    /// Appends `rows` in one transaction and drops rows older than `keep_after_ms`. Rows go in
    /// chunks of up to [`ROWS_PER_INSERT`] per statement (`insert_chunk`), so a batch runs a few
    /// statements, not one per row.
    pub fn record_activity(&self, rows: &[Activity], keep_after_ms: i64) -> Result<(), StateError> {
        self.db.transaction(Mode::Write, |tx| {
            let mut rest = rows;
            while !rest.is_empty() {
                let (size, sql) = insert_chunk(rest.len());
                let (chunk, after) = rest.split_at(size.min(rest.len()));
                let params: Vec<Param<'_>> = chunk.iter().flat_map(row_params).collect();
                tx.execute(sql, &params)?;
                rest = after;
            }
            tx.execute(
                "DELETE FROM activity WHERE at_ms < ?1",
                &[Param::Int(keep_after_ms)],
            )?;
            Ok(())
        })
    }

    /// Keeps the newest `keep` rows and deletes the rest; how many it deleted. Rows are
    /// numbered as they are inserted, so the newest are the highest row ids.
    pub fn keep_newest_activity(&self, keep: u64) -> Result<u64, StateError> {
        let offset = i64::try_from(keep.max(1)).unwrap_or(i64::MAX);
        self.db.transaction(Mode::Write, |tx| {
            // Fewer rows than `keep`: the subquery is NULL, and nothing is below NULL.
            tx.execute(
                "DELETE FROM activity WHERE rowid < (SELECT rowid FROM activity ORDER BY rowid DESC LIMIT 1 OFFSET ?1)",
                &[Param::Int(offset.saturating_sub(1))],
            )
        })
    }

    /// The newest rows matching `query`.
    pub fn activity(&self, query: &ActivityQuery) -> Result<Vec<Activity>, StateError> {
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let offset = i64::try_from(query.offset).unwrap_or(i64::MAX);
        let filters = Filters::of(query);
        let sql = format!(
            "SELECT {SELECTED} FROM activity WHERE {FILTERS} ORDER BY at_ms DESC, rowid DESC LIMIT ?6 OFFSET ?7"
        );
        let rows = self.db.transaction(Mode::Read, |tx| {
            let mut params = filters.params().to_vec();
            params.extend([Param::Int(limit), Param::Int(offset)]);
            tx.query(&sql, &params)
        })?;
        rows.iter().map(|row| activity_of(row, 0)).collect()
    }

    /// Up to `limit` rows matching `query` after `after` (from the oldest when `None`), oldest
    /// first, each with the cursor that continues after it: an export reads the log in such
    /// pages, each its own short read, so a long export never holds a transaction open.
    pub fn activity_after(
        &self,
        query: &ActivityQuery,
        after: Option<ExportCursor>,
        limit: usize,
    ) -> Result<Vec<(ExportCursor, Activity)>, StateError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let after = after.unwrap_or(ExportCursor {
            at_ms: i64::MIN,
            rowid: i64::MIN,
        });
        let filters = Filters::of(query);
        let sql = format!(
            "SELECT rowid, {SELECTED} FROM activity WHERE {FILTERS}
               AND (at_ms > ?6 OR (at_ms = ?6 AND rowid > ?7))
             ORDER BY at_ms, rowid LIMIT ?8"
        );
        let rows = self.db.transaction(Mode::Read, |tx| {
            let mut params = filters.params().to_vec();
            params.extend([
                Param::Int(after.at_ms),
                Param::Int(after.rowid),
                Param::Int(limit),
            ]);
            tx.query(&sql, &params)
        })?;
        rows.iter()
            .map(|row| {
                let activity = activity_of(row, 1)?;
                let cursor = ExportCursor {
                    at_ms: activity.at_ms,
                    rowid: row.int(0)?,
                };
                Ok((cursor, activity))
            })
            .collect()
    }

    /// Rows since `since_ms` counted by tool and outcome (every replica's).
    pub fn activity_counts(&self, since_ms: i64) -> Result<Vec<ActivityCount>, StateError> {
        let rows = self.db.transaction(Mode::Read, |tx| {
            tx.query(
                "SELECT tool, status, COUNT(*) FROM activity WHERE at_ms >= ?1 GROUP BY tool, status",
                &[Param::Int(since_ms)],
            )
        })?;
        rows.iter()
            .map(|row| {
                Ok(ActivityCount {
                    tool: row.text(0)?,
                    status: row.text(1)?,
                    count: row.int(2)?,
                })
            })
            .collect()
    }
}

/// An [`ActivityQuery`]'s filters as the parameters of [`FILTERS`].
struct Filters {
    token: Option<String>,
    tool_pattern: Option<String>,
    status: Option<String>,
    no_token: bool,
    since_ms: i64,
}

impl Filters {
    fn of(query: &ActivityQuery) -> Filters {
        let no_token = query.token.as_deref() == Some(ActivityQuery::NO_TOKEN);
        // The tool filter matches part of the name, in any case: `weather` finds
        // `fixture:weather` (`%`, `_` and `\` in it stand for themselves).
        let tool_pattern = query.tool.as_deref().map(|tool| {
            let escaped = tool
                .to_lowercase()
                .replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_");
            format!("%{escaped}%")
        });
        Filters {
            token: query.token.clone().filter(|_| !no_token),
            tool_pattern,
            status: query.status.clone(),
            no_token,
            since_ms: query.since_ms.unwrap_or(i64::MIN),
        }
    }

    fn params(&self) -> [Param<'_>; 5] {
        [
            Param::OptText(self.token.as_deref()),
            Param::OptText(self.tool_pattern.as_deref()),
            Param::OptText(self.status.as_deref()),
            Param::Int(i64::from(self.no_token)),
            Param::Int(self.since_ms),
        ]
    }
}

/// The [`Activity`] in `row`'s columns [`SELECTED`], starting at column `first`.
fn activity_of(row: &crate::sql::Row, first: usize) -> Result<Activity, StateError> {
    Ok(Activity {
        at_ms: row.int(first)?,
        request_id: row.text(first + 1)?,
        token: row.opt_text(first + 2)?,
        tool: row.text(first + 3)?,
        status: row.text(first + 4)?,
        duration_us: row.int(first + 5)?,
        request_bytes: row.int(first + 6)?,
        response_bytes: row.int(first + 7)?,
        arguments: row.opt_text(first + 8)?,
        replica: row.opt_text(first + 9)?,
        method: row.text(first + 10)?,
    })
}

#[cfg(test)]
mod statement_tests {
    use super::*;

    #[test]
    fn a_batch_goes_in_power_of_two_chunks_each_statement_numbered_in_row_order() {
        let columns = COLUMNS.join(", ");
        assert_eq!(
            insert_chunk(1),
            (
                1,
                format!(
                    "INSERT INTO activity ({columns}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
                )
                .as_str()
            )
        );
        let (two, sql) = insert_chunk(3);
        assert_eq!(two, 2);
        assert!(sql.ends_with("?11), (?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)"));
        let sizes: Vec<usize> = [63, 64, 65, 1000].map(|rows| insert_chunk(rows).0).to_vec();
        assert_eq!(sizes, [32, 64, 64, 64]);
        let (size, full) = insert_chunk(ROWS_PER_INSERT);
        assert_eq!(full.matches('(').count(), size + 1);
        assert!(full.ends_with(&format!("?{})", ROWS_PER_INSERT * COLUMNS.len())));
        assert!(
            std::ptr::eq(insert_chunk(5).1, insert_chunk(4).1),
            "written once"
        );
    }
}
