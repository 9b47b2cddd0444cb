//! PKCE (RFC 7636, S256 only) and the random `state`.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use crate::{OAuthError, Secret};

/// A code verifier and its S256 challenge.
#[derive(Debug, Clone)]
pub struct Pkce {
    pub verifier: Secret,
    pub challenge: String,
}

impl Pkce {
    /// A fresh verifier: 32 random bytes, base64url (43 characters, the RFC's minimum length).
    pub fn generate() -> Result<Pkce, OAuthError> {
        let verifier = random_text(32)?;
        let challenge = challenge_of(&verifier);
        Ok(Pkce {
            verifier: Secret::new(verifier),
            challenge,
        })
    }
}

/// `BASE64URL(SHA256(verifier))`, unpadded.
pub fn challenge_of(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// `bytes` random bytes from the operating system, base64url: for verifiers and `state`.
pub fn random_text(bytes: usize) -> Result<String, OAuthError> {
    let mut buffer = vec![0u8; bytes];
    getrandom::fill(&mut buffer).map_err(|e| OAuthError::Random(e.to_string()))?;
    Ok(URL_SAFE_NO_PAD.encode(buffer))
}
