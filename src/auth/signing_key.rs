//! The host's private key for `private_key_jwt` (RFC 7523 section 2.2): a PEM the host gives,
//! parsed once when it is set, then used only to sign the client's assertions. An ECDSA
//! P-256 key signs ES256, an RSA key RS256. The key never leaves this type: its `Debug` shows
//! the algorithm and key id only.
//!
//! Signing uses ring (through the `tls` feature, as rustls does); without it, setting a key
//! fails with NOT_SUPPORTED. A key the host keeps itself (in an HSM, a keychain) signs through
//! the host's [`HostSigner`] instead: the library hands it the JWS signing input and puts the
//! signature it returns in the assertion.

use crate::error::{Error, Result, Status};
use std::fmt;
use std::sync::Arc;

/// Signs a JWS signing input (`base64url(header) "." base64url(claims)`) with the host's key
/// and returns the JWS signature bytes (for ES256, the raw `r || s`, 64 bytes, not DER), or
/// an error text. Runs on the thread of the token request, with no lock held.
pub type HostSigner = Arc<dyn Fn(&[u8]) -> std::result::Result<Vec<u8>, String> + Send + Sync>;

/// The JWS algorithms a host signer may name (RFC 7518 section 3.1 and RFC 8037, the
/// asymmetric ones: an assertion signed with a shared secret would be no private key).
const HOST_ALGORITHMS: [&str; 10] = [
    "ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA",
];

/// The most bytes a host signature may have (an RSA 8192-bit signature).
pub const SIGNATURE_LIMIT: usize = 1024;

/// A parsed private key and the JWS algorithm it signs with.
#[derive(Clone)]
pub struct SigningKey {
    signer: Arc<Backend>,
    /// The `kid` put in each assertion's header (how the authorization server finds the
    /// public key in the client's JWKS), if the host gave one.
    key_id: Option<String>,
}

impl SigningKey {
    /// Parses a PEM private key: PKCS#8 (`BEGIN PRIVATE KEY`, ECDSA P-256 or RSA) or PKCS#1
    /// (`BEGIN RSA PRIVATE KEY`). An encrypted key, another curve, or anything else is
    /// refused with INVALID_ARGUMENT; the message never quotes the text.
    pub fn from_pem(pem: &str, key_id: Option<&str>) -> Result<SigningKey> {
        let (label, der) = pem_block(pem)?;
        let signer = Signer::from_der(&label, &der)?;
        Ok(SigningKey {
            signer: Arc::new(Backend::Local(signer)),
            key_id: key_id.map(str::to_owned),
        })
    }

    /// A key the host keeps: `sign` makes the signatures of JWS algorithm `algorithm` (one of
    /// ES256/384/512, RS256/384/512, PS256/384/512, EdDSA; another is INVALID_ARGUMENT).
    pub fn from_host_signer(
        algorithm: &str,
        key_id: Option<&str>,
        sign: HostSigner,
    ) -> Result<SigningKey> {
        let Some(algorithm) = HOST_ALGORITHMS.iter().find(|a| **a == algorithm) else {
            return Err(Error::invalid(format!(
                "the signing algorithm must be one of {}",
                HOST_ALGORITHMS.join(", ")
            )));
        };
        Ok(SigningKey {
            signer: Arc::new(Backend::Host { algorithm, sign }),
            key_id: key_id.map(str::to_owned),
        })
    }

    /// The JWS `alg` of this key: "ES256" or "RS256" for a PEM key, the host signer's own.
    pub fn algorithm(&self) -> &'static str {
        match &*self.signer {
            Backend::Local(signer) => signer.algorithm(),
            Backend::Host { algorithm, .. } => algorithm,
        }
    }

    pub fn key_id(&self) -> Option<&str> {
        self.key_id.as_deref()
    }

    /// A new ECDSA P-256 key (ES256), made with the system's random source.
    pub fn generate_es256() -> Result<SigningKey> {
        let signer = Signer::generate_es256()?;
        Ok(SigningKey {
            signer: Arc::new(Backend::Local(signer)),
            key_id: None,
        })
    }

    /// The public point of an ES256 key (uncompressed SEC1: 0x04, x, y); `None` for RSA.
    /// (A host's key: `None`, its public key is not known here.)
    pub(crate) fn es256_public_point(&self) -> Option<Vec<u8>> {
        match &*self.signer {
            Backend::Local(signer) => signer.es256_public_point(),
            Backend::Host { .. } => None,
        }
    }

    /// The JWS signature of `message` (for ES256, the raw `r || s` JWS wants, not DER). A
    /// host signer that fails, or gives no signature or one over 1 KiB, is UNAUTHORIZED: the
    /// request it was for goes without credentials.
    pub fn sign(&self, message: &[u8]) -> Result<Vec<u8>> {
        match &*self.signer {
            Backend::Local(signer) => signer.sign(message),
            Backend::Host { sign, .. } => match sign(message) {
                Ok(signature) if !signature.is_empty() && signature.len() <= SIGNATURE_LIMIT => {
                    Ok(signature)
                }
                Ok(_) => Err(Error::new(
                    Status::Unauthorized,
                    format!(
                        "the host's signer gave no signature, or one over {SIGNATURE_LIMIT} bytes"
                    ),
                )),
                Err(why) => Err(Error::new(
                    Status::Unauthorized,
                    format!("the host's signer failed: {why}"),
                )),
            },
        }
    }
}

/// Who signs: the library with a parsed key, or the host. One per key, behind an `Arc`, so
/// the size of the parsed key does not matter.
#[allow(clippy::large_enum_variant)]
enum Backend {
    Local(Signer),
    Host {
        algorithm: &'static str,
        sign: HostSigner,
    },
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("algorithm", &self.algorithm())
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

/// The one PEM block of `pem`: its label and its decoded bytes.
fn pem_block(pem: &str) -> Result<(String, Vec<u8>)> {
    let refused = || Error::invalid("the private key is not a PEM block");
    let begin = pem.find("-----BEGIN ").ok_or_else(refused)?;
    let after_begin = &pem[begin + "-----BEGIN ".len()..];
    let label_end = after_begin.find("-----").ok_or_else(refused)?;
    let label = after_begin[..label_end].to_owned();
    let body = &after_begin[label_end + "-----".len()..];
    let end = body
        .find(&format!("-----END {label}-----"))
        .ok_or_else(refused)?;
    let der = crate::protocol::base64::decode_base64(&body[..end])
        .ok_or_else(|| Error::invalid("the private key's PEM body is not base64"))?;
    Ok((label, der))
}

#[cfg(feature = "tls")]
enum Signer {
    Es256(ring::signature::EcdsaKeyPair),
    Rs256(ring::signature::RsaKeyPair),
}

#[cfg(feature = "tls")]
impl Signer {
    fn from_der(label: &str, der: &[u8]) -> Result<Signer> {
        use ring::signature::{EcdsaKeyPair, RsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
        match label {
            "PRIVATE KEY" => {
                let rng = ring::rand::SystemRandom::new();
                if let Ok(pair) =
                    EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der, &rng)
                {
                    return Ok(Signer::Es256(pair));
                }
                RsaKeyPair::from_pkcs8(der).map(Signer::Rs256).map_err(|_| {
                    Error::invalid(
                        "the private key is neither an ECDSA P-256 nor an RSA PKCS#8 key \
                         (or it is malformed)",
                    )
                })
            }
            "RSA PRIVATE KEY" => RsaKeyPair::from_der(der)
                .map(Signer::Rs256)
                .map_err(|_| Error::invalid("the RSA private key is malformed or too weak")),
            "ENCRYPTED PRIVATE KEY" => Err(Error::invalid(
                "the private key is encrypted; give it decrypted (PKCS#8)",
            )),
            _ => Err(Error::invalid(
                "the PEM block is not a private key this library signs with (PKCS#8 \
                 \"PRIVATE KEY\" for ECDSA P-256 or RSA, or \"RSA PRIVATE KEY\")",
            )),
        }
    }

    fn generate_es256() -> Result<Signer> {
        use ring::signature::{EcdsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
        let rng = ring::rand::SystemRandom::new();
        let failed = || Error::new(Status::InternalError, "generating a P-256 key failed");
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| failed())?;
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .map(Signer::Es256)
            .map_err(|_| failed())
    }

    fn es256_public_point(&self) -> Option<Vec<u8>> {
        use ring::signature::KeyPair;
        match self {
            Signer::Es256(pair) => Some(pair.public_key().as_ref().to_vec()),
            Signer::Rs256(_) => None,
        }
    }

    fn algorithm(&self) -> &'static str {
        match self {
            Signer::Es256(_) => "ES256",
            Signer::Rs256(_) => "RS256",
        }
    }

    fn sign(&self, message: &[u8]) -> Result<Vec<u8>> {
        let rng = ring::rand::SystemRandom::new();
        let failed = || Error::new(Status::InternalError, "signing the client assertion failed");
        match self {
            Signer::Es256(pair) => pair
                .sign(&rng, message)
                .map(|signature| signature.as_ref().to_vec())
                .map_err(|_| failed()),
            Signer::Rs256(pair) => {
                let mut signature = vec![0; pair.public().modulus_len()];
                pair.sign(
                    &ring::signature::RSA_PKCS1_SHA256,
                    &rng,
                    message,
                    &mut signature,
                )
                .map_err(|_| failed())?;
                Ok(signature)
            }
        }
    }
}

/// Without ring there is nothing to sign with.
#[cfg(not(feature = "tls"))]
enum Signer {}

#[cfg(not(feature = "tls"))]
impl Signer {
    fn from_der(_label: &str, _der: &[u8]) -> Result<Signer> {
        Err(Error::new(
            Status::NotSupported,
            "private_key_jwt needs the library's tls feature (ring signs the assertions)",
        ))
    }

    fn generate_es256() -> Result<Signer> {
        Err(Error::new(
            Status::NotSupported,
            "DPoP needs the library's tls feature (ring signs the proofs)",
        ))
    }

    fn es256_public_point(&self) -> Option<Vec<u8>> {
        match *self {}
    }

    fn algorithm(&self) -> &'static str {
        match *self {}
    }

    fn sign(&self, _message: &[u8]) -> Result<Vec<u8>> {
        match *self {}
    }
}

#[cfg(all(test, feature = "tls"))]
mod tests {
    use super::*;

    #[test]
    fn garbage_and_unsupported_keys_are_refused_without_quoting_them() {
        let cases = [
            "not a pem",
            "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleS1ieXRlcw==\n-----END PRIVATE KEY-----",
            "-----BEGIN PRIVATE KEY-----\n*not base64*\n-----END PRIVATE KEY-----",
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----",
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----",
        ];
        for pem in cases {
            let error = SigningKey::from_pem(pem, None).unwrap_err();
            assert_eq!(error.status, Status::InvalidArgument, "{pem}");
            assert!(!error.message.contains("c2VjcmV0"), "{}", error.message);
        }
    }
}
