//! How long a value's compact JSON text is, measured without writing the text.

use std::io;

/// The length of `value` as compact JSON, counted no further than `cap + 1` (past the cap the
/// answer is `cap + 1`, at no cost however large the value; `usize::MAX` for the whole
/// length).
pub fn json_len(value: &impl serde::Serialize, cap: usize) -> usize {
    let mut counter = Counter { bytes: 0, cap };
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => counter.bytes,
        Err(_) => cap.saturating_add(1),
    }
}

struct Counter {
    bytes: usize,
    cap: usize,
}

impl io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.bytes = self.bytes.saturating_add(buf.len());
        if self.bytes > self.cap {
            return Err(io::Error::other("over the cap"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::json_len;

    #[test]
    fn counts_the_text_serde_writes_and_stops_past_the_cap() {
        let value = serde_json::json!({"a": [1, 2, "três"], "b": null});
        let text = serde_json::to_string(&value).expect("text");
        assert_eq!(json_len(&value, usize::MAX), text.len());
        assert_eq!(json_len(&value, text.len()), text.len());
        assert_eq!(json_len(&value, 5), 6);
    }
}
