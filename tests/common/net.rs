//! Company-network pieces for the tests, on 127.0.0.1: a CONNECT proxy that logs what passes
//! through it, certificates from a CA made in the test, and a TLS-terminating relay in front of
//! a plain server (our test server, or the proxy).

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, SubjectPublicKeyInfoDer};
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// What one tunnel carried.
#[derive(Debug, Default, Clone)]
pub struct Tunnel {
    pub target: String,
    pub proxy_authorization: Option<String>,
    /// Every byte the client sent through the tunnel.
    pub from_client: Vec<u8>,
    /// The tunnel is over: both sides were closed.
    pub closed: bool,
}

#[derive(Default)]
struct ProxyState {
    tunnels: Vec<Tunnel>,
    /// Answer CONNECT with 407 unless it carries this Proxy-Authorization.
    require: Option<String>,
    /// Never answer CONNECT (the tunnel stays pending until the client goes).
    hold: bool,
}

/// A CONNECT proxy on 127.0.0.1, a thread per tunnel.
#[derive(Clone)]
pub struct ConnectProxy {
    pub port: u16,
    shared: Arc<(Mutex<ProxyState>, Condvar)>,
}

impl ConnectProxy {
    pub fn start() -> ConnectProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let proxy = ConnectProxy {
            port: listener.local_addr().unwrap().port(),
            shared: Arc::default(),
        };
        let accepting = proxy.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let proxy = accepting.clone();
                std::thread::spawn(move || proxy.serve(client));
            }
        });
        proxy
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn require_authorization(&self, value: &str) {
        self.lock().require = Some(value.to_owned());
    }

    pub fn hold_connects(&self, hold: bool) {
        self.lock().hold = hold;
    }

    pub fn tunnels(&self) -> Vec<Tunnel> {
        self.lock().tunnels.clone()
    }

    /// Waits (up to 10 s) until `done` holds for the tunnels; returns them.
    pub fn wait_for(&self, done: impl Fn(&[Tunnel]) -> bool) -> Vec<Tunnel> {
        let deadline = Instant::now() + Duration::from_secs(10);
        let (lock, cvar) = &*self.shared;
        let mut state = lock.lock().unwrap();
        while !done(&state.tunnels) && Instant::now() < deadline {
            state = cvar
                .wait_timeout(state, deadline.saturating_duration_since(Instant::now()))
                .unwrap()
                .0;
        }
        state.tunnels.clone()
    }

    fn lock(&self) -> MutexGuard<'_, ProxyState> {
        self.shared.0.lock().unwrap()
    }

    fn update(&self, index: usize, change: impl FnOnce(&mut Tunnel)) {
        change(&mut self.lock().tunnels[index]);
        self.shared.1.notify_all();
    }

    fn serve(&self, mut client: TcpStream) {
        let Some(head) = read_head(&mut client) else {
            return;
        };
        let mut lines = head.lines();
        let target = lines
            .next()
            .and_then(|line| line.strip_prefix("CONNECT "))
            .and_then(|rest| rest.split(' ').next())
            .unwrap_or_default()
            .to_owned();
        let proxy_authorization = lines.find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("proxy-authorization")
                .then(|| value.trim().to_owned())
        });
        let index = {
            let mut state = self.lock();
            state.tunnels.push(Tunnel {
                target: target.clone(),
                proxy_authorization: proxy_authorization.clone(),
                ..Tunnel::default()
            });
            state.tunnels.len() - 1
        };
        self.shared.1.notify_all();
        let (require, hold) = {
            let state = self.lock();
            (state.require.clone(), state.hold)
        };
        if hold {
            // Pending until the client gives up and closes.
            let _ = client.read(&mut [0; 1]);
            self.update(index, |t| t.closed = true);
            return;
        }
        if require.is_some() && require != proxy_authorization {
            let _ = client.write_all(
                b"HTTP/1.1 407 Proxy Authentication Required\r\n\
                  Proxy-Authenticate: Basic realm=\"test\"\r\nContent-Length: 0\r\n\r\n",
            );
            self.update(index, |t| t.closed = true);
            return;
        }
        let Ok(server) = TcpStream::connect(&target) else {
            let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n");
            self.update(index, |t| t.closed = true);
            return;
        };
        client
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .unwrap();
        let upstream = {
            let (mut from, mut to) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            let proxy = self.clone();
            std::thread::spawn(move || {
                let mut buf = [0; 16 * 1024];
                while let Ok(n @ 1..) = from.read(&mut buf) {
                    proxy.update(index, |t| t.from_client.extend_from_slice(&buf[..n]));
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                let _ = to.shutdown(Shutdown::Both);
                let _ = from.shutdown(Shutdown::Both);
            })
        };
        let (mut from, mut to) = (server, client);
        let _ = io::copy(&mut from, &mut to);
        let _ = to.shutdown(Shutdown::Both);
        let _ = from.shutdown(Shutdown::Both);
        let _ = upstream.join();
        self.update(index, |t| t.closed = true);
    }
}

/// Reads a request head byte by byte (nothing past it is consumed).
fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut byte = [0; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).ok()? == 0 || head.len() > 16 * 1024 {
            return None;
        }
        head.push(byte[0]);
    }
    String::from_utf8(head).ok()
}

/// A CA made in the test, and what it signs.
pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// A certificate and its key, in PEM.
pub struct Identity {
    pub cert_pem: String,
    pub key_pem: String,
}

impl TestCa {
    pub fn new(name: &str) -> TestCa {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        TestCa { issuer }
    }

    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    #[cfg_attr(windows, allow(dead_code))] // the openssl CLI is not run under Wine
    pub fn key_pem(&self) -> String {
        self.issuer.key().serialize_pem()
    }

    /// A server certificate for `names` (DNS names or IP addresses).
    pub fn server(&self, names: &[&str]) -> Identity {
        self.sign(names, ExtendedKeyUsagePurpose::ServerAuth)
    }

    pub fn client(&self, name: &str) -> Identity {
        self.sign(&[name], ExtendedKeyUsagePurpose::ClientAuth)
    }

    fn sign(&self, names: &[&str], usage: ExtendedKeyUsagePurpose) -> Identity {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names).unwrap();
        params.extended_key_usages = vec![usage];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        Identity {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }
}

/// Handshake failures the relay saw, for assertions on the server's side.
#[derive(Clone, Default)]
pub struct RelayLog(Arc<Mutex<Vec<String>>>);

impl RelayLog {
    pub fn errors(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// A TLS server on 127.0.0.1 that forwards the plaintext of each connection to `backend`
/// (host:port). With `client_ca`, it requires a client certificate from that CA.
pub struct TlsRelay {
    pub port: u16,
    pub log: RelayLog,
}

impl TlsRelay {
    pub fn start(identity: &Identity, client_ca: Option<&TestCa>, backend: String) -> TlsRelay {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap();
        let builder = match client_ca {
            Some(ca) => {
                let mut roots = rustls::RootCertStore::empty();
                roots
                    .add(CertificateDer::from_pem_slice(ca.pem().as_bytes()).unwrap())
                    .unwrap();
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                    roots.into(),
                    provider,
                )
                .build()
                .unwrap();
                builder.with_client_cert_verifier(verifier)
            }
            None => builder.with_no_client_auth(),
        };
        TlsRelay::serve(builder, identity, backend)
    }

    /// A relay that requires exactly the client certificate `client_cert_pem`, whatever its
    /// X.509 version, as an OpenSSL server configured to trust it would (webpki, behind
    /// `start`, refuses version 1 certificates).
    #[cfg_attr(windows, allow(dead_code))] // the openssl CLI is not run under Wine
    pub fn start_pinned(identity: &Identity, client_cert_pem: &str, backend: String) -> TlsRelay {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = PinnedClientCert {
            cert: CertificateDer::from_pem_slice(client_cert_pem.as_bytes()).unwrap(),
            spki: public_key_of(client_cert_pem),
            algorithms: provider.signature_verification_algorithms,
        };
        let builder = rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_client_cert_verifier(Arc::new(verifier));
        TlsRelay::serve(builder, identity, backend)
    }

    fn serve(
        builder: rustls::ConfigBuilder<rustls::ServerConfig, rustls::server::WantsServerCert>,
        identity: &Identity,
        backend: String,
    ) -> TlsRelay {
        let chain = CertificateDer::pem_slice_iter(identity.cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_slice(identity.key_pem.as_bytes()).unwrap();
        let config = Arc::new(builder.with_single_cert(chain, key).unwrap());
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let relay = TlsRelay {
            port: listener.local_addr().unwrap().port(),
            log: RelayLog::default(),
        };
        let log = relay.log.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let (config, backend, log) = (config.clone(), backend.clone(), log.clone());
                std::thread::spawn(move || relay_one(config, client, &backend, &log));
            }
        });
        relay
    }
}

/// The public key (SubjectPublicKeyInfo) of a PEM certificate, as the openssl CLI reads it.
#[cfg_attr(windows, allow(dead_code))] // the openssl CLI is not run under Wine
fn public_key_of(cert_pem: &str) -> SubjectPublicKeyInfoDer<'static> {
    let pem = openssl(&["x509", "-pubkey", "-noout"], Some(cert_pem));
    SubjectPublicKeyInfoDer::from_pem_slice(pem.as_bytes()).unwrap()
}

/// Runs the openssl command-line tool (the setup script installs it) and returns its stdout.
#[cfg_attr(windows, allow(dead_code))] // the openssl CLI is not run under Wine
pub fn openssl(args: &[&str], stdin: Option<&str>) -> String {
    use std::process::{Command, Stdio};
    let mut child = Command::new("openssl")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the openssl command-line tool (scripts/setup installs it)");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    drop(input);
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Accepts one client certificate, compared byte for byte, and checks the handshake's
/// signature against its public key.
#[derive(Debug)]
struct PinnedClientCert {
    cert: CertificateDer<'static>,
    spki: SubjectPublicKeyInfoDer<'static>,
    algorithms: rustls::crypto::WebPkiSupportedAlgorithms,
}

impl rustls::server::danger::ClientCertVerifier for PinnedClientCert {
    fn root_hint_subjects(&self) -> &[rustls::DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::server::danger::ClientCertVerified, rustls::Error> {
        if end_entity.as_ref() != self.cert.as_ref() {
            return Err(rustls::Error::General(
                "not the expected certificate".into(),
            ));
        }
        Ok(rustls::server::danger::ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Err(rustls::Error::General("TLS 1.3 only".into()))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        _cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature_with_raw_key(
            message,
            &self.spki,
            dss,
            &self.algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// One connection: TLS on the client's side, plaintext to the backend, polled both ways.
fn relay_one(config: Arc<rustls::ServerConfig>, client: TcpStream, backend: &str, log: &RelayLog) {
    let poll = Some(Duration::from_millis(5));
    client.set_read_timeout(poll).unwrap();
    let conn = rustls::ServerConnection::new(config).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, client);
    let mut server: Option<TcpStream> = None;
    let mut buf = vec![0; 16 * 1024];
    let pending = |e: &io::Error| {
        matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        )
    };
    loop {
        match tls.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let server = server.get_or_insert_with(|| {
                    let stream = TcpStream::connect(backend).unwrap();
                    stream.set_read_timeout(poll).unwrap();
                    stream
                });
                if server.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            Err(e) if pending(&e) => {}
            Err(e) => {
                log.0.lock().unwrap().push(e.to_string());
                break;
            }
        }
        if let Some(stream) = server.as_mut() {
            match stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if tls.write_all(&buf[..n]).and_then(|_| tls.flush()).is_err() {
                        break;
                    }
                }
                Err(e) if pending(&e) => {}
                Err(_) => break,
            }
        }
    }
    tls.conn.send_close_notify();
    let _ = tls.flush();
    if let Some(stream) = server {
        let _ = stream.shutdown(Shutdown::Both);
    }
}
