//! Events kept for `Last-Event-ID`: the newest of a numbered sequence, capped by count and by
//! bytes, the oldest forgotten first. A session's GET stream keeps its events in one, and so does
//! each answer stream. Each also draws on a [`KeptBudget`] (its caller's share of the
//! gateway's), so that what the sessions keep together is bounded, however many there are; a
//! log may keep its first bytes free of it ([`KeptEvents::with_free`]), a floor that what other
//! logs keep can never take.

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
    /// The number the next event pushed gets.
    next: u64,
    /// Each kept event with its number, oldest first (an event not kept leaves a gap).
    events: VecDeque<(u64, Bytes)>,
    /// The bytes of `events`, all of them taken from `budget` when there is one.
    bytes: usize,
    max_events: usize,
    max_bytes: usize,
    budget: Option<Arc<KeptBudget>>,
    /// The bytes kept without drawing on `budget`: those of `events` past them are taken from it.
    free: usize,
}

impl KeptEvents {
    /// None kept yet; the first event pushed is number `first`. Without a `budget` only the
    /// log's own caps bound it.
    pub(crate) fn new(
        first: u64,
        max_events: usize,
        max_bytes: usize,
        budget: Option<Arc<KeptBudget>>,
    ) -> KeptEvents {
        KeptEvents {
            next: first,
            events: VecDeque::new(),
            bytes: 0,
            max_events,
            max_bytes,
            budget,
            free: 0,
        }
    }

    /// The same log keeping its first `free` bytes without drawing on its budget: a floor that
    /// what other logs keep can never take.
    pub(crate) fn with_free(mut self, free: usize) -> KeptEvents {
        debug_assert!(self.events.is_empty(), "set before anything is kept");
        self.free = free;
        self
    }

    /// What `bytes` kept draw on the budget.
    fn drawn(&self, bytes: usize) -> usize {
        bytes.saturating_sub(self.free)
    }

    /// The number the next event pushed gets (its id is written into it before it is pushed).
    pub(crate) fn next_number(&self) -> u64 {
        self.next
    }

    /// Keeps `event` as the next number, forgetting the oldest first while either cap or the
    /// budget would be passed. An event that cannot be kept even alone (larger than the byte
    /// cap, or than what the budget has left) is not kept: it leaves a gap, and what came
    /// before it stays (a resumption from before the oldest kept misses what was forgotten).
    pub(crate) fn push(&mut self, event: Bytes) {
        let number = self.next;
        self.next += 1;
        let len = event.len();
        if len > self.max_bytes || self.max_events == 0 {
            return;
        }
        while self.events.len() >= self.max_events || self.bytes + len > self.max_bytes {
            self.forget_oldest();
        }
        loop {
            let drawn = self.drawn(self.bytes + len) - self.drawn(self.bytes);
            if drawn == 0 || self.budget.as_ref().is_none_or(|budget| budget.take(drawn)) {
                break;
            }
            // Forgetting helps while it gives back what was drawn, or makes room in the free
            // bytes for an event that fits them; else what the log keeps free stays.
            let free_is_all = self.drawn(self.bytes) == 0;
            if self.events.is_empty() || (free_is_all && len > self.free) {
                return;
            }
            self.forget_oldest();
        }
        self.bytes += len;
        self.events.push_back((number, event));
    }

    fn forget_oldest(&mut self) {
        if let Some((_, oldest)) = self.events.pop_front() {
            let drawn = self.drawn(self.bytes);
            self.bytes -= oldest.len();
            if let Some(budget) = &self.budget {
                budget.give(drawn - self.drawn(self.bytes));
            }
        }
    }

    /// The kept events numbered after `after`, oldest first.
    pub(crate) fn after(&self, after: u64) -> impl Iterator<Item = &Bytes> {
        self.events
            .iter()
            .skip_while(move |(number, _)| *number <= after)
            .map(|(_, event)| event)
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
        if let Some(budget) = &self.budget {
            budget.give(self.drawn(self.bytes));
        }
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
        let mut kept = KeptEvents::new(1, 3, 10, None);
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
        assert_eq!(
            numbers(&kept, 0),
            ["666666", "7777"],
            "an event over the byte cap leaves a gap; what came before stays"
        );
        kept.push(Bytes::from("8"));
        assert_eq!(
            numbers(&kept, 7),
            ["8"],
            "numbering goes on past what was forgotten"
        );
    }

    #[test]
    fn the_logs_share_the_budget_and_each_forgets_only_its_own() {
        let budget = KeptBudget::new(10);
        let mut greedy = KeptEvents::new(1, 100, 100, Some(budget.clone()));
        for n in 1..=4 {
            greedy.push(Bytes::from(format!("{n}{n}{n}")));
        }
        assert_eq!(
            numbers(&greedy, 0),
            ["222", "333", "444"],
            "its own oldest go first"
        );
        assert_eq!(budget.used(), 9);

        let mut other = KeptEvents::new(1, 100, 100, Some(budget.clone()));
        other.push(Bytes::from("a"));
        assert_eq!(numbers(&other, 0), ["a"]);
        other.push(Bytes::from("bb"));
        assert!(
            numbers(&other, 0).is_empty(),
            "its own older event went to make room, in vain, and the new one is not kept"
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
    fn the_free_bytes_draw_on_no_budget_and_stay_when_it_is_spent() {
        let budget = KeptBudget::new(6);
        let mut floored = KeptEvents::new(1, 100, 100, Some(budget.clone())).with_free(4);
        floored.push(Bytes::from("aaa"));
        assert_eq!(budget.used(), 0, "within its free bytes");
        floored.push(Bytes::from("bbb"));
        assert_eq!(budget.used(), 2, "only what passes them draws");
        let mut greedy = KeptEvents::new(1, 100, 100, Some(budget.clone()));
        greedy.push(Bytes::from("cccc"));
        assert_eq!(budget.used(), 6, "the budget is spent");
        floored.push(Bytes::from("dd"));
        assert_eq!(
            numbers(&floored, 0),
            ["bbb", "dd"],
            "its oldest went to make room"
        );
        assert_eq!(budget.used(), 5);
        floored.push(Bytes::from("eeeeeee"));
        assert_eq!(
            numbers(&floored, 0),
            ["dd"],
            "past its free bytes by more than the budget has: not kept; what it drew went to make \
             room in vain, what it kept free stays"
        );
        assert_eq!(budget.used(), 4, "what it drew went back");
        floored.push(Bytes::from("ee"));
        assert_eq!(
            numbers(&floored, 0),
            ["dd", "ee"],
            "within its free bytes whatever the budget has"
        );
        floored.push(Bytes::from("eee"));
        assert_eq!(
            numbers(&floored, 0),
            ["ee", "eee"],
            "an event that fits its free bytes makes room there"
        );
        assert_eq!(budget.used(), 5);
        drop(greedy);
        assert_eq!(budget.used(), 1);
        drop(floored);
        assert_eq!(budget.used(), 0, "a log let go gives back what it drew");
    }

    #[test]
    fn a_share_is_bounded_by_itself_and_by_the_whole() {
        let whole = KeptBudget::new(10);
        let (alice, bob) = (
            KeptBudget::share_of(&whole, 6),
            KeptBudget::share_of(&whole, 6),
        );
        let mut kept_by_alice = KeptEvents::new(1, 100, 100, Some(alice.clone()));
        kept_by_alice.push(Bytes::from("aaaa"));
        kept_by_alice.push(Bytes::from("bbbb"));
        assert_eq!(numbers(&kept_by_alice, 0), ["bbbb"], "her share is 6");
        assert_eq!((alice.used(), whole.used()), (4, 4));
        let mut kept_by_bob = KeptEvents::new(1, 100, 100, Some(bob.clone()));
        kept_by_bob.push(Bytes::from("cccccc"));
        assert_eq!((bob.used(), whole.used()), (6, 10));
        let mut again = KeptEvents::new(1, 100, 100, Some(alice.clone()));
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
