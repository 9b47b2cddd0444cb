//! Human durations in the config (`"30s"`, `"2m"`, `"1500ms"`).

use std::time::Duration;

use crate::DurationError;

/// The longest duration anything takes, 100 years (of 365.25 days, as `"100y"` reads): every
/// duration here is added to a clock somewhere (a deadline, an expiry), and one near
/// `u64::MAX` seconds overflows it.
pub const MAX_DURATION: Duration = Duration::from_secs(36_525 * 24 * 3600);

/// Parses a human duration such as `"30s"` or `"1m 30s"`; a bare number is seconds. Zero and
/// anything over [`MAX_DURATION`] are refused.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let trimmed = text.trim();
    let duration = match trimmed.parse::<u64>() {
        Ok(seconds) => Duration::from_secs(seconds),
        Err(_) => humantime::parse_duration(trimmed).map_err(|e| DurationError::Unreadable {
            reason: e.to_string(),
        })?,
    };
    if duration.is_zero() {
        return Err(DurationError::Zero);
    }
    if duration > MAX_DURATION {
        return Err(DurationError::TooLong);
    }
    Ok(duration)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_and_durations_past_a_century_are_refused() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("45"), Ok(Duration::from_secs(45)));
        assert_eq!(
            parse_duration("100y"),
            Ok(Duration::from_secs(3_155_760_000))
        );
        for zero in ["0", "0s", " 0 "] {
            assert_eq!(parse_duration(zero), Err(DurationError::Zero), "{zero}");
        }
        for huge in ["18446744073709551615", "300000000000y", "101y"] {
            assert_eq!(parse_duration(huge), Err(DurationError::TooLong), "{huge}");
        }
    }
}
