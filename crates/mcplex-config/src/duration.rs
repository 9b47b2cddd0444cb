//! Human durations in the config (`"30s"`, `"2m"`, `"1500ms"`).

use std::time::Duration;

/// Parses a human duration such as `"30s"` or `"1m 30s"`; a bare number is seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let trimmed = text.trim();
    if let Ok(seconds) = trimmed.parse::<u64>() {
        return Ok(Duration::from_secs(seconds));
    }
    let duration = humantime::parse_duration(trimmed)
        .map_err(|e| format!("{e} (write e.g. \"30s\", \"2m\", \"1500ms\")"))?;
    if duration.is_zero() {
        return Err("must be greater than zero".to_owned());
    }
    Ok(duration)
}
