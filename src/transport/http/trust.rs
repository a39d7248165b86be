//! What https connections trust, and the certificate they show: the rustls client setup built
//! from an [`HttpConfig`](super::HttpConfig).
//!
//! By default the server's certificate must chain to the bundled Mozilla roots (webpki-roots).
//! The host can add CAs (PEM), replace the bundled roots with its CAs, add the operating
//! system's store, and present a client certificate. There is no way to turn verification off.

use super::client_identity;
use super::HttpConfig;
use crate::error::{Error, Result};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore};
use std::path::Path;
use std::sync::{Arc, OnceLock};

/// The TLS client setup every https connection of a client uses.
pub type TlsSetup = Arc<ClientConfig>;

/// TLS settings are accepted: this build has TLS (see `no_tls` for one without).
pub fn require_tls(_what: &str) -> Result<()> {
    Ok(())
}

/// A client certificate chain and its key, in PEM.
#[derive(Clone)]
pub struct ClientIdentity {
    pub cert_pem: String,
    pub key_pem: String,
}

impl std::fmt::Debug for ClientIdentity {
    // The key stays out of logs and debug output.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientIdentity { .. }")
    }
}

/// The certificates of a PEM text, or why there are none. `what` names the source in messages.
pub fn certificates(pem: &str, what: &str) -> Result<Vec<CertificateDer<'static>>> {
    let mut certs = Vec::new();
    for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
        certs.push(cert.map_err(|e| Error::invalid(format!("{what}: bad PEM: {e}")))?);
    }
    if certs.is_empty() {
        return Err(Error::invalid(format!(
            "{what}: no certificate (no PEM block \"BEGIN CERTIFICATE\")"
        )));
    }
    Ok(certs)
}

/// A PEM text's first private key (PKCS#8, PKCS#1 or SEC1).
fn private_key(pem: &str, what: &str) -> Result<PrivateKeyDer<'static>> {
    PrivateKeyDer::from_pem_slice(pem.as_bytes())
        .map_err(|e| Error::invalid(format!("{what}: no usable private key: {e}")))
}

/// Reads a PEM file, with the path in any error.
pub fn read_pem_file(path: &Path, what: &str) -> Result<String> {
    std::fs::read_to_string(path)
        .map_err(|e| Error::invalid(format!("{what} {}: {e}", path.display())))
}

/// The CA certificates of every file of `dir` that holds some (like curl's --capath: other
/// files are skipped). Fails if there are none at all.
pub fn read_ca_dir(dir: &Path) -> Result<Vec<String>> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| Error::invalid(format!("CA directory {}: {e}", dir.display())))?;
    let mut found = Vec::new();
    let mut paths: Vec<_> = entries.flatten().map(|entry| entry.path()).collect();
    paths.sort();
    for path in paths.into_iter().filter(|path| path.is_file()) {
        if let Ok(text) = std::fs::read_to_string(&path) {
            if certificates(&text, "").is_ok() {
                found.push(text);
            }
        }
    }
    if found.is_empty() {
        return Err(Error::invalid(format!(
            "CA directory {}: no file with a PEM certificate",
            dir.display()
        )));
    }
    Ok(found)
}

/// Checks a client certificate and key: both parse, and the key belongs to the certificate.
pub fn check_identity(identity: &ClientIdentity) -> Result<()> {
    let roots = RootCertStore::empty();
    with_identity(
        ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::invalid(format!("TLS setup: {e}")))?
            .with_root_certificates(roots),
        identity,
    )
    .map(|_| ())
}

/// The rustls client setup for `config`. Errors are the host's (INVALID_ARGUMENT).
///
/// Clients that keep the default trust (the bundled roots, no client certificate) share one
/// setup: the roots are the largest thing an idle HTTP client would otherwise hold a copy of.
pub fn client_config(trust: &HttpConfig) -> Result<Arc<ClientConfig>> {
    let bundled_roots_only = !trust.replace_roots
        && trust.ca_pem.is_empty()
        && !trust.system_roots
        && trust.client_identity.is_none();
    if !bundled_roots_only {
        return new_client_config(trust);
    }
    static BUNDLED_ROOTS_ONLY: OnceLock<Arc<ClientConfig>> = OnceLock::new();
    if let Some(shared) = BUNDLED_ROOTS_ONLY.get() {
        return Ok(shared.clone());
    }
    let setup = new_client_config(trust)?;
    Ok(BUNDLED_ROOTS_ONLY.get_or_init(|| setup).clone())
}

/// A setup of its own for `config`.
fn new_client_config(trust: &HttpConfig) -> Result<Arc<ClientConfig>> {
    let mut roots = RootCertStore::empty();
    if !trust.replace_roots {
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    }
    for (index, pem) in trust.ca_pem.iter().enumerate() {
        for cert in certificates(pem, &format!("CA certificate #{}", index + 1))? {
            roots
                .add(cert)
                .map_err(|e| Error::invalid(format!("CA certificate #{}: {e}", index + 1)))?;
        }
    }
    if trust.system_roots {
        // Unreadable entries of the store are skipped; an empty store is reported below.
        let system = rustls_native_certs::load_native_certs();
        roots.add_parsable_certificates(system.certs);
    }
    if roots.is_empty() {
        return Err(Error::invalid(
            "no trusted root certificate: the bundled roots are replaced and no CA was added \
             (nor found in the system store)",
        ));
    }
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::invalid(format!("TLS setup: {e}")))?
        .with_root_certificates(roots);
    let config = match &trust.client_identity {
        Some(identity) => with_identity(builder, identity)?,
        None => builder.with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

/// The setup presenting `identity`. Only the key's match with the certificate is checked here
/// (`client_identity`); the certificate's worth is the server's to judge.
fn with_identity(
    builder: rustls::ConfigBuilder<ClientConfig, rustls::client::WantsClientCert>,
    identity: &ClientIdentity,
) -> Result<ClientConfig> {
    let chain = certificates(&identity.cert_pem, "client certificate")?;
    let key = private_key(&identity.key_pem, "client key")?;
    let certified = client_identity::certified_key(chain, key, &provider())?;
    Ok(
        builder
            .with_client_cert_resolver(Arc::new(client_identity::Presented(Arc::new(certified)))),
    )
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}
