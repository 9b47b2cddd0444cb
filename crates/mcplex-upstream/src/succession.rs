//! A server's processes never overlap: a slot that takes a server's place (an operator's
//! restart, a config edit, an approval change, or the same name started again after it was
//! removed) starts nothing until the slot before it has ended, at most [`PREDECESSOR_WAIT`], so a
//! process holding a lock, a port or a file lets go of it before the next one asks.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The longest a server's new slot waits for the one it replaces to end (the old process is
/// SIGKILLed well before: `wire::stdio`'s grace is 2 s).
pub(crate) const PREDECESSOR_WAIT: Duration = Duration::from_secs(10);

/// The stopped slots that may not have ended yet, by server name (each slot's `finished`).
#[derive(Default)]
pub(crate) struct Successions(Mutex<HashMap<String, CancellationToken>>);

impl Successions {
    /// `server`'s slot whose `finished` this is was stopped: the next slot of that name waits.
    pub(crate) fn stopped(&self, server: &str, finished: &CancellationToken) {
        let mut ending = self.lock();
        ending.retain(|_, finished| !finished.is_cancelled());
        ending.insert(server.to_owned(), finished.clone());
    }

    /// What a new slot of `server` waits for, from now.
    pub(crate) fn predecessor(&self, server: &str) -> Predecessor {
        Predecessor {
            finished: self
                .lock()
                .remove(server)
                .filter(|finished| !finished.is_cancelled()),
            deadline: Instant::now() + PREDECESSOR_WAIT,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, CancellationToken>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The slot a new one replaces, as far as the new one waits for it.
pub(crate) struct Predecessor {
    finished: Option<CancellationToken>,
    deadline: Instant,
}

impl Predecessor {
    /// Resolves once the predecessor has ended (at once without one), or at the deadline.
    pub(crate) async fn ended(&self) {
        if let Some(finished) = &self.finished {
            let _ = tokio::time::timeout_at(self.deadline, finished.cancelled()).await;
        }
    }
}
