//! Random secrets and their keyed hashes.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::StateError;

/// `len` bytes from the operating system's generator.
pub(crate) fn random_bytes(len: usize) -> Result<Vec<u8>, StateError> {
    let mut bytes = vec![0u8; len];
    getrandom::fill(&mut bytes).map_err(|e| StateError::Random(e.to_string()))?;
    Ok(bytes)
}

/// HMAC-SHA256 of `message` under `key`, as lowercase hex.
pub(crate) fn mac_hex(key: &[u8], message: &[u8]) -> String {
    // HMAC accepts keys of any length; `new_from_slice` cannot fail for it.
    let mac = <Hmac<Sha256> as Mac>::new_from_slice(key)
        .map(|mut mac| {
            mac.update(message);
            mac.finalize().into_bytes().to_vec()
        })
        .unwrap_or_default();
    mcplex_trust::hex(&mac)
}

/// Whether two texts are equal, in time that depends only on their lengths.
pub(crate) fn same_text(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
