//! DPoP (RFC 9449): proof of possession for tokens. The client holds a P-256 key; every
//! token request and every request to the MCP server carries a fresh proof, a JWT signed with
//! that key that names the method and URL it is for (and, at the MCP server, a hash of the
//! access token), so a stolen token is useless without the key. A server may ask for a nonce
//! of its own in the proofs (`DPoP-Nonce`); it is kept per origin and put only in proofs for
//! that origin.

use super::now;
use super::pkce::{base64url, random_text};
use super::signing_key::SigningKey;
use crate::error::{Error, Result};
use crate::sync::lock;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

/// The header that carries a proof, and the one a server sends its nonce in.
pub const DPOP_HEADER: &str = "DPoP";
pub const NONCE_HEADER: &str = "DPoP-Nonce";
/// The OAuth error of a server that wants its nonce in the proof.
pub const USE_NONCE_ERROR: &str = "use_dpop_nonce";

/// The client's proof key: generated, or the host's ECDSA P-256 key (PEM). The private key
/// never leaves it; `Debug` shows nothing of it.
#[derive(Clone)]
pub struct DpopKey {
    key: SigningKey,
    /// The public key as a JWK, put in every proof's header.
    jwk: Value,
}

impl DpopKey {
    /// A new P-256 key, for this client's options only.
    pub fn generate() -> Result<DpopKey> {
        DpopKey::from_signing_key(SigningKey::generate_es256()?)
    }

    /// The host's key: a PKCS#8 PEM of an ECDSA P-256 key (others are refused with
    /// INVALID_ARGUMENT, the text never quoted).
    pub fn from_pem(pem: &str) -> Result<DpopKey> {
        DpopKey::from_signing_key(SigningKey::from_pem(pem, None)?)
    }

    fn from_signing_key(key: SigningKey) -> Result<DpopKey> {
        let point = key
            .es256_public_point()
            .filter(|p| p.len() == 65 && p[0] == 4)
            .ok_or_else(|| Error::invalid("a DPoP key must be an ECDSA P-256 key"))?;
        let jwk = json!({
            "kty": "EC",
            "crv": "P-256",
            "x": base64url(&point[1..33]),
            "y": base64url(&point[33..]),
        });
        Ok(DpopKey { key, jwk })
    }

    /// The public key as a JWK (what a server binds tokens to).
    pub fn public_jwk(&self) -> &Value {
        &self.jwk
    }
}

impl fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DpopKey").finish_non_exhaustive()
    }
}

/// One client's DPoP state: its key and the nonces servers asked for.
pub(crate) struct Dpop {
    key: DpopKey,
    /// The proofs' encoded header (`typ`, `alg`, the public key), the same in each.
    header: String,
    /// The latest `DPoP-Nonce` of each origin (`scheme://host:port`).
    nonces: Mutex<HashMap<String, String>>,
}

impl Dpop {
    pub fn new(key: DpopKey) -> Dpop {
        let header = json!({ "typ": "dpop+jwt", "alg": "ES256", "jwk": key.jwk });
        Dpop {
            header: base64url(header.to_string().as_bytes()),
            key,
            nonces: Mutex::default(),
        }
    }

    /// A fresh proof for one request: `method` to `url`; with `access_token` (a request to
    /// the MCP server) its hash goes in `ath`. The origin's nonce goes in when it sent one.
    pub fn proof(&self, method: &str, url: &str, access_token: Option<&str>) -> Result<String> {
        let mut claims = json!({
            "jti": random_text(16)?,
            "htm": method,
            "htu": target(url),
            "iat": now(),
        });
        if let Some(nonce) = lock(&self.nonces).get(&origin(url)) {
            claims["nonce"] = json!(nonce);
        }
        if let Some(token) = access_token {
            claims["ath"] = json!(base64url(&Sha256::digest(token.as_bytes())));
        }
        let signing_input = format!(
            "{}.{}",
            self.header,
            base64url(claims.to_string().as_bytes())
        );
        let signature = self.key.key.sign(signing_input.as_bytes())?;
        Ok(format!("{signing_input}.{}", base64url(&signature)))
    }

    /// The first part of every proof: taught to the redaction once, it keeps any proof
    /// (which is a credential while it is fresh) out of messages without learning each one.
    pub fn proof_header(&self) -> &str {
        &self.header
    }

    /// The nonce proofs for `url` carry now.
    pub fn nonce_for(&self, url: &str) -> Option<String> {
        lock(&self.nonces).get(&origin(url)).cloned()
    }

    /// Keeps the nonce `url`'s server sent, for the proofs to its origin. False when it is
    /// not one a proof can carry, or not new (the token endpoint's retry: the proof had it).
    pub fn remember_nonce(&self, url: &str, nonce: &str) -> bool {
        let nonce = nonce.trim();
        // A nonce goes in a JWT claim: printable ASCII only (RFC 9449 section 8.1).
        if nonce.is_empty() || nonce.len() > 1024 || !nonce.bytes().all(|b| b.is_ascii_graphic()) {
            return false;
        }
        let previous = lock(&self.nonces).insert(origin(url), nonce.to_owned());
        previous.as_deref() != Some(nonce)
    }
}

/// `htu`: the URL without its query and fragment (RFC 9449 section 4.2).
fn target(url: &str) -> &str {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    &url[..end]
}

/// The origin of a URL (`scheme://authority`, lowercased), which a nonce belongs to.
fn origin(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    format!("{scheme}://{}", &rest[..end]).to_ascii_lowercase()
}

#[cfg(all(test, feature = "tls"))]
mod tests {
    use super::*;

    #[test]
    fn nonces_stay_with_their_origin() {
        let dpop = Dpop::new(DpopKey::generate().unwrap());
        assert!(dpop.remember_nonce("https://as.example/token", "n1"));
        assert!(!dpop.remember_nonce("https://AS.example/other?x", "n1"));
        let claims = |proof: &str| -> Value {
            let mut part = proof.split('.').nth(1).unwrap().replace('-', "+");
            part = part.replace('_', "/");
            while part.len() % 4 != 0 {
                part.push('=');
            }
            let bytes = crate::protocol::base64::decode_base64(&part).unwrap();
            serde_json::from_slice(&bytes).unwrap()
        };
        let here = claims(
            &dpop
                .proof("POST", "https://as.example/token?q#f", None)
                .unwrap(),
        );
        assert_eq!(here["nonce"], "n1");
        assert_eq!(here["htu"], "https://as.example/token");
        let elsewhere = claims(&dpop.proof("POST", "https://mcp.example/mcp", None).unwrap());
        assert!(elsewhere.get("nonce").is_none());
        assert!(!dpop.remember_nonce("https://as.example/", "bad nonce"));
    }
}
