//! Events kept for `Last-Event-ID`: the newest of a numbered sequence, capped by count and by
//! bytes, the oldest forgotten first. A session's GET stream keeps its events in one, and so does
//! each answer stream. A log also draws on a [`KeptBudget`]: every answer stream of the gateway
//! on one, so that what the sessions keep together is bounded, however many there are.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;

/// The bytes the [`KeptEvents`] drawing on it hold together, and their cap; a budget may be a
/// share of another (a caller's of the gateway's), its bytes counted in both. A log that would
/// pass it forgets its own oldest events first; one that has none left to forget keeps nothing
/// until others let go.
#[derive(Debug)]
pub(crate) struct KeptBudget {
    used: AtomicUsize,
    max: usize,
    within: Option<Arc<KeptBudget>>,
}

impl KeptBudget {
    pub(crate) fn new(max: usize) -> Arc<KeptBudget> {
        Arc::new(KeptBudget {
            used: AtomicUsize::new(0),
            max,
            within: None,
        })
    }

    /// A share of at most `max` bytes of `whole`.
    pub(crate) fn share_of(whole: &Arc<KeptBudget>, max: usize) -> Arc<KeptBudget> {
        Arc::new(KeptBudget {
            used: AtomicUsize::new(0),
            max,
            within: Some(whole.clone()),
        })
    }

    /// Takes `bytes` from the budget and every budget it is a share of, if they all have them.
    fn take(&self, bytes: usize) -> bool {
        let taken = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|&total| total <= self.max)
            })
            .is_ok();
        if taken && self.within.as_ref().is_some_and(|whole| !whole.take(bytes)) {
            self.used.fetch_sub(bytes, Ordering::AcqRel);
            return false;
        }
        taken
    }

    fn give(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::AcqRel);
        if let Some(whole) = &self.within {
            whole.give(bytes);
        }
    }

    #[cfg(test)]
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }
}

pub(crate) struct KeptEvents {
    /// The number of `events[0]`.
    first: u64,
    events: VecDeque<Bytes>,
    /// The bytes of `events`, all of them taken from `budget`.
    bytes: usize,
    max_events: usize,
    max_bytes: usize,
    budget: Arc<KeptBudget>,
}

impl KeptEvents {
    /// None kept yet; the first event pushed is number `first`.
    pub(crate) fn new(
        first: u64,
        max_events: usize,
        max_bytes: usize,
        budget: Arc<KeptBudget>,
    ) -> KeptEvents {
        KeptEvents {
            first,
            events: VecDeque::new(),
            bytes: 0,
            max_events,
            max_bytes,
            budget,
        }
    }

    /// Keeps `event` as the next number, forgetting the oldest first while either cap or the
    /// budget would be passed. An event that cannot be kept even alone (larger than the byte
    /// cap, or than what the budget has left) is not kept, and neither is any before it: what
    /// is kept never has a hole and always runs to the newest event (a resumption from before
    /// the oldest kept misses what was forgotten, as it always did).
    pub(crate) fn push(&mut self, event: Bytes) {
        let len = event.len();
        while !self.events.is_empty()
            && (self.events.len() >= self.max_events || self.bytes + len > self.max_bytes)
        {
            self.forget_oldest();
        }
        loop {
            if len <= self.max_bytes && self.max_events > 0 && self.budget.take(len) {
                self.bytes += len;
                self.events.push_back(event);
                return;
            }
            if self.events.is_empty() {
                self.first += 1;
                return;
            }
            self.forget_oldest();
        }
    }

    fn forget_oldest(&mut self) {
        if let Some(oldest) = self.events.pop_front() {
            self.bytes -= oldest.len();
            self.budget.give(oldest.len());
            self.first += 1;
        }
    }

    /// The kept events numbered after `after`, oldest first.
    pub(crate) fn after(&self, after: u64) -> impl Iterator<Item = &Bytes> {
        let skip = after.saturating_add(1).saturating_sub(self.first);
        self.events
            .iter()
            .skip(usize::try_from(skip).unwrap_or(usize::MAX))
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.events.len()
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for KeptEvents {
    fn drop(&mut self) {
        self.budget.give(self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbers(kept: &KeptEvents, after: u64) -> Vec<String> {
        kept.after(after)
            .map(|e| String::from_utf8_lossy(e).into_owned())
            .collect()
    }

    #[test]
    fn the_newest_are_kept_within_both_caps_and_numbered_as_pushed() {
        let mut kept = KeptEvents::new(1, 3, 10, KeptBudget::new(usize::MAX));
        for n in 1..=5 {
            kept.push(Bytes::from(n.to_string()));
        }
        assert_eq!(numbers(&kept, 0), ["3", "4", "5"], "three at most");
        assert_eq!(numbers(&kept, 3), ["4", "5"]);
        assert!(numbers(&kept, u64::MAX).is_empty());
        kept.push(Bytes::from("666666"));
        assert_eq!(numbers(&kept, 0), ["4", "5", "666666"]);
        kept.push(Bytes::from("7777"));
        assert_eq!(numbers(&kept, 0), ["666666", "7777"], "ten bytes at most");
        assert_eq!(kept.bytes(), 10);
        kept.push(Bytes::from("x".repeat(11)));
        assert_eq!(kept.len(), 0, "an event over the byte cap is not kept");
        kept.push(Bytes::from("8"));
        assert_eq!(
            numbers(&kept, 7),
            ["8"],
            "numbering goes on past what was forgotten"
        );
    }

    #[test]
    fn the_logs_share_the_budget_and_what_is_kept_always_runs_to_the_newest() {
        let budget = KeptBudget::new(10);
        let mut greedy = KeptEvents::new(1, 100, 100, budget.clone());
        for n in 1..=4 {
            greedy.push(Bytes::from(format!("{n}{n}{n}")));
        }
        assert_eq!(
            numbers(&greedy, 0),
            ["222", "333", "444"],
            "its own oldest go first"
        );
        assert_eq!(budget.used(), 9);

        let mut other = KeptEvents::new(1, 100, 100, budget.clone());
        other.push(Bytes::from("a"));
        assert_eq!(numbers(&other, 0), ["a"]);
        other.push(Bytes::from("bb"));
        assert!(
            numbers(&other, 0).is_empty(),
            "neither the event that does not fit nor any before it"
        );
        assert_eq!(budget.used(), 9);

        drop(greedy);
        assert_eq!(budget.used(), 0, "a log let go gives its bytes back");
        other.push(Bytes::from("ccc"));
        assert_eq!(
            numbers(&other, 2),
            ["ccc"],
            "numbered on past what was not kept"
        );
        assert_eq!(budget.used(), 3);
    }

    #[test]
    fn a_share_is_bounded_by_itself_and_by_the_whole() {
        let whole = KeptBudget::new(10);
        let (alice, bob) = (
            KeptBudget::share_of(&whole, 6),
            KeptBudget::share_of(&whole, 6),
        );
        let mut kept_by_alice = KeptEvents::new(1, 100, 100, alice.clone());
        kept_by_alice.push(Bytes::from("aaaa"));
        kept_by_alice.push(Bytes::from("bbbb"));
        assert_eq!(numbers(&kept_by_alice, 0), ["bbbb"], "her share is 6");
        assert_eq!((alice.used(), whole.used()), (4, 4));
        let mut kept_by_bob = KeptEvents::new(1, 100, 100, bob.clone());
        kept_by_bob.push(Bytes::from("cccccc"));
        assert_eq!((bob.used(), whole.used()), (6, 10));
        let mut again = KeptEvents::new(1, 100, 100, alice.clone());
        again.push(Bytes::from("d"));
        assert!(
            numbers(&again, 0).is_empty(),
            "room in her share, none in the whole"
        );
        assert_eq!(
            (alice.used(), whole.used()),
            (4, 10),
            "nothing taken from her share"
        );
        drop(kept_by_bob);
        assert_eq!((bob.used(), whole.used()), (0, 4), "given back to both");
    }
}
