//! Failed dashboard logins, counted per client address: past `MAX_FAILURES` in a window, that
//! address gets 429 until the window ends, so the API key cannot be guessed from one place at
//! the speed of the listener. Other addresses, and a right key from elsewhere, are unaffected.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Failed logins one address may make per window.
const MAX_FAILURES: u32 = 10;
/// How long a window lasts.
const WINDOW: Duration = Duration::from_secs(60);
/// Addresses remembered at most (the oldest windows are forgotten first).
const MAX_ADDRESSES: usize = 10_000;

#[derive(Default)]
pub struct LoginThrottle {
    failures: Mutex<HashMap<IpAddr, (u32, Instant)>>,
}

impl LoginThrottle {
    /// `None` when `peer` may try a login now, else how long it must wait.
    pub fn wait(&self, peer: IpAddr, now: Instant) -> Option<Duration> {
        let failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        let (count, since) = failures.get(&peer)?;
        let left = WINDOW
            .checked_sub(now.duration_since(*since))
            .filter(|left| !left.is_zero())?;
        (*count >= MAX_FAILURES).then_some(left)
    }

    /// `peer` presented a wrong key.
    pub fn failed(&self, peer: IpAddr, now: Instant) {
        let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        if failures.len() >= MAX_ADDRESSES {
            failures.retain(|_, (_, since)| now.duration_since(*since) < WINDOW);
        }
        let entry = failures.entry(peer).or_insert((0, now));
        if now.duration_since(entry.1) >= WINDOW {
            *entry = (0, now);
        }
        entry.0 += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_is_held_back_after_its_failures_and_others_are_not() {
        let throttle = LoginThrottle::default();
        let (guesser, other) = (IpAddr::from([10, 0, 0, 1]), IpAddr::from([10, 0, 0, 2]));
        let start = Instant::now();
        for _ in 0..MAX_FAILURES {
            assert_eq!(throttle.wait(guesser, start), None);
            throttle.failed(guesser, start);
        }
        assert!(throttle.wait(guesser, start).is_some());
        assert_eq!(throttle.wait(other, start), None);
        assert_eq!(
            throttle.wait(guesser, start + WINDOW),
            None,
            "the window ends"
        );
    }
}
