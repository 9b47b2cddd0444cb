//! Events kept for `Last-Event-ID`: the newest of a numbered sequence, capped by count and by
//! bytes, the oldest forgotten first. A session's GET stream keeps its events in one, and so does
//! each answer stream.

use std::collections::VecDeque;

use bytes::Bytes;

pub(crate) struct KeptEvents {
    /// The number of `events[0]`.
    first: u64,
    events: VecDeque<Bytes>,
    /// The bytes of `events`.
    bytes: usize,
    max_events: usize,
    max_bytes: usize,
}

impl KeptEvents {
    /// None kept yet; the first event pushed is number `first`.
    pub(crate) fn new(first: u64, max_events: usize, max_bytes: usize) -> KeptEvents {
        KeptEvents {
            first,
            events: VecDeque::new(),
            bytes: 0,
            max_events,
            max_bytes,
        }
    }

    /// Keeps `event` as the next number, then forgets the oldest past either cap (an event
    /// larger than the byte cap on its own is not kept at all).
    pub(crate) fn push(&mut self, event: Bytes) {
        self.bytes += event.len();
        self.events.push_back(event);
        while self.events.len() > self.max_events || self.bytes > self.max_bytes {
            let Some(oldest) = self.events.pop_front() else {
                break;
            };
            self.bytes -= oldest.len();
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
        let mut kept = KeptEvents::new(1, 3, 10);
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
}
