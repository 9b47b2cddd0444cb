//! The operators' actions in the audit log: every state-changing request of the management API
//! (an approval, a quarantine, a token made, limited or revoked, an upstream login begun) is one
//! row, written by a layer around those routes so that no route can forget it. The row names
//! who acted (`operator:<person>` for someone signed in at the issuer, `operator:api-key` for
//! the API key or a session opened with it, an agent's token name for the one change an agent
//! may make, forgetting its own login to a server), the request (`method` `api POST`, `tool` the
//! path), and the outcome (`ok`, or `refused`/`failed` with the HTTP status); a change the
//! `/api` guard refuses a signed-in viewer is a row too ([`Actions::refused`]). Rows go through
//! the calls' writer (`audit.rs`): the same retention, the same `audit_sink`, and no row when
//! the audit log is off.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use mcplex_state::Activity;

use crate::api::ApiState;
use crate::api_session::SessionActor;

/// How an operator is named in the audit log's `token` column (no agent token may be).
pub const OPERATOR_PREFIX: &str = mcplex_state::OPERATOR_CALLER_PREFIX;

/// Whether a request to `path` would change something: what the audit log records.
fn changes(method: &Method, path: &str) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
        && path != mcplex_api::paths::IDENTITY
}

/// Records the request when it changes something.
pub async fn record(State(state): State<ApiState>, request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let changes = changes(&method, &path);
    // An agent acting on its own (forgetting its login to a server) is named as its calls are.
    let agent = request
        .extensions()
        .get::<mcplex_surface::Caller>()
        .and_then(|caller| caller.token.clone());
    let actor = match (agent, request.extensions().get::<SessionActor>()) {
        (Some(agent), _) => agent.to_string(),
        (None, Some(SessionActor(Some(person)))) => format!("{OPERATOR_PREFIX}{person}"),
        (None, _) => format!("{OPERATOR_PREFIX}api-key"),
    };
    let started = std::time::Instant::now();
    let response = next.run(request).await;
    if !changes {
        return response;
    }
    // None when the audit log is off (`audit_retention_days` 0, a cold setting).
    let Some(actions) = &state.actions else {
        return response;
    };
    let status = response.status();
    let outcome = if status.is_success() {
        "ok".to_owned()
    } else if status.is_client_error() {
        format!("refused ({})", status.as_u16())
    } else {
        format!("failed ({})", status.as_u16())
    };
    let took = i64::try_from(started.elapsed().as_micros()).unwrap_or(i64::MAX);
    actions.write(actor, &method, path, outcome, took);
    response
}

/// Where the operators' actions go: the audit writer, with the replica as its rows name it.
/// The audited routes write through it, and so does the `/api` guard for a change it refused a
/// signed-in person (a viewer asking what only operators may), which no route sees.
#[derive(Clone)]
pub struct Actions {
    log: crate::audit::ActionLog,
    /// [`replica`] of the gateway's address, made once.
    replica: String,
    /// Refusals written in the current minute: a viewer may send as many as it likes, and the
    /// action queue has no cap (actions let through come at people's pace).
    refusals: Arc<Mutex<RefusalWindow>>,
}

/// At most [`REFUSALS_PER_MINUTE`] refusal rows a minute on a replica; the rest are counted and
/// said in the log once the minute is over.
#[derive(Default)]
struct RefusalWindow {
    minute: i64,
    written: u32,
    dropped: u32,
}

const REFUSALS_PER_MINUTE: u32 = 60;
/// How much of a refused path a row keeps: a viewer chooses the path.
const REFUSED_PATH_CHARS: usize = 256;

impl Actions {
    pub fn new(log: crate::audit::ActionLog, address: &str) -> Actions {
        Actions {
            log,
            replica: replica(address),
            refusals: Arc::default(),
        }
    }

    /// `person` was refused `method` `path` with 403: a row when it would have changed
    /// something (as for operators, reads are not actions: a viewer's dashboard asks for pages
    /// only operators see on every poll).
    pub fn refused(&self, person: &str, method: &Method, path: &str) {
        if !changes(method, path) || !self.may_write_refusal() {
            return;
        }
        let actor = format!("{OPERATOR_PREFIX}{person}");
        let path: String = path.chars().take(REFUSED_PATH_CHARS).collect();
        self.write(actor, method, path, "refused (403)".to_owned(), 0);
    }

    /// Whether this minute's refusals leave room for one more row.
    fn may_write_refusal(&self) -> bool {
        let minute = mcplex_state::now_unix() / 60;
        let mut window = self.refusals.lock().unwrap_or_else(PoisonError::into_inner);
        if window.minute != minute {
            if window.dropped > 0 {
                tracing::warn!(
                    "{} refused changes by signed-in viewers were not written to the audit log (at most {REFUSALS_PER_MINUTE} a minute)",
                    window.dropped
                );
            }
            *window = RefusalWindow {
                minute,
                ..RefusalWindow::default()
            };
        }
        if window.written >= REFUSALS_PER_MINUTE {
            window.dropped += 1;
            return false;
        }
        window.written += 1;
        true
    }

    /// One action's row: who (`actor`), the request, its outcome, how long it took. Written by
    /// the audit writer with the calls, and to `audit_sink` with them: nothing waits for the
    /// store.
    fn write(&self, actor: String, method: &Method, path: String, outcome: String, took_us: i64) {
        self.log.record(Activity {
            at_ms: mcplex_state::now_unix().saturating_mul(1000),
            request_id: next_action_id(),
            token: Some(actor),
            tool: path,
            status: outcome,
            duration_us: took_us,
            request_bytes: 0,
            response_bytes: 0,
            arguments: None,
            replica: Some(self.replica.clone()),
            method: format!("api {method}"),
        });
    }
}

/// The replica as the calls' rows name it (`host:port`).
fn replica(address: &str) -> String {
    let port = address.rsplit(':').next().unwrap_or(address);
    format!("{}:{port}", mcplex_runtime::follow::host_name())
}

/// A request id for an action (calls have theirs from the dispatch ledger).
fn next_action_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "op-{:x}-{:x}",
        mcplex_state::now_unix(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_written_at_most_sixty_a_minute_with_their_path_cut() {
        let (log, mut rows) = crate::audit::ActionLog::for_tests();
        let actions = Actions::new(log, "127.0.0.1:8080");
        let long = format!("/api/v1/{}", "x".repeat(1000));
        for _ in 0..200 {
            actions.refused("mallory", &Method::POST, &long);
        }
        actions.refused("mallory", &Method::GET, "/api/v1/tokens");
        let mut written = Vec::new();
        while let Ok(row) = rows.try_recv() {
            written.push(row);
        }
        // Up to sixty more when the minute turned during the loop.
        assert!((60..=120).contains(&written.len()), "{}", written.len());
        assert!(written.len() < 200, "capped");
        assert!(
            written
                .iter()
                .all(|row| row.tool.chars().count() == REFUSED_PATH_CHARS)
        );
        assert!(
            written.iter().all(|row| row.method == "api POST"),
            "a read is no action"
        );
    }
}
