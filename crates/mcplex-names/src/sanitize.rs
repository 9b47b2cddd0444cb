//! Character-level sanitizing of one name part.

/// The longest name the model APIs (OpenAI, Anthropic) accept for a tool.
pub const MAX_NAME_LEN: usize = 64;

/// Whether `name` matches `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_NAME_LEN && name.bytes().all(is_name_byte)
}

pub(crate) fn is_name_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-'
}

/// Replaces every character outside `[a-zA-Z0-9_-]` with `_`; an empty input becomes `_`.
/// Length is not limited here: shortening needs the whole table (see `RegistrationTable`).
pub fn sanitize(part: &str) -> String {
    if part.is_empty() {
        return "_".to_owned();
    }
    part.chars()
        .map(|c| {
            if c.is_ascii() && is_name_byte(c as u8) {
                c
            } else {
                '_'
            }
        })
        .collect()
}
