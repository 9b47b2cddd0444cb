//! `MCPLEX_API_KEY`: the admin API key an operator gives. A gateway started with it takes it as
//! its store's key (a Kubernetes Secret, say, instead of a key printed once to one pod's
//! output); the CLI presents it to the gateways of a PostgreSQL store, which keeps only its
//! hash. Owns reading and checking the variable; the value is never shown, not even in an error.

use anyhow::{Result, bail};

/// The variable's name.
pub const API_KEY_ENV: &str = "MCPLEX_API_KEY";

/// The fewest characters a given key may have: 32 random hex digits are 128 bits.
const SHORTEST: usize = 32;

/// The key given, trimmed; `None` when the variable is unset or blank.
pub fn given() -> Result<Option<String>> {
    let Some(value) = std::env::var_os(API_KEY_ENV) else {
        return Ok(None);
    };
    let Some(value) = value.to_str() else {
        bail!("{API_KEY_ENV} is not text: give the key in printable ASCII");
    };
    checked(value)
}

/// `value` as a key: blank is none; otherwise printable ASCII without spaces (it travels in an
/// `Authorization` header and a dashboard's form) and at least [`SHORTEST`] characters.
fn checked(value: &str) -> Result<Option<String>> {
    let key = value.trim();
    if key.is_empty() {
        return Ok(None);
    }
    if !key.chars().all(|c| c.is_ascii_graphic()) {
        bail!(
            "{API_KEY_ENV} holds a space or a character that is not printable ASCII: give the key alone (e.g. the output of `openssl rand -hex 32`)"
        );
    }
    let length = key.len();
    if length < SHORTEST {
        bail!(
            "{API_KEY_ENV} is {length} characters long: an admin key needs at least {SHORTEST} (e.g. the output of `openssl rand -hex 32`)"
        );
    }
    Ok(Some(key.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::checked;

    #[test]
    fn a_key_is_long_printable_ascii_and_blank_is_none() {
        let hex = "0123456789abcdef0123456789abcdef";
        assert_eq!(checked(hex).expect("a key").as_deref(), Some(hex));
        assert_eq!(
            checked(&format!(" {hex}\n")).expect("trimmed").as_deref(),
            Some(hex)
        );
        assert_eq!(checked("").expect("blank"), None);
        assert_eq!(checked(" \n").expect("blank"), None);
        for refused in [
            &hex[1..],
            "short",
            "0123456789abcdef 0123456789abcdef",
            "0123456789abcdef0123456789abcdeé",
        ] {
            let why = checked(refused).expect_err("refused").to_string();
            assert!(why.starts_with("MCPLEX_API_KEY "), "{why}");
            assert!(!why.contains(refused), "the value is never shown: {why}");
        }
    }
}
