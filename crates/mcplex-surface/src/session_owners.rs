//! Who opened each session, and how many sessions each credential holds. A session answers
//! only the credential that opened it: another token's request with its `Mcp-Session-Id`
//! (a call, its GET stream, a DELETE) is answered exactly as an unknown session is. Each
//! credential may hold `max_sessions_per_caller` sessions, so one caller cannot take every
//! session of the gateway; the operator (the local user, the API key) has no such quota.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Who opened a session: an agent token's name or `oauth:<subject>`; `None` for the operator.
pub(crate) type Owner = Option<Arc<str>>;

/// The owners of every session of the gateway, over all routes.
pub(crate) struct Owners {
    max_per_caller: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    by_session: HashMap<String, Owner>,
    /// Sessions held or being opened, per credential (never the operator).
    held: HashMap<Arc<str>, usize>,
}

impl Owners {
    pub(crate) fn new(max_per_caller: usize) -> Owners {
        Owners {
            max_per_caller,
            state: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn max_per_caller(&self) -> usize {
        self.max_per_caller
    }

    /// Takes a place for a session `owner` is opening; false when it holds its quota.
    pub(crate) fn reserve(&self, owner: &Owner) -> bool {
        let Some(name) = owner else { return true };
        let mut state = self.lock();
        let held = state.held.entry(name.clone()).or_default();
        if *held >= self.max_per_caller {
            return false;
        }
        *held += 1;
        true
    }

    /// Gives back a place reserved for a session that was not opened.
    pub(crate) fn unreserve(&self, owner: &Owner) {
        if let Some(name) = owner {
            release(&mut self.lock(), name);
        }
    }

    /// `owner` opened `session` (on a place it reserved).
    pub(crate) fn claim(&self, session: &str, owner: Owner) {
        self.lock().by_session.insert(session.to_owned(), owner);
    }

    /// Whether `owner` may use `session`: one it opened, or one nobody claimed (an unknown
    /// session, which the session manager refuses).
    pub(crate) fn usable_by(&self, session: &str, owner: &Owner) -> bool {
        self.lock()
            .by_session
            .get(session)
            .is_none_or(|opener| opener == owner)
    }

    /// `session` ended: its owner's place is free again.
    pub(crate) fn ended(&self, session: &str) {
        let mut state = self.lock();
        if let Some(Some(name)) = state.by_session.remove(session) {
            release(&mut state, &name);
        }
    }
}

fn release(state: &mut State, name: &Arc<str>) {
    if let Some(held) = state.held.get_mut(name) {
        *held = held.saturating_sub(1);
        if *held == 0 {
            state.held.remove(name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_answers_its_opener_only_and_a_quota_holds_per_caller() {
        let owners = Owners::new(2);
        let (alice, bob): (Owner, Owner) = (Some("alice".into()), Some("bob".into()));
        assert!(owners.reserve(&alice) && owners.reserve(&alice));
        assert!(!owners.reserve(&alice), "alice holds her quota");
        assert!(owners.reserve(&bob), "bob is not denied by alice");
        assert!(owners.reserve(&None), "the operator has no quota");
        owners.claim("s1", alice.clone());
        owners.claim("s2", alice.clone());
        owners.unreserve(&bob);
        owners.claim("op", None);
        assert!(owners.usable_by("s1", &alice));
        assert!(!owners.usable_by("s1", &bob));
        assert!(
            !owners.usable_by("s1", &None),
            "not even the operator's credential"
        );
        assert!(!owners.usable_by("op", &alice));
        assert!(owners.usable_by("unknown", &bob));
        owners.ended("s1");
        assert!(owners.reserve(&alice), "an ended session frees a place");
    }
}
