//! The log lines of refused access tokens: one line each, without control characters (claims
//! and header values are the token holder's text), and at most [`PER_SECOND`] a second, so a
//! flood of bad tokens is counted rather than written out line by line.

use std::sync::Mutex;
use std::time::Instant;

/// Refusal lines written in one second; the rest are counted and reported with the next line.
pub const PER_SECOND: u32 = 20;

pub struct RefusalLog {
    state: Mutex<Window>,
}

struct Window {
    started: Instant,
    written: u32,
    suppressed: u64,
}

impl Default for RefusalLog {
    fn default() -> RefusalLog {
        RefusalLog::new()
    }
}

impl RefusalLog {
    pub fn new() -> RefusalLog {
        RefusalLog {
            state: Mutex::new(Window {
                started: Instant::now(),
                written: 0,
                suppressed: 0,
            }),
        }
    }

    /// Logs `line` as a warning unless this second's lines are spent.
    pub fn warn(&self, line: &str) {
        let Some(suppressed) = self.admit() else {
            return;
        };
        let line: String = line.chars().filter(|c| !c.is_control()).collect();
        if suppressed > 0 {
            tracing::warn!("{line} ({suppressed} more refusals not logged)");
        } else {
            tracing::warn!("{line}");
        }
    }

    /// `Some(refusals suppressed since the last line)` when a line may be written now.
    fn admit(&self) -> Option<u64> {
        let mut window = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if window.started.elapsed().as_secs() >= 1 {
            window.started = Instant::now();
            window.written = 0;
        }
        if window.written >= PER_SECOND {
            window.suppressed += 1;
            return None;
        }
        window.written += 1;
        Some(std::mem::take(&mut window.suppressed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_is_counted_not_written() {
        let log = RefusalLog::new();
        let admitted = (0..PER_SECOND * 3)
            .filter(|_| log.admit().is_some())
            .count();
        assert_eq!(admitted, PER_SECOND as usize);
        if let Ok(mut window) = log.state.lock() {
            assert_eq!(window.suppressed, u64::from(PER_SECOND) * 2);
            window.started -= std::time::Duration::from_secs(1);
        }
        assert_eq!(
            log.admit(),
            Some(u64::from(PER_SECOND) * 2),
            "the next second says how many"
        );
        assert_eq!(log.admit(), Some(0));
    }
}
