//! The sliding minute a caller's calls are counted in: two fixed minute windows on the wall
//! clock (so every replica names the same windows), the previous one weighted by how much of it
//! still lies in the last 60 seconds. Counts from several replicas add up window by window,
//! which a token bucket's state cannot; the estimate is exact when calls are spread evenly and
//! never more than the previous window's count off.

use std::time::Duration;

/// The window length.
pub(crate) const WINDOW_MS: i64 = 60_000;

/// A moment, as the wall clock's milliseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Moment(pub i64);

impl Moment {
    pub(crate) fn now() -> Moment {
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        Moment(ms)
    }

    /// The number of the window this moment is in.
    pub(crate) fn window(self) -> i64 {
        self.0.div_euclid(WINDOW_MS)
    }

    /// How far into its window this moment is, in milliseconds.
    fn into_window(self) -> i64 {
        self.0.rem_euclid(WINDOW_MS)
    }
}

/// Calls counted in the current window and the one before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Windows {
    /// The number of the current window.
    pub window: i64,
    pub current: u64,
    pub previous: u64,
}

impl Windows {
    /// These counts as seen at `now`: windows that ended are shifted out. Counts from a window
    /// after `now`'s (a replica whose clock runs a little ahead, or this one's stepped back)
    /// all count as this window's: nothing is lost to a small skew.
    pub(crate) fn at(self, now: Moment) -> Windows {
        let window = now.window();
        // Saturating: `self` may be another replica's row, any number the store holds.
        match window.saturating_sub(self.window) {
            0 => self,
            1 => Windows {
                window,
                current: 0,
                previous: self.current,
            },
            ahead if ahead < 0 => Windows {
                window,
                current: self.current.saturating_add(self.previous),
                previous: 0,
            },
            // Two windows or more ago: nothing recent.
            _ => Windows {
                window,
                current: 0,
                previous: 0,
            },
        }
    }

    /// One more in the current window (of counts already seen [`Windows::at`] now).
    pub(crate) fn plus_one(self) -> Windows {
        Windows {
            current: self.current.saturating_add(1),
            ..self
        }
    }

    /// Adds another replica's counts (for the same windows, or older ones).
    pub(crate) fn plus(self, other: Windows, now: Moment) -> Windows {
        let (mine, theirs) = (self.at(now), other.at(now));
        Windows {
            window: mine.window,
            current: mine.current.saturating_add(theirs.current),
            previous: mine.previous.saturating_add(theirs.previous),
        }
    }

    /// Calls in the 60 seconds before `now`, estimated, rounded up: a call of the previous
    /// window still weighs until that window has fully slid by (rounded down, one call made just
    /// before a minute began counted as none, and a limit let a call too many through).
    pub(crate) fn in_last_minute(self, now: Moment) -> u64 {
        let counts = self.at(now);
        let left = u64::try_from(WINDOW_MS - now.into_window()).unwrap_or(0);
        let window = u64::try_from(WINDOW_MS).unwrap_or(1).max(1);
        counts
            .current
            .saturating_add(counts.previous.saturating_mul(left).div_ceil(window))
    }

    /// How long until one more call fits under `limit` calls a minute, if no other call is
    /// made meanwhile; `None` when it fits now.
    pub(crate) fn wait_for_room(self, limit: u32, now: Moment) -> Option<Duration> {
        let counts = self.at(now);
        let limit = u64::from(limit);
        if self.in_last_minute(now) < limit {
            return None;
        }
        // The estimate must fall to limit - 1 or below. W = window, e = time into it.
        let (w, e) = (WINDOW_MS as f64, now.into_window() as f64);
        let room = (limit - 1) as f64;
        let (current, previous) = (counts.current as f64, counts.previous as f64);
        let wait_ms = if current <= room && previous > 0.0 {
            // Within this window, as the previous one's weight shrinks.
            (w - e - w * (room - current) / previous).max(0.0)
        } else {
            // This window's calls become the previous window's and shrink in turn.
            (w - e) + w * (1.0 - room / current.max(1.0))
        };
        let seconds = (wait_ms / 1000.0).ceil().max(1.0);
        Some(Duration::from_secs(seconds as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_second(window: i64, second: i64) -> Moment {
        Moment(window * WINDOW_MS + second * 1000)
    }

    #[test]
    fn the_previous_window_counts_for_what_of_it_is_still_in_the_last_minute() {
        let counts = Windows {
            window: 10,
            current: 4,
            previous: 60,
        };
        assert_eq!(counts.in_last_minute(at_second(10, 0)), 64);
        assert_eq!(counts.in_last_minute(at_second(10, 15)), 4 + 45);
        assert_eq!(counts.in_last_minute(at_second(10, 59)), 4 + 1);
        // A minute later this window is the previous one; two later, nothing is left.
        assert_eq!(counts.in_last_minute(at_second(11, 30)), 2);
        assert_eq!(counts.in_last_minute(at_second(12, 0)), 0);
        // One call just before a minute began still counts, until its window has slid by.
        let one = Windows {
            window: 10,
            current: 1,
            previous: 0,
        };
        assert_eq!(one.in_last_minute(at_second(11, 50)), 1);
        assert_eq!(one.in_last_minute(at_second(12, 0)), 0);
    }

    #[test]
    fn the_wait_is_until_the_estimate_leaves_room_for_one_more() {
        let now = at_second(10, 20);
        // 10 a minute, 10 made in the previous window: 10 * 40/60 = 6 left now; room at once.
        let spread = Windows {
            window: 10,
            current: 2,
            previous: 10,
        };
        assert_eq!(spread.wait_for_room(10, now), None);
        // 9 in this window and 10 before: 9 + 10 * (60 - 20 - t)/60 <= 9 at t = 40 s.
        let busy = Windows {
            window: 10,
            current: 9,
            previous: 10,
        };
        assert_eq!(busy.wait_for_room(10, now), Some(Duration::from_secs(40)));
        // 10 in this window already: the next window, until they weigh 9: 40 s + 6 s.
        let full = Windows {
            window: 10,
            current: 10,
            previous: 0,
        };
        assert_eq!(full.wait_for_room(10, now), Some(Duration::from_secs(46)));
        // Checked against the estimate itself: after the wait there is room, a second before not.
        for (counts, limit) in [(busy, 10), (full, 10)] {
            let wait = counts.wait_for_room(limit, now).expect("full");
            let later = Moment(now.0 + i64::try_from(wait.as_millis()).expect("small"));
            assert!(counts.in_last_minute(later) < u64::from(limit));
            let before = Moment(later.0 - 1500);
            assert!(counts.in_last_minute(before) >= u64::from(limit) - 1);
        }
    }

    #[test]
    fn any_row_another_replica_stored_is_counted_without_overflow() {
        let now = at_second(11, 30);
        let mine = Windows {
            window: 11,
            current: 3,
            previous: 1,
        };
        const MAX: u64 = u64::MAX;
        // (their window, the sum's current and previous counts, the estimate now): a window
        // long gone adds nothing; this one and any later one saturate, never wrap or panic.
        for (window, current, previous, estimate) in [
            (i64::MIN, 3, 1, 4),
            (-1, 3, 1, 4),
            (11, MAX, MAX, MAX),
            (12, MAX, 1, MAX),
            (i64::MAX, MAX, 1, MAX),
        ] {
            let theirs = Windows {
                window,
                current: MAX,
                previous: MAX,
            };
            let sum = mine.plus(theirs, now);
            assert_eq!(
                (
                    sum.window,
                    sum.current,
                    sum.previous,
                    sum.in_last_minute(now)
                ),
                (11, current, previous, estimate),
                "window {window}"
            );
            assert_eq!(sum.plus_one().current, current.saturating_add(1));
            assert_eq!(sum.wait_for_room(10, now).is_none(), estimate < 10);
        }
    }

    #[test]
    fn replicas_counts_add_up_window_by_window() {
        let now = at_second(11, 0);
        let mine = Windows {
            window: 11,
            current: 3,
            previous: 1,
        };
        // Reported a moment before the window turned.
        let theirs = Windows {
            window: 10,
            current: 5,
            previous: 7,
        };
        let sum = mine.plus(theirs, now);
        assert_eq!((sum.current, sum.previous), (3, 6));
        assert_eq!(sum.in_last_minute(now), 9);
        // A replica whose clock is a few seconds ahead already counts in the next window: its
        // calls all count now, none is lost.
        let ahead = Windows {
            window: 12,
            current: 2,
            previous: 5,
        };
        let sum = mine.plus(ahead, now);
        assert_eq!((sum.current, sum.previous), (3 + 7, 1));
    }
}
