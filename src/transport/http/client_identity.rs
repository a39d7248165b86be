//! The client certificate a connection presents, checked only for what is the client's to
//! check: the certificate parses as X.509 enough to find its public key, and that key is the
//! private key's. Whether the certificate is acceptable (its version, extensions, issuer,
//! dates) is the server's judgement: rustls' own loader parses it as webpki would parse a
//! server's certificate and refuses, for one, the version 1 certificates that
//! `openssl x509 -req` makes without extensions, which servers accept.

use crate::error::{Error, Result};
use rustls::client::ResolvesClientCert;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;
use rustls::SignatureScheme;
use std::sync::Arc;

/// The certificate chain and key, once the key is known to be the certificate's.
pub fn certified_key(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    provider: &CryptoProvider,
) -> Result<CertifiedKey> {
    let signing_key = provider
        .key_provider
        .load_private_key(key)
        .map_err(|e| Error::invalid(format!("client key: {e}")))?;
    let end_entity = chain
        .first()
        .ok_or_else(|| Error::invalid("client certificate: no certificate"))?;
    let cert_key = subject_public_key_info(end_entity).ok_or_else(|| {
        Error::invalid("client certificate: not an X.509 certificate (no public key found)")
    })?;
    match signing_key.public_key() {
        Some(key) if key.as_ref() == cert_key => {}
        Some(_) => {
            return Err(Error::invalid(
                "client certificate and key: the key is not the certificate's",
            ))
        }
        None => {
            return Err(Error::invalid(
                "client key: its public key cannot be compared with the certificate's",
            ))
        }
    }
    Ok(CertifiedKey::new(chain, signing_key))
}

/// Presents the same certificate to every server that asks for one.
#[derive(Debug)]
pub struct Presented(pub Arc<CertifiedKey>);

impl ResolvesClientCert for Presented {
    fn resolve(&self, _hints: &[&[u8]], _schemes: &[SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }

    fn has_certs(&self) -> bool {
        true
    }
}

const SEQUENCE: u8 = 0x30;
const INTEGER: u8 = 0x02;
const VERSION: u8 = 0xa0; // [0] EXPLICIT, absent in version 1

/// The SubjectPublicKeyInfo of a DER certificate, tag and length included (RFC 5280 4.1):
/// Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { [0] version OPTIONAL, serialNumber,
/// signature, issuer, validity, subject, subjectPublicKeyInfo, ... }, ... }.
fn subject_public_key_info(cert: &[u8]) -> Option<&[u8]> {
    let (certificate, _) = element(cert, SEQUENCE)?;
    let (tbs, _) = element(contents(certificate)?, SEQUENCE)?;
    let mut rest = contents(tbs)?;
    if rest.first() == Some(&VERSION) {
        rest = element(rest, VERSION)?.1;
    }
    rest = element(rest, INTEGER)?.1;
    for _signature_issuer_validity_subject in 0..4 {
        rest = element(rest, SEQUENCE)?.1;
    }
    Some(element(rest, SEQUENCE)?.0)
}

/// The first DER element of `der` if its tag is `tag` (whole, with tag and length), and what
/// follows it.
fn element(der: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    if *der.first()? != tag {
        return None;
    }
    let first = *der.get(1)?;
    let (length, header) = if first < 0x80 {
        (first as usize, 2)
    } else {
        let count = (first & 0x7f) as usize;
        if count == 0 || count > 4 {
            return None;
        }
        let bytes = der.get(2..2 + count)?;
        let length = bytes.iter().fold(0usize, |n, b| (n << 8) | *b as usize);
        (length, 2 + count)
    };
    let end = header.checked_add(length)?;
    if end > der.len() {
        return None;
    }
    Some(der.split_at(end))
}

/// What an element holds, without its tag and length.
fn contents(element: &[u8]) -> Option<&[u8]> {
    let first = *element.get(1)?;
    let header = if first < 0x80 {
        2
    } else {
        2 + (first & 0x7f) as usize
    };
    element.get(header..)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_or_foreign_der_has_no_key() {
        assert_eq!(subject_public_key_info(&[]), None);
        assert_eq!(subject_public_key_info(&[0x30, 0x82, 0xff]), None);
        assert_eq!(
            subject_public_key_info(&[0x30, 0x03, 0x02, 0x01, 0x00]),
            None
        );
        assert_eq!(subject_public_key_info(b"not DER at all"), None);
    }
}
