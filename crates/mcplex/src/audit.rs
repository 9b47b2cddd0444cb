//! The audit writer: finished requests (tool calls and every other request that reached an
//! upstream) from the gateway and the operators' actions from the management API, written to
//! the state database in batches off the request path,
//! with old rows pruned by the retention settings (days, and rows when `audit_retention_rows`
//! caps them) and, with `audit_sink`, each row also appended as a line of JSON to a file or
//! stdout for a log shipper. A batch gathers the records of up to [`LINGER`] after its first
//! one, so that under load one transaction (and one fsync) carries many calls instead of a few;
//! old rows are pruned at most every [`PRUNE_EVERY`].

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use mcplex_config::{AuditSettings, AuditSink};
use mcplex_dispatch::{Audit, AuditRecord};
use mcplex_state::{Activity, Store};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Records waiting to be written; when full, new ones are dropped (calls never wait).
const QUEUE: usize = 8192;
const BATCH: usize = 512;
const DAY_MS: i64 = 24 * 60 * 60 * 1000;
/// How long a batch waits for more records after its first: the most a row is written late.
const LINGER: Duration = Duration::from_millis(100);
/// How often rows past the retention period are deleted.
const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// Where the gateway reports to the audit log's writer: its calls (dispatch's [`Audit`]) and the
/// operators' actions (`operator_audit.rs`), written in the same batches and to the same sink.
pub struct AuditLog {
    pub calls: Audit,
    pub actions: ActionLog,
}

/// Where the operators' actions go (a row each, as `operator_audit.rs` builds it). Unbounded,
/// unlike the calls' queue: actions come at the pace of people with the operator's credentials,
/// and none is dropped when the writer is behind.
#[derive(Clone)]
pub struct ActionLog(mpsc::UnboundedSender<Activity>);

impl ActionLog {
    /// A log whose rows go to the receiver returned, for tests of what is written.
    #[cfg(test)]
    pub fn for_tests() -> (ActionLog, mpsc::UnboundedReceiver<Activity>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        (ActionLog(sender), receiver)
    }

    /// Queues `row` for the writer (the request that made it never waits).
    pub fn record(&self, row: Activity) {
        if self.0.send(row).is_err() {
            tracing::warn!(
                "an operator's action was not written to the audit log: its writer has stopped"
            );
        }
    }
}

/// Starts the audit log's writer unless `settings` turn it off, and returns where the gateway
/// reports to it. Each row names `replica`, the gateway that served the call, so that one log of
/// several gateways says which. A sink that cannot be opened stops the start.
pub fn start(
    store: Arc<Store>,
    settings: AuditSettings,
    replica: String,
) -> anyhow::Result<Option<AuditLog>> {
    if settings.retention_days == 0 {
        return Ok(None);
    }
    let mut sink = settings.sink.as_ref().map(Sink::open).transpose()?;
    let (records, calls) = mpsc::channel::<AuditRecord>(QUEUE);
    let (actions, taken_actions) = mpsc::unbounded_channel::<Activity>();
    let log = AuditLog {
        calls: Audit::new(records, settings.arguments),
        actions: ActionLog(actions),
    };
    let retention_ms = i64::from(settings.retention_days) * DAY_MS;
    let keep_rows = settings.retention_rows;
    let mut queues = Queues {
        calls,
        actions: taken_actions,
        calls_open: true,
        actions_open: true,
        replica,
    };
    tokio::spawn(async move {
        let mut pruned: Option<Instant> = None;
        while let Some(first) = queues.next().await {
            let batch = queues.gather(first).await;
            let store = store.clone();
            let prune = pruned.is_none_or(|at| at.elapsed() >= PRUNE_EVERY);
            let keep_after = if prune {
                pruned = Some(Instant::now());
                mcplex_state::now_unix() * 1000 - retention_ms
            } else {
                // Deletes nothing, through the index: rows were pruned less than a minute ago.
                i64::MIN
            };
            let mut taken_sink = sink.take();
            let written = tokio::task::spawn_blocking(move || {
                if let Some(sink) = taken_sink.as_mut() {
                    sink.append(&batch);
                }
                let written = store.record_activity(&batch, keep_after);
                if let (true, Some(keep)) = (prune, keep_rows)
                    && let Err(e) = store.keep_newest_activity(keep)
                {
                    tracing::warn!("audit rows past audit_retention_rows not deleted: {e}");
                }
                (taken_sink, written)
            })
            .await;
            match written {
                Ok((taken_sink, written)) => {
                    sink = taken_sink;
                    if let Err(e) = written {
                        tracing::warn!("audit records not written: {e}");
                    }
                }
                Err(e) => tracing::warn!("audit writer failed: {e}"),
            }
        }
    });
    Ok(Some(log))
}

/// `audit_sink`: where each row is also appended as one line of JSON (as `mcplex activity
/// export` writes it) when its batch is written.
enum Sink {
    Stdout,
    File(std::fs::File),
}

impl Sink {
    fn open(sink: &AuditSink) -> anyhow::Result<Sink> {
        use std::os::unix::fs::OpenOptionsExt;
        Ok(match sink {
            AuditSink::Stdout => Sink::Stdout,
            AuditSink::File(path) => Sink::File(
                std::fs::OpenOptions::new()
                    .append(true)
                    .create(true)
                    .mode(0o600)
                    .open(path)
                    .with_context(|| format!("cannot open audit_sink {}", path.display()))?,
            ),
        })
    }

    /// Appends `rows`, one line each, in one write; a failure is logged and loses only these
    /// lines (the store keeps the rows).
    fn append(&mut self, rows: &[Activity]) {
        let mut lines = String::new();
        for row in rows {
            let entry = crate::api_views::entry_of(row.clone());
            lines.push_str(&serde_json::to_string(&entry).unwrap_or_default());
            lines.push('\n');
        }
        let written = match self {
            Sink::Stdout => crate::output::chunk(&lines),
            Sink::File(file) => file
                .write_all(lines.as_bytes())
                .map_err(anyhow::Error::from),
        };
        if let Err(e) = written {
            tracing::warn!("audit lines not appended to audit_sink: {e:#}");
        }
    }
}

/// The writer's two queues: the calls' records and the operators' actions.
struct Queues {
    calls: mpsc::Receiver<AuditRecord>,
    actions: mpsc::UnboundedReceiver<Activity>,
    calls_open: bool,
    actions_open: bool,
    replica: String,
}

impl Queues {
    /// The next row from either queue; `None` once both are closed (the gateway is gone).
    async fn next(&mut self) -> Option<Activity> {
        tokio::select! {
            Some(record) = self.calls.recv() => Some(row(record, &self.replica)),
            Some(action) = self.actions.recv() => Some(action),
            else => None,
        }
    }

    /// `first` and the rows that arrive within [`LINGER`] after it, at most [`BATCH`]. Ends
    /// early when both queues are closed, so the last rows are still written.
    async fn gather(&mut self, first: Activity) -> Vec<Activity> {
        let mut batch = vec![first];
        // One timer for the whole batch, not one per record.
        let linger = tokio::time::sleep(LINGER);
        tokio::pin!(linger);
        while batch.len() < BATCH && (self.calls_open || self.actions_open) {
            tokio::select! {
                biased;
                record = self.calls.recv(), if self.calls_open => match record {
                    Some(record) => batch.push(row(record, &self.replica)),
                    None => self.calls_open = false,
                },
                action = self.actions.recv(), if self.actions_open => match action {
                    Some(action) => batch.push(action),
                    None => self.actions_open = false,
                },
                () = &mut linger => break,
            }
        }
        batch
    }
}

fn row(record: AuditRecord, replica: &str) -> Activity {
    Activity {
        at_ms: record.at_ms,
        request_id: record.request_id,
        token: record.token.map(|t| t.to_string()),
        tool: record.target,
        status: record.status.as_str().to_owned(),
        duration_us: i64::try_from(record.duration.as_micros()).unwrap_or(i64::MAX),
        request_bytes: i64::try_from(record.request_bytes).unwrap_or(i64::MAX),
        response_bytes: i64::try_from(record.response_bytes).unwrap_or(i64::MAX),
        arguments: record.arguments.map(|a| a.to_string()),
        replica: Some(replica.to_owned()),
        method: record.method.as_str().to_owned(),
    }
}
