//! How the CLI knows that the process answering on a registered gateway's address is that
//! gateway before it sends the API key: a gateway registered in the store proves it holds the
//! key's verifier (which only the key's holder and the store's gateways can compute) by
//! answering a fresh nonce with a keyed hash of it, of its registration's id and of the address
//! it registered (so that a proof cannot be relayed from another replica, even one registered
//! at the same address on another host). A program that took a
//! dead gateway's port cannot answer, and the CLI falls back to the store.

use crate::StateError;

/// What the gateway registered as `instance` (its id in the store, unique per start) at
/// `address` answers to `nonce`, holding the API key's `verifier`. Replicas on several hosts
/// often register the same address (`0.0.0.0:8080`): the instance tells them apart.
pub fn identity_proof(verifier: &str, instance: &str, address: &str, nonce: &str) -> String {
    let message = format!("mcplex gateway identity\0{instance}\0{address}\0{nonce}");
    crate::secret::mac_hex(verifier.as_bytes(), message.as_bytes())
}

/// A fresh nonce for one proof (32 random bytes, hex).
pub fn identity_nonce() -> Result<String, StateError> {
    Ok(mcplex_trust::hex(&crate::secret::random_bytes(32)?))
}

/// Whether `nonce` is one a CLI sends: 32 to 128 hex digits.
pub fn well_formed_nonce(nonce: &str) -> bool {
    (32..=128).contains(&nonce.len()) && nonce.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proof_depends_on_the_key_the_address_and_the_nonce() {
        let nonce = identity_nonce().expect("nonce");
        assert!(well_formed_nonce(&nonce));
        let proof = identity_proof("key", "i1", "127.0.0.1:8080", &nonce);
        assert_eq!(proof, identity_proof("key", "i1", "127.0.0.1:8080", &nonce));
        assert_ne!(
            proof,
            identity_proof("other", "i1", "127.0.0.1:8080", &nonce)
        );
        assert_ne!(proof, identity_proof("key", "i2", "127.0.0.1:8080", &nonce));
        assert_ne!(proof, identity_proof("key", "i1", "127.0.0.1:8081", &nonce));
        assert_ne!(proof, identity_proof("key", "i1", "127.0.0.1:8080", "00"));
        assert!(!well_formed_nonce("short"));
        assert!(!well_formed_nonce(&"z".repeat(40)));
    }
}
