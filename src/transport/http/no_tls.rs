//! https in a build without the `tls` cargo feature: the same functions as `trust` and `tls`,
//! each failing with NOT_SUPPORTED and a message that names the feature. Plain http works as
//! in any build; an https URL fails when the client connects, and the TLS settings fail when
//! they are set, so a host learns of the missing feature before anything is sent.

use super::HttpConfig;
use crate::error::{Error, Result, Status};
use std::path::Path;
use ureq::unversioned::transport::{Buffers, ConnectionDetails, NextTimeout, Transport};

/// Stands for the TLS client setup, of which this build has none.
#[derive(Clone, Copy, Debug)]
pub struct TlsSetup;

/// A client certificate chain and its key, in PEM: made by the setter, which then fails.
#[derive(Clone)]
#[allow(dead_code)]
pub struct ClientIdentity {
    pub cert_pem: String,
    pub key_pem: String,
}

impl std::fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientIdentity { .. }")
    }
}

fn unsupported(what: &str) -> Error {
    Error::new(
        Status::NotSupported,
        format!(
            "{what} needs TLS, which this build of mcpc leaves out (built without the `tls` \
             cargo feature)"
        ),
    )
}

/// Fails: a TLS setting is set in a build without TLS (`what` names it).
pub fn require_tls(what: &str) -> Result<()> {
    Err(unsupported(what))
}

pub fn certificates(_pem: &str, what: &str) -> Result<Vec<()>> {
    Err(unsupported(what))
}

pub fn read_pem_file(_path: &Path, what: &str) -> Result<String> {
    Err(unsupported(what))
}

pub fn read_ca_dir(_dir: &Path) -> Result<Vec<String>> {
    Err(unsupported("a CA directory"))
}

pub fn check_identity(_identity: &ClientIdentity) -> Result<()> {
    Err(unsupported("a client certificate"))
}

/// The setup `open` checks: an https URL (for the server or the proxy) cannot be reached.
pub fn client_config(config: &HttpConfig) -> Result<TlsSetup> {
    let https = |url: &str| {
        url.trim_start()
            .get(..8)
            .is_some_and(|s| s.eq_ignore_ascii_case("https://"))
    };
    if https(&config.url) {
        return Err(unsupported("the https URL"));
    }
    if config.proxy.as_deref().is_some_and(https) {
        return Err(unsupported("the https proxy"));
    }
    Ok(TlsSetup)
}

/// Never made: a connection that would need TLS fails in [`connect`].
#[derive(Debug)]
pub enum TlsTransport {}

impl Transport for TlsTransport {
    fn buffers(&mut self) -> &mut dyn Buffers {
        match *self {}
    }

    fn transmit_output(
        &mut self,
        _: usize,
        _: NextTimeout,
    ) -> std::result::Result<(), ureq::Error> {
        match *self {}
    }

    fn await_input(&mut self, _: NextTimeout) -> std::result::Result<bool, ureq::Error> {
        match *self {}
    }

    fn is_open(&mut self) -> bool {
        match *self {}
    }
}

/// Never reached for a URL `client_config` accepted; a proxy from the environment may still
/// ask for TLS, and is told no.
pub fn connect(
    _config: &TlsSetup,
    _details: &ConnectionDetails,
    host: &str,
    _inner: Box<dyn Transport>,
    _end: Option<std::sync::Arc<super::body_end::BodyEnd>>,
    _unread: Option<std::sync::Arc<super::body_end::Unread>>,
) -> std::result::Result<TlsTransport, ureq::Error> {
    Err(ureq::Error::Io(std::io::Error::other(
        unsupported(&format!("connecting to {host} over https")).message,
    )))
}
