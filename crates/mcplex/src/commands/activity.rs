//! `mcplex activity`: the audit log, newest first, read from the state database (a running
//! gateway keeps writing meanwhile); `mcplex activity export`: all of it, oldest first, as JSON
//! Lines or CSV (`activity_export.rs`).

use std::process::ExitCode;

use anyhow::Result;
use mcplex_api::ActivityEntry;
use mcplex_config::Overrides;
use mcplex_state::ActivityQuery;

use crate::activity_export::{Export, ExportFormat};
use crate::cli::ConfigArgs;
use crate::output::{outln, rowln};

pub fn run(
    args: &ConfigArgs,
    limit: usize,
    token: Option<String>,
    tool: Option<String>,
    as_json: bool,
) -> Result<ExitCode> {
    let config = crate::load::load(args, Overrides::default())?;
    let (store, _) = crate::load::open_store(&config)?;
    let rows = store.activity(&ActivityQuery {
        limit,
        token,
        tool,
        ..ActivityQuery::default()
    })?;
    if as_json {
        let rows: Vec<ActivityEntry> = rows.into_iter().map(crate::api_views::entry_of).collect();
        outln!("{}", serde_json::to_string_pretty(&rows)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{:24} {:16} {:14} {:32} {:18} {:>10} {:>9} {:>9}  REPLICA",
        "TIME (UTC)",
        "REQUEST",
        "TOKEN",
        "TOOL",
        "STATUS",
        "MS",
        "IN B",
        "OUT B"
    )?;
    for a in &rows {
        rowln!(
            "{:24} {:16} {:14} {:32} {:18} {:>10.1} {:>9} {:>9}  {}",
            crate::timestamp::millis(u64::try_from(a.at_ms).unwrap_or(0)),
            a.request_id,
            a.token.as_deref().unwrap_or("-"),
            a.tool,
            a.status,
            a.duration_us as f64 / 1000.0,
            a.request_bytes,
            a.response_bytes,
            a.replica.as_deref().unwrap_or("-")
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `mcplex activity export`: the rows the filters select, oldest first, to stdout.
pub fn export(
    args: &ConfigArgs,
    since: Option<&str>,
    format: &str,
    token: Option<String>,
    tool: Option<String>,
    status: Option<String>,
) -> Result<ExitCode> {
    let format = ExportFormat::parse(format).map_err(anyhow::Error::msg)?;
    let since_ms = since
        .map(|since| crate::activity_export::since_ms(since, std::time::SystemTime::now()))
        .transpose()
        .map_err(|why| anyhow::anyhow!("--since: {why}"))?;
    let config = crate::load::load(args, Overrides::default())?;
    let (store, _) = crate::load::open_store(&config)?;
    let query = ActivityQuery {
        token,
        tool,
        status,
        since_ms,
        ..ActivityQuery::default()
    };
    let mut export = Export::new(query, format);
    while let Some(chunk) = export.next_chunk(&store)? {
        crate::output::chunk(&chunk)?;
    }
    Ok(ExitCode::SUCCESS)
}
