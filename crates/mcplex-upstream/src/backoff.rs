//! The wait after a failed start or a lost connection: the failure recorded once (redacted) in
//! the server's history, status and log, then a backoff that doubles from [`BACKOFF_FIRST`] to
//! [`BACKOFF_MAX`] with the failures in a row.

use std::time::Duration;

use mcplex_protocol::ServerHealth;
use tokio_util::sync::CancellationToken;

use crate::supervisor::{ServerSlot, UpstreamReport, set_health};
use mcplex_protocol::ServerEventKind;

const BACKOFF_FIRST: Duration = Duration::from_millis(250);
const BACKOFF_MAX: Duration = Duration::from_secs(30);

/// Records a failed attempt and waits out the backoff; false when the gateway shuts down.
pub(crate) async fn back_off(
    slot: &ServerSlot,
    emit: &impl Fn(UpstreamReport),
    failures: &mut u32,
    (kind, reason): (ServerEventKind, String),
    shutdown: &CancellationToken,
) -> bool {
    // The one place a server's last error is recorded: redacted here, it is redacted in
    // the log, the status the API and `/readyz` show, the history, and every "not
    // connected" error.
    let reason = slot.redactor.redact(&reason);
    slot.record(kind, Some(reason.clone()));
    *failures = failures.saturating_add(1);
    let backoff = BACKOFF_FIRST
        .saturating_mul(2u32.saturating_pow((*failures).min(16) - 1))
        .min(BACKOFF_MAX);
    let name = &slot.config.name;
    tracing::warn!(server = %name, "upstream unavailable: {reason}; retrying in {}ms", backoff.as_millis());
    set_health(slot, emit, ServerHealth::Unhealthy { reason });
    tokio::select! {
        () = tokio::time::sleep(backoff) => true,
        () = shutdown.cancelled() => false,
    }
}
