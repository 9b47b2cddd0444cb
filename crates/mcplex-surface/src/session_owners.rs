//! Who opened each session, and how many sessions each credential holds. A session answers
//! only the credential that opened it: another token's request with its `Mcp-Session-Id`
//! (a call, its GET stream, a DELETE) is answered exactly as an unknown session is. Each
//! credential may hold `max_sessions_per_caller` sessions, so one caller cannot take every
//! session of the gateway; the operator (the local user, the API key) has no such quota. In the
//! same way a credential's sessions keep their answer streams for resumption within a share of
//! the gateway's budget for that, so one caller cannot leave none for the others.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use crate::kept_events::KeptBudget;

/// Who opened a session: an agent token's name or `oauth:<subject>`; `None` for the operator.
pub(crate) type Owner = Option<Arc<str>>;

/// The owners of every session of the gateway, over all routes.
pub(crate) struct Owners {
    max_per_caller: usize,
    /// What every session's answer streams keep together (the operator's draw on it directly).
    kept: Arc<KeptBudget>,
    /// Each credential's share of it.
    kept_per_caller: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    by_session: HashMap<String, Owner>,
    /// Sessions held or being opened, per credential (never the operator).
    held: HashMap<Arc<str>, usize>,
    /// The share of the kept budget each credential's sessions draw on, for as long as any of
    /// them (or what they keep) lives: a caller that comes back before its last session's
    /// answer logs are gone draws on the same share, not a new one.
    shares: HashMap<Arc<str>, Weak<KeptBudget>>,
}

impl Owners {
    pub(crate) fn new(
        max_per_caller: usize,
        kept: Arc<KeptBudget>,
        kept_per_caller: usize,
    ) -> Owners {
        Owners {
            max_per_caller,
            kept,
            kept_per_caller,
            state: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `name`'s share of the kept budget: the one its sessions still hold, else a new one (and
    /// the shares nobody holds any more are forgotten).
    fn share_of(&self, state: &mut State, name: &Arc<str>) -> Arc<KeptBudget> {
        if let Some(share) = state.shares.get(name).and_then(Weak::upgrade) {
            return share;
        }
        state.shares.retain(|_, share| share.strong_count() > 0);
        let share = KeptBudget::share_of(&self.kept, self.kept_per_caller);
        state.shares.insert(name.clone(), Arc::downgrade(&share));
        share
    }

    pub(crate) fn max_per_caller(&self) -> usize {
        self.max_per_caller
    }

    /// Takes a place for a session `owner` is opening (`None` when it holds its quota): given
    /// back when the reservation is dropped unclaimed (no session was opened, or the request
    /// was abandoned).
    pub(crate) fn reserve<'a>(&'a self, owner: &Owner) -> Option<Reservation<'a>> {
        let kept = match owner {
            Some(name) => {
                let mut state = self.lock();
                let held = state.held.entry(name.clone()).or_default();
                if *held >= self.max_per_caller {
                    return None;
                }
                *held += 1;
                self.share_of(&mut state, name)
            }
            None => self.kept.clone(),
        };
        Some(Reservation {
            owners: self,
            owner: Some(owner.clone()),
            kept,
        })
    }

    /// Whether `owner` may use `session`: one it opened, or one nobody claimed (an unknown
    /// session, which the session manager refuses).
    pub(crate) fn usable_by(&self, session: &str, owner: &Owner) -> bool {
        self.lock()
            .by_session
            .get(session)
            .is_none_or(|opener| opener == owner)
    }

    /// Every session an agent or OAuth subject opened, with its opener.
    pub(crate) fn opened(&self) -> Vec<(String, Arc<str>)> {
        self.lock()
            .by_session
            .iter()
            .filter_map(|(session, owner)| Some((session.clone(), owner.clone()?)))
            .collect()
    }

    /// `session` ended: its owner's place is free again.
    pub(crate) fn ended(&self, session: &str) {
        let mut state = self.lock();
        if let Some(Some(name)) = state.by_session.remove(session) {
            release(&mut state, &name);
        }
    }
}

/// A place taken for a session being opened.
pub(crate) struct Reservation<'a> {
    owners: &'a Owners,
    /// `None` once claimed.
    owner: Option<Owner>,
    kept: Arc<KeptBudget>,
}

impl Reservation<'_> {
    /// What the session's answer streams keep draws on: its credential's share of the
    /// gateway's budget, or (the operator's) the whole of it.
    pub(crate) fn kept(&self) -> Arc<KeptBudget> {
        self.kept.clone()
    }

    /// The session `session` was opened on this place.
    pub(crate) fn claim(mut self, session: &str) {
        if let Some(owner) = self.owner.take() {
            self.owners
                .lock()
                .by_session
                .insert(session.to_owned(), owner);
        }
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if let Some(Some(name)) = self.owner.take() {
            release(&mut self.owners.lock(), &name);
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
        let owners = Owners::new(2, KeptBudget::new(100), 10);
        let (alice, bob): (Owner, Owner) = (Some("alice".into()), Some("bob".into()));
        let (first, second) = (owners.reserve(&alice), owners.reserve(&alice));
        assert!(owners.reserve(&alice).is_none(), "alice holds her quota");
        assert!(
            owners.reserve(&bob).is_some(),
            "bob is not denied by alice (and his place is given back)"
        );
        first.expect("a place").claim("s1");
        second.expect("a place").claim("s2");
        owners
            .reserve(&None)
            .expect("the operator has no quota")
            .claim("op");
        let abandoned = owners.reserve(&bob);
        drop(abandoned);
        assert!(
            owners.reserve(&bob).is_some() && owners.reserve(&bob).is_some(),
            "bob's abandoned place came back"
        );
        assert!(owners.usable_by("s1", &alice));
        assert!(!owners.usable_by("s1", &bob));
        assert!(
            !owners.usable_by("s1", &None),
            "not even the operator's credential"
        );
        assert!(!owners.usable_by("op", &alice));
        assert!(owners.usable_by("unknown", &bob));
        owners.ended("s1");
        assert!(
            owners.reserve(&alice).is_some(),
            "an ended session frees a place"
        );
    }

    #[test]
    fn a_callers_sessions_share_one_part_of_the_kept_budget() {
        let whole = KeptBudget::new(100);
        let owners = Owners::new(4, whole.clone(), 10);
        let (alice, bob): (Owner, Owner) = (Some("alice".into()), Some("bob".into()));
        let first = owners.reserve(&alice).expect("a place");
        let second = owners.reserve(&alice).expect("a place");
        let theirs = owners.reserve(&bob).expect("a place");
        assert!(
            Arc::ptr_eq(&first.kept(), &second.kept()),
            "one share per caller"
        );
        assert!(!Arc::ptr_eq(&first.kept(), &theirs.kept()));
        let operator = owners.reserve(&None).expect("a place");
        assert!(
            Arc::ptr_eq(&operator.kept(), &whole),
            "the operator's is the whole"
        );
        let mut kept = crate::kept_events::KeptEvents::new(1, 100, 100, Some(first.kept()));
        kept.push(bytes::Bytes::from("x".repeat(11)));
        assert_eq!(whole.used(), 0, "past alice's share of 10");
        kept.push(bytes::Bytes::from("x".repeat(10)));
        assert_eq!(whole.used(), 10, "within it, counted in the whole");
        // Her sessions end while what one kept still lives: she comes back to the same share.
        let share = first.kept();
        drop((first, second));
        let again = owners.reserve(&alice).expect("a place");
        assert!(
            Arc::ptr_eq(&again.kept(), &share),
            "not a fresh share beside the old"
        );
    }
}
