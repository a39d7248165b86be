//! The Streamable HTTP transport, for both protocol eras.
//!
//! Every request is its own exchange: a worker thread (reused, see `super::workers`) POSTs it on a
//! pooled connection, reads the answer (one JSON body or an SSE stream, see `exchange`), and
//! hands every message it meets to the engine. The caller never waits on the socket, so a
//! cancel wakes it at once; how the server learns of the cancel depends on the era:
//! - legacy (2025-11-25 and older): the engine POSTs `notifications/cancelled` on another
//!   connection once the request was written, then `abandon` drops the request's stream;
//! - modern (2026-07-28): `abandon` shuts the request's socket down at once, on the thread that
//!   takes the cancel (the caller's). The server sees its stream close, which is the cancel
//!   signal of that revision; nothing else is sent.
//!
//! The legacy era also has a session: the `Mcp-Session-Id` of the `initialize` response is sent
//! on every later request, a 404 to it ends the call with SESSION_EXPIRED, and close DELETEs it.
//! It also has a standalone GET stream for what belongs to no call (`listener`), and streams
//! that drop early are resumed by GET with `Last-Event-ID` (`exchange`).
//!
//! Files, top-down:
//! - the exchange of one request: `exchange` (its POST and answer, resumed by GET), `endpoint`
//!   (the POST and GET every exchange is made of, and what an error status says), `sse` (the
//!   event-stream parser), `body_end` (whether a response's end was read already, and what a
//!   connection holds unread);
//! - what each request carries: `headers`, and `message_info` (what the headers mirror of the
//!   body);
//! - streams that wait for the server without a thread: `parking` (a reader put aside while
//!   the reactor watches its socket), used by `quiet_reply` (a request's stream read by a
//!   worker), `listener` (the legacy era's standalone stream, outside any call) and
//!   `legacy_sse::stream`;
//!   `deadline` (ends streams left open after their answer);
//! - the older transport: `legacy_sse` (HTTP+SSE of 2024-11-05, which a server that refuses
//!   the `initialize` POST may speak: one stream carries every answer; `legacy_sse::stream` reads
//!   that stream, parked on the reactor while the server is quiet);
//! - connections: `connector` (sockets another thread can shut down), `pool_watch` (closes
//!   those idle in the pool), `buffers` (what a
//!   connection reads and writes through, given back while it is idle), `proxy` (proxies and
//!   their CONNECT tunnel), `tls`, `trust` and `client_identity` (TLS, what it trusts, the
//!   client certificate), `no_tls` (https in a build without TLS);
//! - credentials: `auth` (the OAuth and header-provider hooks), `redact` (no secret in a
//!   message).
//!
//! The threads that run exchanges are `super::workers`.

mod auth;
mod body_end;
mod buffers;
#[cfg(feature = "tls")]
mod client_identity;
mod connector;
mod deadline;
mod endpoint;
mod exchange;
mod headers;
mod legacy_sse;
mod listener;
mod message_info;
mod parking;
mod pool_watch;
mod proxy;
mod quiet_reply;
pub(crate) mod redact;
pub mod sse;
#[cfg(feature = "tls")]
mod tls;
#[cfg(feature = "tls")]
mod trust;
// A build without TLS: https fails with NOT_SUPPORTED (`no_tls` has the same functions).
#[cfg(not(feature = "tls"))]
mod no_tls;
#[cfg(not(feature = "tls"))]
use no_tls as tls;
#[cfg(not(feature = "tls"))]
use no_tls as trust;

use super::workers::Workers;
use super::{Inbound, OutgoingRequest, Transport, Waker, WireCancel};
use crate::auth::flow::Authorizer;
use crate::auth::AuthHooks;
use crate::cancellation::CancellationToken;
use crate::error::{Error, Result, Status};
use crate::sync::lock;
use connector::{Exchange, TrackingConnector};
use deadline::Watchdog;
use headers::{Headers, MessageInfo, ToolHeaders};
pub use legacy_sse::HttpTransportKind;
pub(crate) use legacy_sse::Memory as TransportMemory;
use proxy::{ProxyResolver, Routes};
use redact::{display_url, Scrubbing, Secrets};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::ThreadId;
use std::time::{Duration, Instant};
pub use trust::require_tls;
use trust::ClientIdentity;
use ureq::http::Uri;

/// The default limit for one JSON body or one SSE event from the server: the same as stdio's
/// line ([`crate::transport::stdio::DEFAULT_MAX_LINE_BYTES`], where the choice is explained).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 100 * 1024 * 1024;

/// How to reach the server.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// The MCP endpoint, e.g. `https://example.com/mcp`. https is verified against the bundled
    /// web roots (and what the trust fields below add); plain http is for loopback and tests.
    pub url: String,
    /// Sent with every request, e.g. `("Authorization", "Bearer ...")`. Names must be HTTP
    /// tokens and values free of control characters; the transport's own headers and those
    /// that shape the exchange (Expect, Connection, Host...) are refused, as are more than
    /// `MAX_HEADER_BYTES` (64 KiB) in all. Values never appear in messages.
    pub headers: Vec<(String, String)>,
    /// How long opening a connection (TCP, then TLS) may take; also how long the HTTP+SSE
    /// transport's stream may take to name its endpoint.
    pub connect_timeout: Duration,
    /// The longest silence while reading a response; `None` (the default) waits as long as the
    /// call does, since a slow tool may say nothing for a long time. Not for the streams that
    /// last as long as the session (the standalone stream, the HTTP+SSE transport's stream,
    /// whose calls request timeouts bound).
    pub idle_timeout: Option<Duration>,
    /// The largest JSON body or single SSE event accepted (default
    /// [`DEFAULT_MAX_MESSAGE_BYTES`]); a larger one fails the call with PROTOCOL_ERROR.
    pub max_message_bytes: usize,
    /// How long a dropped SSE stream may take to resume (SEP-1699), delays included.
    pub resume_budget: Duration,
    /// How long close waits for the session DELETE and for the exchanges to end.
    pub close_timeout: Duration,
    /// Legacy era: open the standalone GET stream once the session is initialized, for what
    /// the server sends outside any call (its requests, list changes...). On by default, as
    /// in the other SDKs; a server without one answers 405 and it is not tried again.
    pub listen: bool,
    /// A proxy for every request: `http://[user:password@]host[:port]` or `https://...`
    /// (credentials percent-encoded). Requests go through a CONNECT tunnel, http ones too.
    pub proxy: Option<String>,
    /// Hosts reached without the proxy, curl's NO_PROXY syntax: comma-separated names, domain
    /// suffixes (`.corp.example`), IP addresses, or `*` for all. Replaces NO_PROXY.
    pub no_proxy: Option<String>,
    /// Also take the proxy from HTTPS_PROXY (https URLs), HTTP_PROXY (http URLs), ALL_PROXY,
    /// and NO_PROXY (lower-case names first). Off by default; `proxy` wins over these.
    pub proxy_from_env: bool,
    /// CA certificates (PEM texts) trusted besides the bundled roots; see [`Self::add_ca_pem`].
    pub ca_pem: Vec<String>,
    /// Trust only `ca_pem` (and the system store if `system_roots`), not the bundled roots.
    pub replace_roots: bool,
    /// Also trust the operating system's certificate store (on Linux the distribution's CA
    /// bundle, or SSL_CERT_FILE / SSL_CERT_DIR).
    pub system_roots: bool,
    /// A client certificate for servers that ask for one (mutual TLS).
    client_identity: Option<ClientIdentity>,
    /// OAuth 2.1 run by the library, or the host's own header provider (see [`crate::auth`]).
    /// Without either, a 401 or 403 ends the call with UNAUTHORIZED.
    pub auth: AuthHooks,
    /// Streamable HTTP, the 2024-11-05 HTTP+SSE transport, or (the default) whichever the
    /// server speaks; see [`HttpTransportKind`].
    pub transport: HttpTransportKind,
}

impl HttpConfig {
    /// The longest value, as sent, of a header mirrored from a request (`Mcp-Name`,
    /// `Mcp-Param-*`); a longer one fails the call with INVALID_ARGUMENT before anything is sent.
    pub const MAX_MIRRORED_VALUE_BYTES: usize = headers::MAX_MIRRORED_VALUE_BYTES;
    /// The most bytes all the headers of one request may take, the host's and the library's.
    pub const MAX_HEADER_BYTES: usize = headers::MAX_HEADER_BYTES;
    /// The longest session id a server may hand out; a longer one fails connect with
    /// PROTOCOL_ERROR.
    pub const MAX_SESSION_ID_BYTES: usize = headers::MAX_SESSION_ID_BYTES;

    pub fn new(url: impl Into<String>) -> Self {
        HttpConfig {
            url: url.into(),
            headers: Vec::new(),
            connect_timeout: Duration::from_secs(10),
            idle_timeout: None,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            resume_budget: Duration::from_secs(60),
            close_timeout: Duration::from_secs(2),
            listen: true,
            proxy: None,
            no_proxy: None,
            proxy_from_env: false,
            ca_pem: Vec::new(),
            replace_roots: false,
            system_roots: false,
            client_identity: None,
            auth: AuthHooks::default(),
            transport: HttpTransportKind::Auto,
        }
    }

    /// Sets the proxy for every request (see [`Self::proxy`]), checked now; `None` or an empty
    /// string: no explicit proxy.
    pub fn set_proxy(&mut self, url: Option<&str>) -> Result<()> {
        let url = url.filter(|url| !url.trim().is_empty());
        if let Some(url) = url {
            proxy::Proxy::parse(url, "proxy")?;
        }
        self.proxy = url.map(str::to_owned);
        Ok(())
    }

    /// Trusts the CA certificates of a PEM text (one or more "BEGIN CERTIFICATE" blocks).
    pub fn add_ca_pem(&mut self, pem: &str) -> Result<()> {
        trust::certificates(pem, "CA PEM")?;
        self.ca_pem.push(pem.to_owned());
        Ok(())
    }

    /// Trusts the CA certificates of a PEM file, read now.
    pub fn add_ca_file(&mut self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let pem = trust::read_pem_file(path, "CA file")?;
        trust::certificates(&pem, &format!("CA file {}", path.display()))?;
        self.ca_pem.push(pem);
        Ok(())
    }

    /// Trusts the CA certificates of every PEM file in a directory, read now (curl's
    /// `--capath`; files without a certificate are skipped, but there must be one).
    pub fn add_ca_dir(&mut self, dir: impl AsRef<Path>) -> Result<()> {
        self.ca_pem.extend(trust::read_ca_dir(dir.as_ref())?);
        Ok(())
    }

    /// The client certificate chain and its private key (PKCS#8, PKCS#1 or SEC1), both PEM.
    /// Checked now: both must parse and the key must belong to the certificate.
    pub fn set_client_cert_pem(&mut self, cert_pem: &str, key_pem: &str) -> Result<()> {
        let identity = ClientIdentity {
            cert_pem: cert_pem.to_owned(),
            key_pem: key_pem.to_owned(),
        };
        trust::check_identity(&identity)?;
        self.client_identity = Some(identity);
        Ok(())
    }

    /// [`Self::set_client_cert_pem`] from two PEM files (they may be the same file).
    pub fn set_client_cert_files(
        &mut self,
        cert_path: impl AsRef<Path>,
        key_path: impl AsRef<Path>,
    ) -> Result<()> {
        let cert = trust::read_pem_file(cert_path.as_ref(), "client certificate file")?;
        let key = trust::read_pem_file(key_path.as_ref(), "client key file")?;
        self.set_client_cert_pem(&cert, &key)
    }

    /// Presents no client certificate.
    pub fn clear_client_cert(&mut self) {
        self.client_identity = None;
    }

    /// Adds a header sent with every request, after checking it: an HTTP token for a name, no
    /// control characters (CR, LF, NUL...) in the value, not one the transport sets itself nor
    /// one that shapes the HTTP exchange (Connection, Content-Length, Expect, Host, Keep-Alive,
    /// Proxy-Connection, TE, Trailer, Transfer-Encoding, Upgrade; any case), and all of them
    /// within 64 KiB.
    pub fn add_header(&mut self, name: &str, value: &str) -> Result<()> {
        let mut all = self.headers.clone();
        all.push((name.to_owned(), value.to_owned()));
        headers::check_extra(&all)?;
        self.headers = all;
        Ok(())
    }
}

/// A configured duration past this is no limit at all: Instant arithmetic (ours and ureq's)
/// would overflow on it (`Duration::MAX`).
const NO_LIMIT_PAST: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// A configured duration as a limit: `None` when it is too long to be one.
fn limit(duration: Duration) -> Option<Duration> {
    (duration < NO_LIMIT_PAST).then_some(duration)
}

/// How long a notification POST (a cancel notice, an answer) may take.
const NOTIFY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a stream may stay open after its response has arrived.
const DRAIN_AFTER_RESPONSE: Duration = Duration::from_secs(2);

pub struct HttpTransport {
    shared: Arc<Shared>,
}

/// What the transport and its workers share.
struct Shared {
    config: HttpConfig,
    agent: ureq::Agent,
    /// The engine, reached through `Scrubbing`: no error carries a credential.
    inbound: Arc<dyn Inbound>,
    secrets: Arc<Secrets>,
    /// The auth hooks, when the host set any.
    auth: Option<Authorizer>,
    session: Mutex<Session>,
    tools: Mutex<ToolHeaders>,
    exchanges: Mutex<Exchanges>,
    /// Signalled when the rest of a caller's stream has been read (`Exchanges::draining`).
    drained: Condvar,
    /// The standalone stream, once started.
    listener: Mutex<Option<Arc<listener::Standalone>>>,
    /// The HTTP+SSE transport's stream and endpoint, when the server speaks that.
    legacy_sse: legacy_sse::LegacySse,
    workers: Arc<Workers>,
    watchdog: Watchdog,
    closed: AtomicBool,
    /// Cancelled by close: ends what no exchange's abort reaches (the auth flow of a
    /// notification, the person's step included).
    closing: CancellationToken,
}

/// What the connection learned: the legacy session, the version, the era.
#[derive(Debug, Default, Clone)]
struct Session {
    id: Option<String>,
    protocol_version: Option<String>,
    modern: bool,
}

#[derive(Default)]
struct Exchanges {
    running: HashMap<i64, Arc<Exchange>>,
    /// Exchanges left for their caller to run in `read_here`, by the caller's thread (see
    /// `send_request_unscrubbed`).
    parked: HashMap<ThreadId, Parked>,
    /// Exchanges whose stream is still read to its end after their caller left (by a worker,
    /// or parked between reads): the next request waits a moment for them, so that it reuses their connection instead of
    /// opening another (`DRAIN_WAIT`).
    draining: usize,
}

/// How long a request waits for the workers reading the rest of earlier streams: usually the
/// stream's end is already buffered and this takes microseconds; a server that keeps streams
/// open after their answers costs a request at most this.
const DRAIN_WAIT: Duration = Duration::from_millis(20);

/// A request's exchange, ready to run on whichever thread takes it.
struct Parked {
    id: i64,
    job: Box<dyn FnOnce() + Send>,
}

impl HttpTransport {
    /// Checks the configuration and builds the connection pool. Nothing is sent yet. `memory`
    /// keeps what an earlier connection of the client found out about the server (that it
    /// speaks HTTP+SSE) for the next.
    pub(crate) fn open(
        config: HttpConfig,
        inbound: Arc<dyn Inbound>,
        memory: TransportMemory,
    ) -> Result<HttpTransport> {
        let secrets = Arc::new(Secrets::new(&config.url, &config.headers));
        if let Some(proxy) = &config.proxy {
            secrets.add_url(proxy);
        }
        let (tls, routes) = open_checks(&config).map_err(|e| secrets.scrub(e))?;
        let agent_config = ureq::Agent::config_builder()
            // Error statuses carry JSON-RPC errors we want to read.
            .http_status_as_error(false)
            // Never follow a redirect: it could carry the Authorization header elsewhere.
            .max_redirects(0)
            // Proxies are our connector's (see `proxy`), so a cancel reaches their sockets too;
            // ureq must not read HTTP_PROXY itself.
            .proxy(None)
            .timeout_connect(limit(config.connect_timeout))
            .timeout_per_read(config.idle_timeout.and_then(limit))
            .input_buffer_size(buffers::INPUT_BYTES)
            .output_buffer_size(buffers::OUTPUT_BYTES)
            .max_idle_connections(32)
            .max_idle_connections_per_host(16)
            // The age after which our pool watch closes an idle connection, for the rare
            // one it cannot watch.
            .max_idle_age(pool_watch::IDLE_AGE)
            .user_agent(format!("mcpc/{}", crate::VERSION))
            .build();
        let agent = ureq::Agent::with_parts(
            agent_config,
            TrackingConnector::new(tls, routes.clone()),
            ProxyResolver {
                routes,
                inner: Default::default(),
            },
        );
        let learn = {
            let secrets = secrets.clone();
            Arc::new(move |secret: &str| secrets.add(secret))
        };
        let auth = Authorizer::new(&config.auth, &config.url, learn);
        let legacy_sse = legacy_sse::LegacySse::new(config.transport, memory);
        Ok(HttpTransport {
            shared: Arc::new(Shared {
                config,
                agent,
                inbound: Arc::new(Scrubbing {
                    inner: inbound,
                    secrets: secrets.clone(),
                }),
                secrets,
                auth,
                session: Mutex::default(),
                tools: Mutex::default(),
                exchanges: Mutex::default(),
                drained: Condvar::new(),
                listener: Mutex::default(),
                legacy_sse,
                workers: Arc::new(Workers::new("mcpc-http")),
                watchdog: Watchdog::default(),
                closed: AtomicBool::new(false),
                closing: CancellationToken::new(),
            }),
        })
    }
}

impl HttpTransport {
    fn send_request_unscrubbed(&self, request: OutgoingRequest) -> Result<()> {
        let shared = &self.shared;
        if shared.closed.load(Ordering::Acquire) {
            return Err(Error::new(Status::Closed, "the transport is closed"));
        }
        let OutgoingRequest {
            id,
            frame,
            sent,
            caller_reads,
        } = request;
        let info = MessageInfo::parse(&frame)?;
        // The mirrored headers are made (and their size checked) here, so a request that
        // cannot be sent fails now, before anything reaches the server.
        let routing = shared.routing(&info)?;
        // A worker's stream may wait parked between reads (`quiet_reply`).
        let exchange = Exchange::with(Some(sent), !caller_reads);
        let job = {
            let shared = shared.clone();
            let exchange = exchange.clone();
            let on_caller = caller_reads;
            move || {
                // A call that ended while this waited for its thread sends nothing.
                let handed_off = exchange.start_sending()
                    && exchange::run(
                        &shared,
                        &exchange,
                        id,
                        &frame,
                        info,
                        routing,
                        on_caller,
                        quiet_reply::park,
                    );
                // Else the worker draining the rest of the stream removes it when done.
                if !handed_off {
                    shared.lock_exchanges().running.remove(&id);
                }
            }
        };
        let job = Parked {
            id,
            job: Box::new(job),
        };
        let stale = {
            let mut exchanges = shared.lock_exchanges();
            let give_up = Instant::now() + DRAIN_WAIT;
            while caller_reads && exchanges.draining > 0 {
                exchanges = match crate::sync::wait_until(&shared.drained, exchanges, Some(give_up))
                {
                    Some(exchanges) => exchanges,
                    None => shared.lock_exchanges(),
                };
                if Instant::now() >= give_up {
                    break;
                }
            }
            exchanges.running.insert(id, exchange);
            // The caller runs its exchange itself in `read_here`, right after this returns: no
            // hand-off to a worker thread and back (see docs/benchmarks.md). A job parked
            // earlier by this thread was not taken (its call ended before the caller read):
            // it goes to a worker, which drops it unsent.
            match caller_reads {
                true => exchanges.parked.insert(std::thread::current().id(), job),
                false => Some(job),
            }
        };
        match stale {
            Some(job) => run_on_worker(shared, job),
            None => Ok(()),
        }
    }

    /// Runs the exchange this thread parked in `send_request`, if any; see
    /// [`Transport::read_here`]. At `deadline` the exchange is aborted, so the caller returns
    /// then; a cancel or close aborts it through `reader_waker`.
    fn run_parked(&self, deadline: Option<Instant>) -> bool {
        let shared = &self.shared;
        let parked = {
            let mut exchanges = shared.lock_exchanges();
            let parked = exchanges.parked.remove(&std::thread::current().id());
            parked.map(|parked| (exchanges.running.get(&parked.id).cloned(), parked))
        };
        let Some((exchange, Parked { id, job })) = parked else {
            return false;
        };
        if let (Some(deadline), Some(exchange)) = (deadline, &exchange) {
            shared.watchdog.abort_at(deadline, exchange);
        }
        if let Err(error) = crate::panic_guard::catch(job) {
            // A bug must not leave the call waiting forever.
            shared.lock_exchanges().running.remove(&id);
            shared.inbound.request_failed(id, error);
        }
        true
    }

    fn send_notification_unscrubbed(&self, frame: &str) -> Result<()> {
        let shared = &self.shared;
        if shared.closed.load(Ordering::Acquire) {
            return Err(Error::new(Status::Closed, "the transport is closed"));
        }
        let info = MessageInfo::parse(frame)?;
        exchange::notify(shared, frame, &info)?;
        // The HTTP+SSE transport's one stream already carries everything.
        if info.is(crate::protocol::methods::INITIALIZED)
            && shared.config.listen
            && !shared.session().modern
            && !shared.legacy_sse.in_use()
        {
            listener::start(shared);
        }
        Ok(())
    }
}

/// Runs a request's exchange on a worker thread.
fn run_on_worker(shared: &Arc<Shared>, Parked { id, job }: Parked) -> Result<()> {
    // A bug must not leave the call waiting forever.
    let on_panic = {
        let shared = shared.clone();
        move |error| {
            shared.lock_exchanges().running.remove(&id);
            shared.inbound.request_failed(id, error);
        }
    };
    shared.workers.run(job, on_panic).inspect_err(|_| {
        shared.lock_exchanges().running.remove(&id);
    })
}

fn check_config(config: &HttpConfig) -> Result<()> {
    check_url(&config.url)?;
    headers::check_extra(&config.headers)?;
    if config.max_message_bytes == 0 {
        return Err(Error::invalid("max_message_bytes must be positive"));
    }
    Ok(())
}

/// Messages name the URL without its credentials (see `redact`).
fn check_url(url: &str) -> Result<()> {
    let shown = display_url(url);
    let uri: Uri = url
        .parse()
        .map_err(|e| Error::invalid(format!("invalid URL {shown}: {e}")))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        _ => {
            return Err(Error::invalid(format!(
                "invalid URL {shown}: the scheme must be http or https"
            )))
        }
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(Error::invalid(format!("invalid URL {shown}: no host")));
    }
    Ok(())
}

/// Everything `open` checks in the configuration, and the TLS setup and proxy routes it makes.
fn open_checks(config: &HttpConfig) -> Result<(trust::TlsSetup, Arc<Routes>)> {
    check_url(&config.url)?;
    headers::check_extra(&config.headers)?;
    if config.max_message_bytes == 0 {
        return Err(Error::invalid("max_message_bytes must be positive"));
    }
    let tls = trust::client_config(config)?;
    let routes = Arc::new(Routes::new(
        config.proxy.as_deref(),
        config.no_proxy.as_deref(),
        config.proxy_from_env,
    )?);
    check_config(config)?;
    Ok((tls, routes))
}

impl Transport for HttpTransport {
    fn send_request(&self, request: OutgoingRequest) -> Result<()> {
        self.send_request_unscrubbed(request)
            .map_err(|e| self.shared.secrets.scrub(e))
    }

    fn send_notification(&self, frame: &str) -> Result<()> {
        self.send_notification_unscrubbed(frame)
            .map_err(|e| self.shared.secrets.scrub(e))
    }

    fn wire_cancel(&self) -> WireCancel {
        match self.shared.session().modern {
            true => WireCancel::Abort,
            false => WireCancel::Notify,
        }
    }

    fn read_here(&self, _done: &dyn Fn() -> bool, deadline: Option<Instant>, _alone: bool) -> bool {
        self.run_parked(deadline)
    }

    fn reader_waker(&self, id: i64) -> Option<Waker> {
        // Called while the caller runs its exchange in `read_here` (the engine wakes a reader
        // only then): aborting the exchange is what returns it, as a cancel does elsewhere.
        let shared = Arc::downgrade(&self.shared);
        Some(Arc::new(move || {
            if let Some(shared) = shared.upgrade() {
                shared.abort_running(id);
            }
        }))
    }

    fn abandon(&self, id: i64) {
        self.shared.abort_running(id);
    }

    fn handshake_only(&self) -> bool {
        self.shared.legacy_sse.in_use()
    }

    fn negotiated(&self, protocol_version: &str, modern: bool) {
        let mut session = self.shared.lock_session();
        session.protocol_version = Some(protocol_version.to_owned());
        session.modern = modern;
        if modern {
            session.id = None;
        }
    }

    fn close(&self) {
        let shared = &self.shared;
        if shared.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        shared.closing.cancel(Some("the client closed"));
        // Every exchange still running ends now; its worker sees the abort and ends quietly.
        let running: Vec<Arc<Exchange>> = shared
            .lock_exchanges()
            .running
            .drain()
            .map(|(_, exchange)| exchange)
            .collect();
        running.iter().for_each(|exchange| exchange.abort());
        // Exchanges parked for callers that never came for them: never sent.
        let parked: Vec<Parked> = shared
            .lock_exchanges()
            .parked
            .drain()
            .map(|(_, parked)| parked)
            .collect();
        drop(parked);
        let listener = lock(&shared.listener).clone();
        if let Some(listener) = listener {
            listener.stop();
        }
        shared.legacy_sse.close();
        shared.watchdog.stop();
        let session = shared.session();
        if let (Some(_), false) = (&session.id, session.modern) {
            // 404 and 405 (no session, or no DELETE) are fine, and so is any failure: the
            // session is gone from our side whatever the server says.
            let _ = exchange::delete_session(shared, &session);
        }
        // Connections still opening or idle in the pool.
        shared.agent.clone().shutdown();
        shared.workers.wait(limit(shared.config.close_timeout));
        shared.workers.stop_idle();
    }
}

impl Drop for HttpTransport {
    fn drop(&mut self) {
        self.close();
    }
}

impl Shared {
    fn session(&self) -> Session {
        self.lock_session().clone()
    }

    /// Forgets the session the server no longer knows (unless it was replaced already).
    fn expire_session(&self, id: &str) {
        let mut session = self.lock_session();
        if session.id.as_deref() == Some(id) {
            session.id = None;
        }
    }

    /// Keeps the session id of an `initialize` response; the first one stays. One too long to
    /// send back is the server's error (never quoted: it may be a secret).
    fn capture_session(&self, id: &str) -> Result<()> {
        if id.len() > headers::MAX_SESSION_ID_BYTES {
            return Err(Error::protocol(format!(
                "the server's session id (Mcp-Session-Id) is {} bytes, over the limit of {} \
                 bytes: it could not be sent back with the other headers of a request",
                id.len(),
                headers::MAX_SESSION_ID_BYTES
            )));
        }
        let mut session = self.lock_session();
        if session.id.is_none() && !id.is_empty() {
            self.secrets.add(id);
            session.id = Some(id.to_owned());
        }
        Ok(())
    }

    /// The headers every request carries: the host's, then the session's.
    fn base_headers(&self, session: &Session) -> Headers {
        let mut headers = self.config.headers.clone();
        if let (Some(id), false) = (&session.id, session.modern) {
            headers.push((headers::SESSION_ID.into(), id.clone()));
        }
        if let Some(version) = &session.protocol_version {
            headers.push((headers::PROTOCOL_VERSION.into(), version.clone()));
        }
        headers
    }

    /// The routing headers of a message, checked against the size limits along with the
    /// headers every request carries.
    fn routing(&self, info: &MessageInfo) -> Result<Headers> {
        let session = self.session();
        let routing = {
            let tools = self.lock_tools();
            headers::routing(info, session.modern.then_some(&*tools))
        };
        headers::check_size(&self.base_headers(&session), &routing)?;
        Ok(routing)
    }

    fn lock_session(&self) -> MutexGuard<'_, Session> {
        lock(&self.session)
    }

    /// Aborts request `id`'s exchange if it is still running (none: it is over, and there is
    /// nothing to drop). Outside the exchanges' lock: `abort` takes the exchange's and the
    /// socket's locks and shuts the socket down, and every request that starts meanwhile
    /// wants the table.
    fn abort_running(&self, id: i64) {
        let exchange = self.lock_exchanges().running.get(&id).cloned();
        if let Some(exchange) = exchange {
            exchange.abort();
        }
    }

    fn lock_exchanges(&self) -> MutexGuard<'_, Exchanges> {
        lock(&self.exchanges)
    }

    fn lock_tools(&self) -> MutexGuard<'_, ToolHeaders> {
        lock(&self.tools)
    }
}
