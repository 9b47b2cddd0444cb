//! The admin API key given from outside the store, never shown, not even in an error: the CLI
//! presents `MCPLEX_API_KEY` to the gateways of a PostgreSQL store (which keeps only its hash),
//! and a gateway started with `--api-key-file` (`MCPLEX_API_KEY_FILE`, a Kubernetes or Docker
//! secret mounted as a file) makes its store take the key in that file as its own. Two names,
//! because presenting a key and installing one are different acts: a key exported for the CLI
//! must never replace the key of a store a local gateway serves.

use std::path::Path;

use anyhow::{Result, bail};

/// The variable the CLI presents the key from.
pub const API_KEY_ENV: &str = "MCPLEX_API_KEY";

/// The fewest characters a given key may have: 32 random hex digits are 128 bits.
const SHORTEST: usize = 32;

/// The key the CLI presents, trimmed; `None` when the variable is unset or blank.
pub fn presented() -> Result<Option<String>> {
    let Some(value) = std::env::var_os(API_KEY_ENV) else {
        return Ok(None);
    };
    let Some(value) = value.to_str() else {
        bail!("{API_KEY_ENV} is not text: give the key in visible ASCII characters");
    };
    let key = value.trim();
    if key.is_empty() {
        return Ok(None);
    }
    checked(key, API_KEY_ENV).map(Some)
}

/// The key in the file at `path`, trimmed, for a gateway's store to take. The file is noted
/// among those the sandbox hides from stdio servers.
pub fn from_file(path: &Path) -> Result<String> {
    crate::load::note_secret_file(path);
    let shown = path.display();
    let bytes = std::fs::read(path)
        .map_err(|e| anyhow::anyhow!("cannot read the API key file {shown}: {e}"))?;
    let Ok(text) = std::str::from_utf8(&bytes) else {
        bail!("the API key file {shown} is not text: give the key in visible ASCII characters");
    };
    let key = text.trim();
    if key.is_empty() {
        bail!("the API key file {shown} is empty");
    }
    checked(key, &format!("the API key in {shown}"))
}

/// `key` (trimmed, not blank) as an admin key: visible ASCII only (it travels in an
/// `Authorization` header and a dashboard's form) and at least [`SHORTEST`] characters.
fn checked(key: &str, what: &str) -> Result<String> {
    if !key.chars().all(|c| c.is_ascii_graphic()) {
        bail!(
            "{what} holds a space or a character that is not visible ASCII: give the key alone (a random one: `openssl rand -hex 32`)"
        );
    }
    let length = key.len();
    if length < SHORTEST {
        bail!(
            "{what} is {length} characters long: an admin key needs at least {SHORTEST} random ones (`openssl rand -hex 32`)"
        );
    }
    Ok(key.to_owned())
}

#[cfg(test)]
mod tests {
    use super::{checked, from_file};

    const HEX: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn a_key_is_long_visible_ascii_and_never_shown_when_refused() {
        assert_eq!(checked(HEX, "k").expect("a key"), HEX);
        for refused in [
            &HEX[1..],
            "short",
            "0123456789abcdef 0123456789abcdef",
            "0123456789abcdef0123456789abcdeé",
        ] {
            let why = checked(refused, "MCPLEX_API_KEY")
                .expect_err("refused")
                .to_string();
            assert!(why.starts_with("MCPLEX_API_KEY "), "{why}");
            assert!(!why.contains(refused), "the value is never shown: {why}");
        }
    }

    #[test]
    fn a_key_file_is_read_trimmed_and_an_empty_or_missing_one_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("api-key");
        std::fs::write(&file, format!("{HEX}\n")).expect("write");
        assert_eq!(from_file(&file).expect("read"), HEX);
        std::fs::write(&file, "\n").expect("write");
        let why = from_file(&file).expect_err("empty").to_string();
        assert!(why.ends_with("is empty"), "{why}");
        std::fs::write(&file, "too-short-a-key").expect("write");
        let why = from_file(&file).expect_err("short").to_string();
        assert!(
            why.contains("is 15 characters long") && !why.contains("too-short-a-key"),
            "{why}"
        );
        let why = from_file(&dir.path().join("none"))
            .expect_err("missing")
            .to_string();
        assert!(why.starts_with("cannot read the API key file"), "{why}");
    }
}
