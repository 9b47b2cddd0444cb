//! A session's GET stream: where the gateway's messages to a client go when they belong to no
//! request in flight (log messages, `list_changed`, `resources/updated`, its own requests).
//!
//! Events are numbered 1, 2, … per session; the last [`CACHED`] are kept, so that a client
//! that reconnects with `Last-Event-ID: n` gets the ones after `n`, and messages sent while no
//! GET stream is open reach the next one. One GET stream carries the messages at a time; a
//! second GET while it is open gets a stream that only keeps alive (at most [`IDLE_GETS`],
//! the oldest ended first), as a client that opens one per tab or retries early expects no
//! error.

use std::collections::VecDeque;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Events kept for resumption.
const CACHED: usize = 64;
/// Idle GET streams a session keeps open beside its GET stream.
const IDLE_GETS: usize = 32;

#[derive(Default)]
pub(crate) struct Common {
    /// The number of the last event (0: none yet).
    last: u64,
    cache: VecDeque<(u64, Bytes)>,
    /// The last event handed to an open GET stream.
    delivered: u64,
    open: Option<mpsc::UnboundedSender<Bytes>>,
    idle: VecDeque<CancellationToken>,
}

/// A GET stream as opened: its first events (priming, replay), what follows, and when it ends.
pub(crate) struct GetStream {
    pub first: Vec<Bytes>,
    pub source: Option<mpsc::UnboundedReceiver<Bytes>>,
    pub end: CancellationToken,
}

impl Common {
    /// Sends a message (its JSON) on the GET stream, or keeps it for the next one.
    pub(crate) fn send(&mut self, json: &[u8]) {
        self.last += 1;
        let event = crate::sse::event(json, Some(&self.last.to_string()));
        self.cache.push_back((self.last, event.clone()));
        if self.cache.len() > CACHED {
            self.cache.pop_front();
        }
        if let Some(open) = &self.open {
            if open.send(event).is_ok() {
                self.delivered = self.last;
            } else {
                self.open = None;
            }
        }
    }

    /// Opens a GET stream of a session that ends with `ended`: resumed after `last_event_id`
    /// when given (`None` when that id is not one of this stream's: the route answers with an
    /// empty stream), else the session's stream when none is open, else an idle one.
    pub(crate) fn open(
        &mut self,
        last_event_id: Option<&str>,
        ended: &CancellationToken,
    ) -> Option<GetStream> {
        let after = match last_event_id {
            Some(id) => id.trim().parse::<u64>().ok()?,
            None if self.open.as_ref().is_some_and(|open| !open.is_closed()) => {
                return Some(self.idle_stream(ended));
            }
            None => self.delivered,
        };
        let (sender, source) = mpsc::unbounded_channel();
        let mut first = vec![crate::sse::priming(&after.to_string())];
        first.extend(
            self.cache
                .iter()
                .filter(|(index, _)| *index > after)
                .map(|(_, event)| event.clone()),
        );
        self.delivered = self.last;
        // A stream that was open is replaced: its client reconnected.
        self.open = Some(sender);
        Some(GetStream {
            first,
            source: Some(source),
            end: ended.child_token(),
        })
    }

    fn idle_stream(&mut self, ended: &CancellationToken) -> GetStream {
        self.idle.retain(|end| !end.is_cancelled());
        if self.idle.len() >= IDLE_GETS
            && let Some(oldest) = self.idle.pop_front()
        {
            oldest.cancel();
        }
        let end = ended.child_token();
        self.idle.push_back(end.clone());
        GetStream {
            first: vec![crate::sse::priming(&self.delivered.to_string())],
            source: None,
            end,
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
        let mut common = Common::default();
        let ended = CancellationToken::new();
        common.send(&changed());
        common.send(&changed());
        let stream = common.open(None, &ended).expect("opened");
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
    fn a_second_get_idles_and_a_resumption_replays_only_what_came_after() {
        let mut common = Common::default();
        let ended = CancellationToken::new();
        let mut open = common.open(None, &ended).expect("opened");
        common.send(&changed());
        common.send(&changed());
        assert!(open.source.as_mut().expect("source").try_recv().is_ok());
        let idle = common.open(None, &ended).expect("idle");
        assert!(idle.source.is_none(), "the second GET only keeps alive");
        let resumed = common.open(Some("1"), &ended).expect("resumed");
        let replay = text(&resumed.first[1..]);
        assert!(
            !replay.contains("\nid: 1\n") && replay.contains("\nid: 2\n"),
            "{replay}"
        );
        assert!(
            common.open(Some("0/3"), &ended).is_none(),
            "not this stream's id"
        );
        ended.cancel();
        assert!(idle.end.is_cancelled());
    }
}
