//! Lines of a server's output with a cap on each: a server that writes a line without end (or a
//! very long one) cannot make the gateway hold all of it. What follows the cap is read and
//! dropped, a bounded piece at a time, to the line's end, and the line is reported by its size.
//! Bytes, not text: a line that is not UTF-8 is the reader's caller's to judge.

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};

/// One line, without its newline.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    Whole(Vec<u8>),
    /// Past the cap: dropped, `bytes` long.
    TooLong {
        bytes: usize,
    },
}

/// How much of an over-long line is read at a time while it is skipped.
const SKIPPED_AT_ONCE: u64 = 64 * 1024;

pub(crate) struct BoundedLines<R> {
    reader: BufReader<R>,
    cap: usize,
}

impl<R: AsyncRead + Unpin> BoundedLines<R> {
    /// Lines of `reader` of at most `cap` bytes each.
    pub(crate) fn new(reader: R, cap: usize) -> BoundedLines<R> {
        BoundedLines {
            reader: BufReader::new(reader),
            cap,
        }
    }

    /// The next line; `None` at the end of the output (a last line without a newline counts).
    pub(crate) async fn next_line(&mut self) -> std::io::Result<Option<Line>> {
        let mut line = Vec::new();
        let limit = u64::try_from(self.cap)
            .unwrap_or(u64::MAX)
            .saturating_add(1);
        let read = (&mut self.reader)
            .take(limit)
            .read_until(b'\n', &mut line)
            .await?;
        if read == 0 {
            return Ok(None);
        }
        if line.last() == Some(&b'\n') {
            line.pop();
            return Ok(Some(Line::Whole(line)));
        }
        if line.len() <= self.cap {
            return Ok(Some(Line::Whole(line)));
        }
        let mut bytes = line.len();
        loop {
            line.clear();
            let read = (&mut self.reader)
                .take(SKIPPED_AT_ONCE)
                .read_until(b'\n', &mut line)
                .await?;
            bytes += read;
            if read == 0 || line.last() == Some(&b'\n') {
                return Ok(Some(Line::TooLong {
                    bytes: bytes - usize::from(read > 0),
                }));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_past_the_cap_are_dropped_and_told_by_their_size() {
        let long = "x".repeat(200_000);
        let output = format!("short\n{long}\n\nlast without newline");
        let mut lines = BoundedLines::new(output.as_bytes(), 10);
        let mut seen = Vec::new();
        while let Some(line) = lines.next_line().await.expect("read") {
            seen.push(line);
        }
        assert_eq!(
            seen,
            [
                Line::Whole(b"short".to_vec()),
                Line::TooLong { bytes: 200_000 },
                Line::Whole(Vec::new()),
                Line::TooLong { bytes: 20 },
            ]
        );
        let mut exact = BoundedLines::new(&b"0123456789"[..], 10);
        assert_eq!(
            exact.next_line().await.expect("read"),
            Some(Line::Whole(b"0123456789".to_vec()))
        );
        assert_eq!(exact.next_line().await.expect("read"), None);
    }
}
