//! The last lines each stdio server wrote to stderr, kept per server name for the operator
//! (`GET /api/v1/servers/{name}/stderr`, the dashboard's Servers page). Lines arrive here
//! already redacted by the server's `Redactor`, are cut to a bounded length, and only the newest
//! [`TAIL_LINES`] are kept, so a chatty server costs a fixed amount of memory. The tail outlives
//! the process: a server that failed to start still shows why.

use std::collections::{HashMap, VecDeque};
use std::sync::{LazyLock, Mutex, PoisonError};

/// Lines kept per server.
pub const TAIL_LINES: usize = 200;
/// Characters kept of one line.
const MAX_LINE_CHARS: usize = 2000;

static TAILS: LazyLock<Mutex<HashMap<String, VecDeque<String>>>> = LazyLock::new(Mutex::default);

/// Appends one (already redacted) line to `server`'s tail.
/// `line` cut to what the operator is shown of one stderr line.
pub(crate) fn shortened(line: &str) -> String {
    match line.char_indices().nth(MAX_LINE_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

pub(crate) fn push(server: &str, line: &str) {
    let line = shortened(line);
    let mut tails = TAILS.lock().unwrap_or_else(PoisonError::into_inner);
    let tail = tails.entry(server.to_owned()).or_default();
    if tail.len() == TAIL_LINES {
        tail.pop_front();
    }
    tail.push_back(line);
}

/// The newest lines `server`'s processes wrote to stderr in this gateway, oldest first.
pub fn stderr_tail(server: &str) -> Vec<String> {
    let tails = TAILS.lock().unwrap_or_else(PoisonError::into_inner);
    tails
        .get(server)
        .map(|tail| tail.iter().cloned().collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_lines_each_cut_to_a_bounded_length() {
        let server = "stderr-tail-test";
        for n in 0..TAIL_LINES + 5 {
            push(server, &format!("line {n}"));
        }
        push(server, &"x".repeat(MAX_LINE_CHARS + 10));
        let tail = stderr_tail(server);
        assert_eq!(tail.len(), TAIL_LINES);
        assert_eq!(tail[0], "line 6");
        assert_eq!(tail[TAIL_LINES - 1].chars().count(), MAX_LINE_CHARS + 1);
        assert!(stderr_tail("no-such-server").is_empty());
    }
}
