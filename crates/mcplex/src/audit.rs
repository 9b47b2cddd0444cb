//! The audit writer: finished requests (tool calls and every other request that reached an
//! upstream) from the gateway, written to the state database in batches
//! off the request path, with old rows pruned by the retention setting.

use std::sync::Arc;

use mcplex_config::AuditSettings;
use mcplex_dispatch::{AuditRecord, Gateway};
use mcplex_state::{Activity, Store};
use tokio::sync::mpsc;

/// Records waiting to be written; when full, new ones are dropped (calls never wait).
const QUEUE: usize = 8192;
const BATCH: usize = 512;
const DAY_MS: i64 = 24 * 60 * 60 * 1000;

/// Attaches the audit log to `gateway` unless `settings` turn it off. Each row names `replica`,
/// the gateway that served the call, so that one log of several gateways says which.
pub fn start(store: Arc<Store>, gateway: &Gateway, settings: AuditSettings, replica: String) {
    if settings.retention_days == 0 {
        return;
    }
    let (records, mut incoming) = mpsc::channel::<AuditRecord>(QUEUE);
    gateway.audit_to(records, settings.arguments);
    let retention_ms = i64::from(settings.retention_days) * DAY_MS;
    tokio::spawn(async move {
        while let Some(first) = incoming.recv().await {
            let mut batch = vec![row(first, &replica)];
            while batch.len() < BATCH {
                match incoming.try_recv() {
                    Ok(record) => batch.push(row(record, &replica)),
                    Err(_) => break,
                }
            }
            let store = store.clone();
            let keep_after = mcplex_state::now_unix() * 1000 - retention_ms;
            let written =
                tokio::task::spawn_blocking(move || store.record_activity(&batch, keep_after))
                    .await;
            match written {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!("audit records not written: {e}"),
                Err(e) => tracing::warn!("audit writer failed: {e}"),
            }
        }
    });
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
