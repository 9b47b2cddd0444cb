//! A session's GET stream: where the gateway's messages to a client go when they belong to no
//! request in flight (log messages, `list_changed`, `resources/updated`, a server request whose
//! call has ended).
//!
//! Events are numbered 1, 2, … per session; the last [`CACHED`] (at most [`CACHED_BYTES`]) are
//! kept, their first [`CACHED_FREE`] bytes for certain and the rest while the budget all
//! sessions' caches share has room, so that a client
//! that reconnects with `Last-Event-ID: n` gets the ones after `n`, and messages sent while no
//! GET stream is open reach the next one. A client may hold several GET streams (one per tab, a
//! reconnect before the old one is seen to close): each message goes to the newest that is still
//! open, so none is refused and none is lost when the newest closes. A stream whose client stops
//! reading is ended once [`QUEUE`] events wait for it: the client resumes from the cache. At most
//! [`GETS`] are kept; opening one more ends the oldest.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::event_id::EventId;
use crate::kept_events::{KeptBudget, KeptEvents};

/// Events kept for resumption, and their bytes: a client let go for reading too slowly resumes
/// seconds later, and a burst of log messages meanwhile must not push out what it missed.
const CACHED: usize = 256;
const CACHED_BYTES: usize = 1 << 20;
/// The cache's bytes that draw on no budget: while no GET stream is open the cache is how
/// messages reach the next one, so what other sessions keep must never take all of it. The
/// rest of [`CACHED_BYTES`] draws on the budget all sessions' caches share, so that they add up
/// to what the gateway allows, not to 1 MiB each.
const CACHED_FREE: usize = 64 << 10;
/// GET streams a session keeps open: a client needs one (its notifications go to one stream,
/// not each); a few allow a reconnect to overlap the stream it replaces. Every one holds a
/// connection.
const GETS: usize = 4;
/// Events that may wait for one GET stream's client.
const QUEUE: usize = 64;

pub(crate) struct Common {
    cache: KeptEvents,
    /// The last event handed to an open GET stream.
    delivered: u64,
    /// The open GET streams, oldest first.
    open: VecDeque<mpsc::Sender<Bytes>>,
}

/// A GET stream as opened: its first events (priming, replay), what follows, and when it ends.
pub(crate) struct GetStream {
    pub first: Vec<Bytes>,
    pub source: mpsc::Receiver<Bytes>,
    pub end: CancellationToken,
}

impl Common {
    /// No event yet; past its first [`CACHED_FREE`] bytes its cache draws on `kept`.
    pub(crate) fn new(kept: Arc<KeptBudget>) -> Common {
        Common {
            cache: KeptEvents::new(1, CACHED, CACHED_BYTES, Some(kept)).with_free(CACHED_FREE),
            delivered: 0,
            open: VecDeque::new(),
        }
    }

    /// Sends a message (its JSON) on the newest open GET stream, or keeps it for the next one.
    pub(crate) fn send(&mut self, json: &[u8]) {
        let number = self.cache.next_number();
        let event = crate::sse::event(json, Some(&EventId::Common(number).to_string()));
        self.cache.push(event.clone());
        while let Some(newest) = self.open.back() {
            match newest.try_send(event.clone()) {
                Ok(()) => {
                    self.delivered = number;
                    return;
                }
                // Closed, or its client stopped reading: that stream ends (it resumes from the
                // cache), and the next newest takes the message.
                Err(_) => {
                    self.open.pop_back();
                }
            }
        }
    }

    /// Opens a GET stream of a session that ends with `ended`: resumed after event
    /// `last_event_id` when given, else after the last event an open stream took.
    pub(crate) fn open(
        &mut self,
        last_event_id: Option<u64>,
        ended: &CancellationToken,
    ) -> GetStream {
        let after = last_event_id.unwrap_or(self.delivered);
        self.open.retain(|open| !open.is_closed());
        if self.open.len() >= GETS {
            self.open.pop_front();
        }
        let (sender, source) = mpsc::channel(QUEUE);
        let mut first = vec![crate::sse::priming(&EventId::Common(after).to_string())];
        first.extend(self.cache.after(after).cloned());
        self.delivered = self.cache.next_number() - 1;
        self.open.push_back(sender);
        GetStream {
            first,
            source,
            end: ended.child_token(),
        }
    }

    #[cfg(test)]
    pub(crate) fn cached(&self) -> usize {
        self.cache.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    fn changed() -> Vec<u8> {
        br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#.to_vec()
    }

    fn text(events: &[Bytes]) -> String {
        events
            .iter()
            .map(|e| String::from_utf8_lossy(e).into_owned())
            .collect()
    }

    #[test]
    fn messages_sent_before_the_first_get_reach_it() {
        let mut common = Common::new(KeptBudget::new(usize::MAX));
        let ended = CancellationToken::new();
        common.send(&changed());
        common.send(&changed());
        let stream = common.open(None, &ended);
        let first = text(&stream.first);
        assert!(
            first.starts_with("data: \nid: 0\nretry: 3000\n\n"),
            "{first}"
        );
        assert!(
            first.contains("\nid: 1\n") && first.contains("\nid: 2\n"),
            "{first}"
        );
    }

    #[test]
    fn the_newest_get_takes_messages_and_an_older_one_takes_over_when_it_closes() {
        let mut common = Common::new(KeptBudget::new(usize::MAX));
        let ended = CancellationToken::new();
        let mut older = common.open(None, &ended);
        let newer = common.open(None, &ended);
        common.send(&changed());
        assert!(older.source.try_recv().is_err(), "the newest took it");
        drop(newer);
        common.send(&changed());
        let event = older.source.try_recv().expect("the older one took over");
        assert!(String::from_utf8_lossy(&event).contains("\nid: 2\n"));
        let resumed = common.open(Some(1), &ended);
        let replay = text(&resumed.first[1..]);
        assert!(
            !replay.contains("\nid: 1\n") && replay.contains("\nid: 2\n"),
            "{replay}"
        );
    }

    #[test]
    fn a_get_whose_client_stops_reading_is_ended_and_the_cache_keeps_what_it_missed() {
        let mut common = Common::new(KeptBudget::new(usize::MAX));
        let ended = CancellationToken::new();
        let mut stalled = common.open(None, &ended);
        for _ in 0..QUEUE + 1 {
            common.send(&changed());
        }
        assert!(common.open.is_empty(), "the stalled stream was let go");
        let mut taken = 0;
        while stalled.source.try_recv().is_ok() {
            taken += 1;
        }
        assert_eq!(taken, QUEUE);
        let resumed = common.open(Some(QUEUE as u64), &ended);
        assert_eq!(resumed.first.len(), 2, "priming and the one it missed");
    }

    #[test]
    fn the_cache_keeps_the_newest_events_within_its_count_and_bytes() {
        let mut common = Common::new(KeptBudget::new(usize::MAX));
        for _ in 0..CACHED + 10 {
            common.send(&changed());
        }
        assert_eq!(common.cached(), CACHED);
        let resumed = common.open(Some(0), &CancellationToken::new());
        assert!(text(&resumed.first).contains(&format!("\nid: {}\n", CACHED + 10)));
        assert!(
            !text(&resumed.first).contains("\nid: 10\n"),
            "the oldest forgotten"
        );
        let large = format!(
            r#"{{"jsonrpc":"2.0","method":"x","params":"{}"}}"#,
            "y".repeat(300_000)
        );
        for _ in 0..4 {
            common.send(large.as_bytes());
        }
        assert_eq!(common.cached(), 3, "three of 300 kB fit in 1 MiB, not four");
        assert!(common.cache.bytes() <= CACHED_BYTES);
    }

    #[test]
    fn the_caches_of_many_sessions_draw_on_one_budget_past_their_free_bytes() {
        let budget = KeptBudget::new(100 << 10);
        let message = format!(
            r#"{{"jsonrpc":"2.0","method":"x","params":"{}"}}"#,
            "y".repeat(10_000)
        );
        let mut sessions: Vec<Common> = (0..4).map(|_| Common::new(budget.clone())).collect();
        for common in &mut sessions {
            for _ in 0..40 {
                common.send(message.as_bytes());
            }
        }
        let kept: usize = sessions.iter().map(|common| common.cache.bytes()).sum();
        assert!(kept <= 4 * CACHED_FREE + (100 << 10), "{kept} bytes kept");
        assert!(budget.used() <= 100 << 10);
        for common in &mut sessions {
            assert!(
                common.cache.bytes() > CACHED_FREE - message.len() - 100,
                "each keeps its free bytes, the last one too"
            );
            let resumed = common.open(Some(0), &CancellationToken::new());
            assert!(text(&resumed.first).contains("\nid: 40\n"), "the newest");
        }
        drop(sessions);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn a_message_too_large_to_keep_loses_no_other() {
        let mut common = Common::new(KeptBudget::new(usize::MAX));
        let ended = CancellationToken::new();
        common.send(&changed());
        let large = format!(
            r#"{{"jsonrpc":"2.0","method":"x","params":"{}"}}"#,
            "y".repeat(CACHED_BYTES)
        );
        common.send(large.as_bytes());
        common.send(&changed());
        let stream = common.open(None, &ended);
        let first = text(&stream.first);
        assert!(
            first.contains("\nid: 1\n")
                && first.contains("\nid: 3\n")
                && !first.contains("\nid: 2\n"),
            "{first}"
        );
    }
}
