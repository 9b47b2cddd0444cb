//! A server's recent failures (a process that exited, a connection that broke), as the
//! supervisor records them before each backoff: so that a server that comes back after every
//! crash is not shown as healthy because it happens to be up between two of them.

use std::collections::VecDeque;
use std::sync::PoisonError;
use std::time::{Duration, Instant};

use crate::supervisor::ServerSlot;

/// How far back failures count.
pub const FAILURE_WINDOW: Duration = Duration::from_secs(600);
/// The most failures remembered.
const REMEMBERED: usize = 32;

/// What went wrong lately.
#[derive(Debug, Default)]
pub(crate) struct RecentFailures {
    at: VecDeque<Instant>,
    last: Option<String>,
}

impl RecentFailures {
    /// One failure, now, for `reason` (already redacted).
    pub(crate) fn record(&mut self, reason: &str) {
        if self.at.len() == REMEMBERED {
            self.at.pop_front();
        }
        self.at.push_back(Instant::now());
        self.last = Some(reason.to_owned());
    }

    /// The failures within [`FAILURE_WINDOW`], and the last one's reason.
    pub(crate) fn lately(&self) -> Failures {
        let since = Instant::now().checked_sub(FAILURE_WINDOW);
        let count = self
            .at
            .iter()
            .filter(|at| since.is_none_or(|since| **at >= since))
            .count();
        Failures {
            recent: u32::try_from(count).unwrap_or(u32::MAX),
            last: (count > 0).then(|| self.last.clone()).flatten(),
        }
    }
}

impl ServerSlot {
    /// Records a failure of this server (`reason` already redacted).
    pub(crate) fn failed(&self, reason: &str) {
        self.failures
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .record(reason);
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
        let mut failures = RecentFailures::default();
        assert_eq!(failures.lately(), Failures::default());
        for reason in ["exit status: 1", "exit status: 2", "exit status: 3"] {
            failures.record(reason);
        }
        let lately = failures.lately();
        assert_eq!(lately.recent, 3);
        assert_eq!(lately.last.as_deref(), Some("exit status: 3"));
        for _ in 0..100 {
            failures.record("again");
        }
        assert_eq!(failures.lately().recent, 32, "bounded");
    }
}
