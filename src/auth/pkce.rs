//! PKCE (RFC 7636, S256) and the `state` value, from the operating system's secure random
//! source.

use crate::error::{Error, Result};
use sha2::{Digest, Sha256};

/// A PKCE verifier and its S256 challenge.
pub struct Pkce {
    pub verifier: String,
    pub challenge: String,
}

impl Pkce {
    pub fn new() -> Result<Pkce> {
        // 32 random bytes: a 43-character verifier, the RFC's minimum length and 256 bits.
        let verifier = random_text(32)?;
        let challenge = base64url(&Sha256::digest(verifier.as_bytes()));
        Ok(Pkce {
            verifier,
            challenge,
        })
    }
}

/// `bytes` random bytes as unpadded base64url text.
pub fn random_text(bytes: usize) -> Result<String> {
    let mut buffer = vec![0u8; bytes];
    getrandom::getrandom(&mut buffer).map_err(|e| {
        Error::new(
            crate::error::Status::InternalError,
            format!("the operating system's random source failed: {e}"),
        )
    })?;
    Ok(base64url(&buffer))
}

/// Base64url without padding (RFC 4648 section 5).
pub fn base64url(bytes: &[u8]) -> String {
    crate::protocol::base64::base64(bytes)
        .trim_end_matches('=')
        .replace('+', "-")
        .replace('/', "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s256_is_base64url_of_sha256() {
        // SHA-256("abc") from FIPS 180-2, as unpadded base64url.
        assert_eq!(
            base64url(&Sha256::digest(b"abc")),
            "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0"
        );
    }

    #[test]
    fn verifiers_are_long_random_and_unique() {
        let (a, b) = (Pkce::new().unwrap(), Pkce::new().unwrap());
        assert_eq!(a.verifier.len(), 43);
        assert_ne!(a.verifier, b.verifier);
        assert_eq!(
            a.challenge,
            base64url(&Sha256::digest(a.verifier.as_bytes()))
        );
    }
}
