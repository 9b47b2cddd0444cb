//! An event stream's body with a cap on each event. `sse-stream`'s parser holds an event, and the
//! line it is reading, until the blank line that ends it, so an upstream that never ends one (or
//! sends one without end) would make the gateway hold all of it. The bytes since the last blank
//! line are counted before the parser sees them, and the body fails once they pass the cap.

use bytes::Bytes;
use futures::{Stream, StreamExt, stream};
use sse_stream::{Sse, SseStream};

/// The events of `response`'s body, each at most `cap` bytes ([`bounded_events`]).
pub(crate) fn events(
    response: reqwest::Response,
    cap: usize,
) -> impl Stream<Item = Result<Sse, sse_stream::Error>> + Send + Unpin + 'static {
    SseStream::from_bytes_stream(bounded_events(response.bytes_stream(), cap))
}

/// `body`'s bytes, failing (which ends the stream's reading) at the first event, counted from
/// the blank line before it through the blank line that ends it, longer than `cap`. The events
/// before it in its chunk are passed on first.
pub(crate) fn bounded_events(
    body: impl Stream<Item = reqwest::Result<Bytes>>,
    cap: usize,
) -> impl Stream<Item = std::io::Result<Bytes>> {
    let mut event = EventBytes::default();
    body.flat_map(move |chunk| {
        let (passed, refused) = match chunk {
            Err(e) => (None, Some(Err(std::io::Error::other(e.without_url())))),
            Ok(chunk) => match event.read(&chunk, cap) {
                Ok(()) => (Some(Ok(chunk)), None),
                Err(before) => {
                    let too_long = std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        TooLong(cap).to_string(),
                    );
                    let passed = (before > 0).then(|| Ok(chunk.slice(..before)));
                    (passed, Some(Err(too_long)))
                }
            },
        };
        stream::iter(passed.into_iter().chain(refused))
    })
}

/// Why a stream was refused.
struct TooLong(usize);

impl std::fmt::Display for TooLong {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "an event is longer than a message may be ({} bytes)",
            self.0
        )
    }
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
    /// Counts `chunk`. `Err(n)` when an event in it, or one running on from before it, is
    /// longer than `cap`: `n` is how many bytes of the chunk come before that event.
    fn read(&mut self, chunk: &[u8], cap: usize) -> Result<(), usize> {
        let mut start = 0;
        let mut carried = self.pending;
        for i in memchr::memchr2_iter(b'\n', b'\r', chunk) {
            let previous = if i == 0 { self.last } else { chunk[i - 1] };
            if ends_blank_line(previous, chunk[i]) {
                if carried + (i + 1 - start) > cap {
                    return Err(start);
                }
                carried = 0;
                start = i + 1;
            }
        }
        self.pending = carried + (chunk.len() - start);
        if let Some(&byte) = chunk.last() {
            self.last = byte;
        }
        if self.pending > cap {
            return Err(start);
        }
        Ok(())
    }
}

/// Whether `byte` after `previous` ends a blank line: two line ends in a row (`\n`, `\r` or
/// `\r\n` each), that is any two of `\n` and `\r` side by side except the one pair `\r\n`.
fn ends_blank_line(previous: u8, byte: u8) -> bool {
    let is_line_end = |b: u8| b == b'\n' || b == b'\r';
    is_line_end(previous) && is_line_end(byte) && !(previous == b'\r' && byte == b'\n')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(chunks: &[&[u8]]) -> usize {
        let mut event = EventBytes::default();
        for chunk in chunks {
            assert_eq!(event.read(chunk, usize::MAX), Ok(()));
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

    #[test]
    fn an_event_over_the_cap_is_found_wherever_it_ends() {
        let long = format!("data: a\n\ndata: {}\n\ndata: b\n\n", "x".repeat(40));
        assert_eq!(
            EventBytes::default().read(long.as_bytes(), 20),
            Err(9),
            "within one chunk"
        );
        let mut event = EventBytes::default();
        assert_eq!(event.read(b"data: a\n\ndata: xxxxxxxx", 20), Ok(()));
        assert_eq!(
            event.read(b"xxxxxxxxxx\n\ndata: b\n\n", 20),
            Err(0),
            "from the chunk before"
        );
        let mut fits = EventBytes::default();
        assert_eq!(
            fits.read(b"data: 12345678901234\n\n", 22),
            Ok(()),
            "22 bytes with its blank line"
        );
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
            sse_stream::SseStream::from_bytes_stream(bounded_events(within.bytes_stream(), 48));
        let event = events
            .next()
            .await
            .expect("an event")
            .expect("within the cap");
        assert_eq!(event.data.map(|d| d.len()), Some(40));
    }
}
