//! The audit log as an export, oldest first, in JSON Lines (each row as `mcplex activity
//! --json` and `GET /api/v1/activity` show it) or CSV (RFC 4180, a header row, the time also as
//! RFC 3339 for spreadsheets). `mcplex activity export` and `GET /api/v1/activity/export` both
//! write through [`Export`], page by page ([`PAGE`] rows, each page its own short read of the
//! store), so an export of any size holds neither a transaction nor the whole log.

use std::time::{SystemTime, UNIX_EPOCH};

use mcplex_api::ActivityEntry;
use mcplex_state::{ActivityQuery, ExportCursor, StateError, Store};

/// Rows read from the store at a time.
pub const PAGE: usize = 1000;

/// How the rows are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Jsonl,
    Csv,
}

impl ExportFormat {
    /// `jsonl` or `csv`.
    pub fn parse(text: &str) -> Result<ExportFormat, String> {
        match text {
            "jsonl" => Ok(ExportFormat::Jsonl),
            "csv" => Ok(ExportFormat::Csv),
            other => Err(format!(
                "unknown export format {:?}: use jsonl or csv",
                shown(other)
            )),
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            ExportFormat::Jsonl => "application/jsonl",
            ExportFormat::Csv => "text/csv; charset=utf-8",
        }
    }
}

/// The CSV columns, in order.
const CSV_COLUMNS: [&str; 12] = [
    "at",
    "at_ms",
    "request_id",
    "token",
    "method",
    "tool",
    "status",
    "duration_us",
    "request_bytes",
    "response_bytes",
    "replica",
    "arguments",
];

/// One export in progress: the rows of `query` (its limit and offset are not used) from the
/// oldest on.
pub struct Export {
    query: ActivityQuery,
    format: ExportFormat,
    after: Option<ExportCursor>,
    started: bool,
    done: bool,
}

impl Export {
    pub fn new(query: ActivityQuery, format: ExportFormat) -> Export {
        Export {
            query,
            format,
            after: None,
            started: false,
            done: false,
        }
    }

    /// The next chunk of the export (the header first, for CSV), or `None` once every row is
    /// written. Rows written meanwhile that sort after the last one read are included.
    pub fn next_chunk(&mut self, store: &Store) -> Result<Option<String>, StateError> {
        if self.done {
            return Ok(None);
        }
        let mut out = String::new();
        if !self.started {
            self.started = true;
            if self.format == ExportFormat::Csv {
                out.push_str(&CSV_COLUMNS.join(","));
                out.push_str("\r\n");
            }
        }
        let rows = store.activity_after(&self.query, self.after, PAGE)?;
        if rows.len() < PAGE {
            self.done = true;
        }
        for (cursor, row) in rows {
            self.after = Some(cursor);
            let entry = crate::api_views::entry_of(row);
            match self.format {
                ExportFormat::Jsonl => {
                    // An entry of strings and numbers always serializes.
                    out.push_str(&serde_json::to_string(&entry).unwrap_or_default());
                    out.push('\n');
                }
                ExportFormat::Csv => csv_row(&mut out, &entry),
            }
        }
        Ok((!out.is_empty() || !self.done).then_some(out))
    }
}

fn csv_row(out: &mut String, entry: &ActivityEntry) {
    let fields = [
        crate::timestamp::millis(u64::try_from(entry.at_ms).unwrap_or(0)),
        entry.at_ms.to_string(),
        entry.request_id.clone(),
        entry.token.clone().unwrap_or_default(),
        entry.method.clone(),
        entry.tool.clone(),
        entry.status.clone(),
        entry.duration_us.to_string(),
        entry.request_bytes.to_string(),
        entry.response_bytes.to_string(),
        entry.replica.clone().unwrap_or_default(),
        entry.arguments.clone().unwrap_or_default(),
    ];
    for (index, field) in fields.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        push_csv_field(out, field);
    }
    out.push_str("\r\n");
}

/// Where a spreadsheet starts a cell, in one locale or another: besides the comma, a
/// semicolon (the list separator where the decimal mark is a comma), a tab, a line break.
const CELL_STARTS: [char; 5] = [',', ';', '\t', '\r', '\n'];

/// What makes a cell a formula when it starts one.
const FORMULA_STARTS: [char; 4] = ['=', '+', '-', '@'];

/// `field` as RFC 4180 writes it: quoted (inner quotes doubled) when it holds a comma, a quote, a
/// semicolon, a tab or a line break. What a spreadsheet would take for a formula is defused with
/// a `'` in front (as OWASP advises): the field itself when it starts with `=`, `+`, `-`, `@`, a
/// tab or a carriage return and is not a number, and every part of it after a character where
/// some spreadsheet starts a cell (a `;`-separated reading of `x;=cmd` would make `=cmd` a
/// cell), so that a tool name or an argument cannot run in the operator's spreadsheet.
fn push_csv_field(out: &mut String, field: &str) {
    let formula =
        field.starts_with(['=', '+', '-', '@', '\t', '\r']) && field.parse::<f64>().is_err();
    if !formula && !field.contains([',', '"', ';', '\t', '\r', '\n']) {
        out.push_str(field);
        return;
    }
    out.push('"');
    if formula {
        out.push('\'');
    }
    let mut after_cell_start = false;
    for c in field.chars() {
        if after_cell_start && FORMULA_STARTS.contains(&c) {
            out.push('\'');
        }
        after_cell_start = CELL_STARTS.contains(&c);
        if c == '"' {
            out.push('"');
        }
        out.push(c);
    }
    out.push('"');
}

/// At most the first 40 characters of a caller's `text`, as a refusal repeats it.
fn shown(text: &str) -> &str {
    text.char_indices()
        .nth(40)
        .map_or(text, |(at, _)| &text[..at])
}

/// What `--since` / `since=` name: an RFC 3339 time (`2026-12-01T00:00:00Z`, or a date) or a
/// duration back from now (`24h`, `7d`), as Unix milliseconds.
pub fn since_ms(text: &str, now: SystemTime) -> Result<i64, String> {
    let at = if let Ok(ago) = humantime::parse_duration(text) {
        now.checked_sub(ago).unwrap_or(UNIX_EPOCH)
    } else if let Ok(at) = humantime::parse_rfc3339_weak(text) {
        at
    } else if let Ok(at) = humantime::parse_rfc3339_weak(&format!("{text} 00:00:00")) {
        at
    } else {
        return Err(format!(
            "cannot read {:?} as a time: give an RFC 3339 time (2026-12-01T08:00:00Z), a date (2026-12-01) or a duration back from now (24h, 7d)",
            shown(text)
        ));
    };
    let ms = at
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis();
    Ok(i64::try_from(ms).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn csv_fields_are_quoted_as_rfc_4180_says_and_formulas_are_defused() {
        let field = |text: &str| {
            let mut out = String::new();
            push_csv_field(&mut out, text);
            out
        };
        assert_eq!(field("fixture:echo"), "fixture:echo");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("two\nlines"), "\"two\nlines\"");
        assert_eq!(field("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(field("@SUM(A1)"), "\"'@SUM(A1)\"");
        assert_eq!(field("-12.5"), "-12.5", "a number is not a formula");
        assert_eq!(field("\t=1+2"), "\"'\t'=1+2\"");
        assert_eq!(field("\r=1"), "\"'\r'=1\"");
        assert_eq!(field(""), "");
        // Read with `;` as the separator, no part may start a formula.
        assert_eq!(field("x;=cmd|' /C calc'!A0;"), "\"x;'=cmd|' /C calc'!A0;\"");
        assert_eq!(field("a;b"), "\"a;b\"");
        assert_eq!(field("a,@b\t+c"), "\"a,'@b\t'+c\"");
    }

    #[test]
    fn since_reads_times_dates_and_durations_back_from_now() {
        let now = UNIX_EPOCH + Duration::from_secs(2_000_000_000);
        assert_eq!(since_ms("1970-01-02T00:00:00Z", now), Ok(86_400_000));
        assert_eq!(since_ms("1970-01-02", now), Ok(86_400_000));
        assert_eq!(since_ms("1h", now), Ok((2_000_000_000 - 3600) * 1000));
        assert_eq!(since_ms("7d", now), Ok((2_000_000_000 - 7 * 86_400) * 1000));
        assert!(since_ms("yesterday", now).is_err());
        let long = "x".repeat(10_000);
        let refusal = since_ms(&long, now).expect_err("not a time");
        assert!(
            refusal.len() < 300,
            "a caller's text is repeated only in part: {refusal}"
        );
        assert!(ExportFormat::parse(&long).expect_err("no format").len() < 120);
    }

    #[test]
    fn the_formats_are_named_jsonl_and_csv() {
        assert_eq!(ExportFormat::parse("jsonl"), Ok(ExportFormat::Jsonl));
        assert_eq!(ExportFormat::parse("csv"), Ok(ExportFormat::Csv));
        assert!(ExportFormat::parse("xml").is_err());
    }
}
