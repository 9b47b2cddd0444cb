//! The ids of the events a session's streams carry, written and read here only: `n` is event
//! `n` of the session's GET stream (`common_stream.rs`), `i/N` event `i` of its answer stream
//! `N` (`answer.rs`). A client sends one back as `Last-Event-ID` to resume the stream it names.

use std::fmt;

/// One event's place in its session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EventId {
    /// Event `n` of the GET stream (0: the priming event, before any message).
    Common(u64),
    /// Event `index` of answer stream `stream` (0: its priming event).
    Answer { stream: u64, index: u64 },
}

impl EventId {
    /// The event a `Last-Event-ID` names; `None` for a text no stream of ours wrote.
    pub(crate) fn parse(text: &str) -> Option<EventId> {
        let text = text.trim();
        match text.split_once('/') {
            Some((index, stream)) => Some(EventId::Answer {
                stream: stream.parse().ok()?,
                index: index.parse().ok()?,
            }),
            None => text.parse().ok().map(EventId::Common),
        }
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EventId::Common(n) => write!(f, "{n}"),
            EventId::Answer { stream, index } => write!(f, "{index}/{stream}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_reads_back_as_written_and_anything_else_names_nothing() {
        for id in [
            EventId::Common(0),
            EventId::Common(u64::MAX),
            EventId::Answer {
                stream: 7,
                index: 3,
            },
            EventId::Answer {
                stream: 0,
                index: u64::MAX,
            },
        ] {
            assert_eq!(EventId::parse(&id.to_string()), Some(id));
        }
        assert_eq!(EventId::parse(" 12 "), Some(EventId::Common(12)));
        for text in [
            "",
            "x",
            "-1",
            "1/",
            "/2",
            "1/2/3",
            "1/x",
            "18446744073709551616",
        ] {
            assert_eq!(EventId::parse(text), None, "{text:?}");
        }
    }
}
