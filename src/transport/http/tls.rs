//! TLS on top of any connection ureq can use: the TCP socket, or a proxy's tunnel (itself
//! possibly TLS to an https proxy). Our own layer rather than ureq's, for the trust settings of
//! [`super::trust`] and for handshake failures that say what went wrong.

use super::body_end::{BodyEnd, Layer, Unread, WatchedBuffers};
use super::buffers::ConnectionBuffers;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};
use std::fmt;
use std::io::{self, Read, Write};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, NextTimeout, Transport, TransportAdapter,
};

pub struct TlsTransport {
    buffers: WatchedBuffers,
    stream: StreamOwned<ClientConnection, TransportAdapter>,
    /// Told what this layer holds unread (see `body_end::Unread`).
    unread: Option<Arc<Unread>>,
}

/// Runs the handshake with `host` over `inner`, within the connect timeout of `details`.
/// `host` is a DNS name or an IP literal (without brackets). With `end`, the decrypted input
/// is watched for a body's end (see `body_end`); with `unread`, what it holds unread.
pub fn connect(
    config: &Arc<ClientConfig>,
    details: &ConnectionDetails,
    host: &str,
    inner: Box<dyn Transport>,
    end: Option<Arc<BodyEnd>>,
    unread: Option<Arc<Unread>>,
) -> Result<TlsTransport, ureq::Error> {
    let name = ServerName::try_from(host.trim_start_matches('[').trim_end_matches(']'))
        .map_err(|_| failed(host, format!("{host:?} is not a valid TLS server name")))?
        .to_owned();
    let mut conn =
        ClientConnection::new(config.clone(), name).map_err(|e| failed(host, e.to_string()))?;
    let mut sock = TransportAdapter::new(inner, details.current_time.clone());
    sock.set_timeout(details.timeout);
    while conn.is_handshaking() {
        if let Err(e) = conn.complete_io(&mut sock) {
            return Err(handshake_error(host, e, details));
        }
    }
    let config = details.config;
    Ok(TlsTransport {
        buffers: WatchedBuffers::new(
            ConnectionBuffers::new(config.input_buffer_size(), config.output_buffer_size()),
            end,
        )
        .noting_unread(unread.clone().map(|unread| (unread, Layer::Tls))),
        stream: StreamOwned { conn, sock },
        unread,
    })
}

/// A handshake failure as the host should read it: the certificate problem named by rustls
/// (e.g. "invalid peer certificate: UnknownIssuer"), a timeout as a timeout.
fn handshake_error(host: &str, error: io::Error, details: &ConnectionDetails) -> ureq::Error {
    if matches!(
        error.kind(),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
    ) {
        return ureq::Error::Timeout(details.timeout.reason);
    }
    // rustls reports its own errors as InvalidData with the rustls::Error inside.
    let why = match error
        .get_ref()
        .and_then(|e| e.downcast_ref::<rustls::Error>())
    {
        Some(rustls) => rustls.to_string(),
        None => error.to_string(),
    };
    failed(host, why)
}

fn failed(host: &str, why: String) -> ureq::Error {
    ureq::Error::Io(io::Error::other(format!(
        "TLS handshake with {host} failed: {why}"
    )))
}

impl Transport for TlsTransport {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        self.stream.sock.set_timeout(timeout);
        let output = &self.buffers.output()[..amount];
        self.stream.write_all(output)?;
        self.stream.flush()?;
        Ok(())
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.stream.sock.set_timeout(timeout);
        let input = self.buffers.input_append_buf();
        let amount = self.stream.read(input)?;
        self.buffers.input_appended(amount);
        if let Some(unread) = &self.unread {
            // Records decrypted and not handed on yet (more than the input had room for). An
            // error is left for the next read to report.
            let pending = match self.stream.conn.process_new_packets() {
                Ok(state) => state.plaintext_bytes_to_read() > 0,
                Err(_) => true,
            };
            unread.decrypted.store(pending, Ordering::Release);
        }
        Ok(amount > 0)
    }

    fn is_open(&mut self) -> bool {
        // Asked before the connection is pooled: idle, it needs no buffers.
        let open = self.stream.sock.get_mut().is_open();
        self.buffers.give_back();
        open
    }

    fn is_tls(&self) -> bool {
        true
    }
}

impl fmt::Debug for TlsTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsTransport").finish()
    }
}
