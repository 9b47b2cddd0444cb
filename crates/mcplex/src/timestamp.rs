//! Times as the command line and the activity export write them: RFC 3339, UTC. A time after
//! 9999-12-31 cannot be written so (`humantime` refuses, and a refusing `Display` panics in
//! `to_string`), yet a store row or an upstream's token lifetime can name one: such a time is
//! written as being after the last one RFC 3339 can write.

use std::time::{Duration, UNIX_EPOCH};

/// The first second RFC 3339 cannot write: 10000-01-01T00:00:00Z.
const UNWRITABLE_SECONDS: u64 = 253_402_300_800;

/// What stands for a time after [`UNWRITABLE_SECONDS`].
const AFTER_THE_LAST: &str = "after 9999-12-31T23:59:59Z";

/// `unix_seconds` to the second, e.g. `2026-12-06T10:00:00Z`.
pub fn seconds(unix_seconds: u64) -> String {
    if unix_seconds >= UNWRITABLE_SECONDS {
        return AFTER_THE_LAST.to_owned();
    }
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_secs(unix_seconds)).to_string()
}

/// `unix_millis` to the millisecond, e.g. `2026-12-06T10:00:00.123Z`.
pub fn millis(unix_millis: u64) -> String {
    if unix_millis / 1000 >= UNWRITABLE_SECONDS {
        return AFTER_THE_LAST.to_owned();
    }
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(unix_millis)).to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn writes_rfc3339_up_to_the_last_second_it_can_and_says_so_after() {
        assert_eq!(super::seconds(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::millis(1_500), "1970-01-01T00:00:01.500Z");
        assert_eq!(super::seconds(253_402_300_799), "9999-12-31T23:59:59Z");
        assert_eq!(
            super::millis(253_402_300_799_999),
            "9999-12-31T23:59:59.999Z"
        );
        for after in [253_402_300_800, u64::MAX] {
            assert_eq!(super::seconds(after), "after 9999-12-31T23:59:59Z");
        }
        assert_eq!(super::millis(u64::MAX), "after 9999-12-31T23:59:59Z");
    }
}
