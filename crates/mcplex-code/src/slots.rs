//! Who runs next: at most `total` runs at once and at most `per_caller` for one caller; when a
//! slot frees, the waiting caller with the fewest runs in progress goes first (the earliest
//! request among equals). One caller's flood waits behind its own bound, never in front of
//! another caller.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;

pub(crate) struct Slots {
    total: usize,
    per_caller: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    running: usize,
    by_caller: HashMap<Arc<str>, usize>,
    waiting: Vec<Waiter>,
    arrivals: u64,
}

struct Waiter {
    caller: Arc<str>,
    arrival: u64,
    grant: oneshot::Sender<Slot>,
}

/// A run's right to go; dropping it frees the slot for the next waiter.
pub(crate) struct Slot {
    slots: Arc<Slots>,
    caller: Arc<str>,
}

impl Slots {
    pub(crate) fn new(total: usize, per_caller: usize) -> Arc<Slots> {
        Arc::new(Slots {
            total: total.max(1),
            per_caller: per_caller.max(1),
            state: Mutex::default(),
        })
    }

    /// Waits for a slot for `caller`. Dropping the future gives up the place in line.
    pub(crate) async fn acquire(self: &Arc<Self>, caller: &str) -> Slot {
        let (grant, granted) = oneshot::channel();
        let refused = {
            let mut state = self.lock();
            state.arrivals += 1;
            let arrival = state.arrivals;
            state.waiting.push(Waiter {
                caller: caller.into(),
                arrival,
                grant,
            });
            self.dispatch(&mut state)
        };
        drop(refused);
        match granted.await {
            Ok(slot) => slot,
            // The sender lives in `waiting` until it is used; this cannot happen, but if it did
            // the run would go without a slot rather than hang.
            Err(_) => self.grant_now(caller),
        }
    }

    /// Runs in progress: (all, for `caller`).
    #[cfg(test)]
    pub(crate) fn running(&self, caller: &str) -> (usize, usize) {
        let state = self.lock();
        (
            state.running,
            state.by_caller.get(caller).copied().unwrap_or(0),
        )
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn grant_now(self: &Arc<Self>, caller: &str) -> Slot {
        let caller: Arc<str> = caller.into();
        let mut state = self.lock();
        state.running += 1;
        *state.by_caller.entry(caller.clone()).or_default() += 1;
        Slot {
            slots: self.clone(),
            caller,
        }
    }

    /// Grants free slots to waiters, fewest runs first. Returns the slots whose waiter left in
    /// the meantime, to be dropped (freed again) once the lock is released.
    fn dispatch(self: &Arc<Self>, state: &mut State) -> Vec<Slot> {
        let mut refused = Vec::new();
        while state.running < self.total {
            state.waiting.retain(|w| !w.grant.is_closed());
            let next = state
                .waiting
                .iter()
                .enumerate()
                .map(|(at, w)| {
                    let runs = state.by_caller.get(&w.caller).copied().unwrap_or(0);
                    (at, runs, w.arrival)
                })
                .filter(|&(_, runs, _)| runs < self.per_caller)
                .min_by_key(|&(_, runs, arrival)| (runs, arrival));
            let Some((at, _, _)) = next else { break };
            let waiter = state.waiting.remove(at);
            state.running += 1;
            *state.by_caller.entry(waiter.caller.clone()).or_default() += 1;
            let slot = Slot {
                slots: self.clone(),
                caller: waiter.caller,
            };
            if let Err(slot) = waiter.grant.send(slot) {
                refused.push(slot);
            }
        }
        refused
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let refused = {
            let mut state = self.slots.lock();
            state.running = state.running.saturating_sub(1);
            if let Some(runs) = state.by_caller.get_mut(&self.caller) {
                *runs = runs.saturating_sub(1);
                if *runs == 0 {
                    state.by_caller.remove(&self.caller);
                }
            }
            self.slots.dispatch(&mut state)
        };
        drop(refused);
    }
}
