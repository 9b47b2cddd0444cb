//! An event stream's body with a cap on each event. `sse-stream`'s parser holds an event, and the
//! line it is reading, until the blank line that ends it, so an upstream that never ends one (or
//! sends one without end) would make the gateway hold all of it. The bytes since the last blank
//! line are counted before the parser sees them, and the body fails once they pass the cap.

use bytes::Bytes;
use futures::{Stream, StreamExt, stream};

/// `body`'s bytes, failing (which ends the stream's reading) once one event, the bytes since the
/// last blank line, is longer than `cap`. The events a refused chunk ends before that one are
/// passed on first.
pub(crate) fn bounded_events(
    body: impl Stream<Item = reqwest::Result<Bytes>>,
    cap: usize,
) -> impl Stream<Item = std::io::Result<Bytes>> {
    let mut event = EventBytes::default();
    body.flat_map(move |chunk| {
        let (passed, refused) = match chunk {
            Err(e) => (None, Some(Err(std::io::Error::other(e.without_url())))),
            Ok(chunk) => {
                let ended = event.read(&chunk);
                if event.pending <= cap {
                    (Some(Ok(chunk)), None)
                } else {
                    let too_long = std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("an event is longer than a message may be ({cap} bytes)"),
                    );
                    let before = ended
                        .filter(|&end| end > 0)
                        .map(|end| Ok(chunk.slice(..end)));
                    (before, Some(Err(too_long)))
                }
            }
        };
        stream::iter(passed.into_iter().chain(refused))
    })
}

/// Whether the stream broke because [`bounded_events`] refused an event (the upstream's fault,
/// not the network's).
pub(crate) fn refused_as_too_long(error: &sse_stream::Error) -> bool {
    matches!(error, sse_stream::Error::Body(body)
        if body.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::InvalidData))
}

/// How many bytes the event being read holds so far.
#[derive(Debug, Default)]
struct EventBytes {
    pending: usize,
    /// The last byte read, so a blank line split between two chunks is seen.
    last: u8,
}

impl EventBytes {
    /// Counts `chunk`; where its last blank line ends, if it has one.
    fn read(&mut self, chunk: &[u8]) -> Option<usize> {
        let rest = after_blank_line(self.last, chunk);
        self.pending = match rest {
            Some(rest) => rest,
            None => self.pending.saturating_add(chunk.len()),
        };
        if let Some(&byte) = chunk.last() {
            self.last = byte;
        }
        rest.map(|rest| chunk.len() - rest)
    }
}

fn is_line_end(byte: u8) -> bool {
    byte == b'\n' || byte == b'\r'
}

/// How many bytes of `chunk` follow its last blank line, `before` being the byte before it. A
/// blank line is two line ends in a row (`\n`, `\r` or `\r\n` each): any two of `\n` and `\r`
/// side by side except the one pair `\r\n`.
fn after_blank_line(before: u8, chunk: &[u8]) -> Option<usize> {
    let mut end = chunk.len();
    while let Some(i) = memchr::memrchr2(b'\n', b'\r', &chunk[..end]) {
        let previous = if i == 0 { before } else { chunk[i - 1] };
        if is_line_end(previous) && !(previous == b'\r' && chunk[i] == b'\n') {
            return Some(chunk.len() - i - 1);
        }
        end = i;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(chunks: &[&[u8]]) -> usize {
        let mut event = EventBytes::default();
        for chunk in chunks {
            event.read(chunk);
        }
        event.pending
    }

    #[test]
    fn a_blank_line_ends_an_event_in_every_line_ending() {
        assert_eq!(pending(&[b"data: 1\n\n"]), 0);
        assert_eq!(pending(&[b"data: 1\r\n\r\n"]), 1);
        assert_eq!(pending(&[b"data: 1\r\r"]), 0);
        assert_eq!(pending(&[b"data: 1\n\ndata: 22"]), 8);
    }

    #[test]
    fn a_line_end_alone_does_not_end_an_event() {
        assert_eq!(pending(&[b"data: 1\r\n"]), 9);
        assert_eq!(pending(&[b"data: 1\n", b"data: 2\n"]), 16);
    }

    #[test]
    fn a_blank_line_split_between_chunks_is_seen() {
        assert_eq!(pending(&[b"data: 1\n", b"\ndata"]), 4);
        assert_eq!(pending(&[b"data: 1\r\n", b"\r\n"]), 1);
        assert_eq!(pending(&[b"data: 1\r", b"\n"]), 9);
    }

    #[test]
    fn an_event_counts_across_chunks() {
        assert_eq!(pending(&[b"data: ", b"xxxx", b"yyyy"]), 14);
    }

    /// Through `sse-stream`'s parser, over a real HTTP answer: the events before the one that
    /// passes the cap arrive, then the stream fails rather than hold the rest.
    #[tokio::test]
    async fn an_event_past_the_cap_fails_the_stream_after_the_events_before_it() {
        let long = format!("data: {}", "x".repeat(40));
        let body = format!("data: {{\"a\":1}}\n\ndata: {{\"b\":2}}\n\n{long}");
        let response = crate::wire::tests::answered(body.clone()).await;
        let mut events =
            sse_stream::SseStream::from_bytes_stream(bounded_events(response.bytes_stream(), 32));
        for data in [r#"{"a":1}"#, r#"{"b":2}"#] {
            let event = events.next().await.expect("an event").expect("not refused");
            assert_eq!(event.data.as_deref(), Some(data));
        }
        let refused = events
            .next()
            .await
            .expect("the refusal")
            .expect_err("refused");
        assert!(refused.to_string().contains("longer than"), "{refused}");

        let within = crate::wire::tests::answered(format!("{long}\n\n")).await;
        let mut events =
            sse_stream::SseStream::from_bytes_stream(bounded_events(within.bytes_stream(), 47));
        let event = events
            .next()
            .await
            .expect("an event")
            .expect("within the cap");
        assert_eq!(event.data.map(|d| d.len()), Some(40));
    }
}
