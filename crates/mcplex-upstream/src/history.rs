//! A server's history as the supervisor lived it: its last events (connecting, ready, failed,
//! lost, restarted by an operator), each with when and why, for the dashboard's timeline; and
//! from the same record its failures of the last ten minutes, so that a server that comes back
//! after every crash is not shown as healthy because it happens to be up between two of them.

use std::collections::VecDeque;
use std::sync::PoisonError;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mcplex_protocol::{ServerEvent, ServerEventKind};

use crate::succession::PREDECESSOR_WAIT;
use crate::supervisor::{ServerSlot, Upstreams};

/// How far back failures count.
pub const FAILURE_WINDOW: Duration = Duration::from_secs(600);
/// The most events remembered per server (a restart keeps them).
pub const REMEMBERED_EVENTS: usize = 64;

/// A server's last events, oldest first.
#[derive(Debug, Default)]
pub(crate) struct History {
    events: VecDeque<(Instant, ServerEvent)>,
}

impl History {
    /// Records `kind` now, with `detail` (already redacted).
    pub(crate) fn record(&mut self, kind: ServerEventKind, detail: Option<String>) {
        if self.events.len() == REMEMBERED_EVENTS {
            self.events.pop_front();
        }
        let at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let event = ServerEvent {
            at_ms,
            kind,
            detail,
        };
        self.events.push_back((Instant::now(), event));
    }

    /// The events remembered, oldest first.
    pub(crate) fn events(&self) -> Vec<ServerEvent> {
        self.events.iter().map(|(_, event)| event.clone()).collect()
    }

    /// The failures within [`FAILURE_WINDOW`], and the last one's reason.
    pub(crate) fn lately(&self) -> Failures {
        let since = Instant::now().checked_sub(FAILURE_WINDOW);
        let mut recent = 0u32;
        let mut last = None;
        for (at, event) in &self.events {
            if event.kind.is_failure() && since.is_none_or(|since| *at >= since) {
                recent = recent.saturating_add(1);
                last = event.detail.clone();
            }
        }
        Failures { recent, last }
    }
}

impl ServerSlot {
    /// Records an event of this server (`detail` already redacted).
    pub(crate) fn record(&self, kind: ServerEventKind, detail: Option<String>) {
        self.history
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .record(kind, detail);
    }
}

impl Upstreams {
    /// Restarts `server` as an operator asked: its supervisor is stopped (its process
    /// terminated, its connection closed) and a new one takes its place with the same config,
    /// its history going on, starting once the old one has ended (at most
    /// [`PREDECESSOR_WAIT`]): a server holding a lock or a port finds it free. Returns once the
    /// old process has ended (or that wait is over); false when no such server runs.
    pub async fn restart(&self, server: &str) -> bool {
        if self.shutdown.is_cancelled() {
            return false;
        }
        let old = {
            let mut servers = self.servers.write().unwrap_or_else(PoisonError::into_inner);
            if self.shutdown.is_cancelled() {
                return false;
            }
            let Some(old) = servers.remove(server) else {
                return false;
            };
            tracing::info!(server = %server, "restarting upstream: an operator asked");
            self.stop_slot(server, &old);
            old.record(ServerEventKind::Restarted, None);
            self.start_slot_with(&mut servers, &old.config, old.history.clone());
            old
        };
        let _ = tokio::time::timeout(PREDECESSOR_WAIT, old.finished.cancelled()).await;
        true
    }

    /// What went wrong with `server` lately (`None`: no such server).
    pub fn failures(&self, server: &str) -> Option<Failures> {
        let slot = self.slot(server)?;
        let failures = slot
            .history
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .lately();
        Some(failures)
    }

    /// `server`'s events, oldest first (`None`: no such server).
    pub fn history(&self, server: &str) -> Option<Vec<ServerEvent>> {
        let slot = self.slot(server)?;
        let events = slot
            .history
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .events();
        Some(events)
    }
}

/// A server's failures within the last ten minutes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Failures {
    pub recent: u32,
    /// The last one's reason (redacted), when there was one in the window.
    pub last: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_counted_within_the_window_and_the_last_reason_kept() {
        let mut history = History::default();
        assert_eq!(history.lately(), Failures::default());
        history.record(ServerEventKind::Connecting, None);
        history.record(ServerEventKind::Ready, Some("3 tools".to_owned()));
        for reason in ["exit status: 1", "exit status: 2"] {
            history.record(ServerEventKind::Lost, Some(reason.to_owned()));
        }
        history.record(ServerEventKind::Failed, Some("exit status: 3".to_owned()));
        history.record(ServerEventKind::Restarted, None);
        let lately = history.lately();
        assert_eq!(
            lately.recent, 3,
            "ready, connecting and restarts are not failures"
        );
        assert_eq!(lately.last.as_deref(), Some("exit status: 3"));
        let kinds: Vec<_> = history.events().iter().map(|e| e.kind).collect();
        assert_eq!(
            kinds,
            [
                ServerEventKind::Connecting,
                ServerEventKind::Ready,
                ServerEventKind::Lost,
                ServerEventKind::Lost,
                ServerEventKind::Failed,
                ServerEventKind::Restarted
            ]
        );
        for _ in 0..100 {
            history.record(ServerEventKind::Failed, Some("again".to_owned()));
        }
        assert_eq!(history.events().len(), REMEMBERED_EVENTS, "bounded");
        assert_eq!(history.lately().recent, 64);
    }
}
