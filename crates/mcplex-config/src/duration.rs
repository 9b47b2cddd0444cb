//! Human durations in the config (`"30s"`, `"2m"`, `"1500ms"`).

use std::time::Duration;

use crate::DurationError;

/// Parses a human duration such as `"30s"` or `"1m 30s"`; a bare number is seconds.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let trimmed = text.trim();
    if let Ok(seconds) = trimmed.parse::<u64>() {
        return Ok(Duration::from_secs(seconds));
    }
    let duration = humantime::parse_duration(trimmed).map_err(|e| DurationError::Unreadable {
        reason: e.to_string(),
    })?;
    if duration.is_zero() {
        return Err(DurationError::Zero);
    }
    Ok(duration)
}
