//! Sockets that another thread can shut down, one exchange at a time.
//!
//! ureq runs each request on the calling thread, over a pooled connection it picks itself. To
//! abort one request from elsewhere (the modern era's cancel; dropping a legacy stream after its
//! cancel notice; close), we must know which socket that request is on *now*. So every
//! connection is wrapped in [`Tracked`], and a worker runs its request inside
//! [`Exchange::enter`]: when the request writes to a connection, the connection becomes owned by
//! that exchange; when ureq checks the connection before returning it to the pool (or taking it
//! out), ownership ends. Aborting an exchange shuts down its socket only while it still owns it,
//! so an abort can never reach a connection that has moved on to another request, and an aborted
//! connection reports itself closed, so it never goes back to the pool.
//!
//! The first read after a request was written is its send boundary: the bytes are on the wire.

use super::proxy::{self, Routes};
use super::tls;
use crate::sync::{lock, wait_until};
use crate::transport::SendBoundary;
use std::cell::RefCell;
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, LazyBuffers, NextTimeout, ShutdownHandle, Transport,
};

/// One request's traffic: its POST, and the GETs that resume its stream.
pub struct Exchange {
    key: u64,
    state: Mutex<ExchangeState>,
    woken: Condvar,
}

#[derive(Default)]
struct ExchangeState {
    aborted: bool,
    /// The connection the exchange last wrote to.
    socket: Option<Arc<Socket>>,
    sent: Option<SendBoundary>,
}

thread_local! {
    /// The exchange the current thread is running, if any.
    static CURRENT: RefCell<Option<Arc<Exchange>>> = const { RefCell::new(None) };
}

impl Exchange {
    /// An exchange that signals `sent` once its request is on the wire.
    pub fn new(sent: Option<SendBoundary>) -> Arc<Exchange> {
        static NEXT_KEY: AtomicU64 = AtomicU64::new(1);
        Arc::new(Exchange {
            key: NEXT_KEY.fetch_add(1, Ordering::Relaxed),
            state: Mutex::new(ExchangeState {
                sent,
                ..ExchangeState::default()
            }),
            woken: Condvar::new(),
        })
    }

    /// Makes this the current thread's exchange until the guard is dropped.
    pub fn enter(self: &Arc<Self>) -> Entered {
        CURRENT.with(|current| *current.borrow_mut() = Some(self.clone()));
        Entered(())
    }

    /// Shuts the exchange's connection down, now and for any request it starts later. Never
    /// blocks on I/O.
    pub fn abort(&self) {
        let mut state = self.lock();
        state.aborted = true;
        if let Some(socket) = state.socket.take() {
            socket.shut_down_if_owned_by(self.key);
        }
        self.woken.notify_all();
    }

    pub fn is_aborted(&self) -> bool {
        self.lock().aborted
    }

    /// Sleeps for `delay` unless the exchange is aborted first. Returns false if it was.
    pub fn sleep(&self, delay: Duration) -> bool {
        // A delay too long to represent (a server's huge `retry`) lasts until the abort.
        let deadline = Instant::now().checked_add(delay);
        let mut state = self.lock();
        while !state.aborted {
            state = match wait_until(&self.woken, state, deadline) {
                Some(state) => state,
                None => return true,
            };
        }
        false
    }

    /// Claims the request for the wire before anything is written (see `SendBoundary::start`).
    /// False when its call has ended already: then nothing is sent.
    pub fn start_sending(&self) -> bool {
        let mut state = self.lock();
        match state.sent.take() {
            Some(sent) if !sent.start() => {
                sent.never_sent();
                false
            }
            other => {
                state.sent = other;
                true
            }
        }
    }

    /// Signals the send boundary, if it was not yet.
    fn request_written(&self) {
        let sent = self.lock().sent.take();
        if let Some(sent) = sent {
            sent.signal();
        }
    }

    /// The exchange starts writing to `socket`, unless it was aborted.
    fn claim(&self, socket: &Arc<Socket>) -> Result<(), ureq::Error> {
        let mut state = self.lock();
        if state.aborted {
            socket.kill();
            return Err(aborted());
        }
        socket.set_owner(Some(self.key));
        state.socket = Some(socket.clone());
        Ok(())
    }

    fn lock(&self) -> MutexGuard<'_, ExchangeState> {
        lock(&self.state)
    }
}

/// Ends the thread's current exchange when dropped.
pub struct Entered(());

impl Drop for Entered {
    fn drop(&mut self) {
        let exchange = CURRENT.with(|current| current.borrow_mut().take());
        // A boundary never signalled is signalled now (dropping it does): the send is over.
        if let Some(exchange) = exchange {
            exchange.lock().sent.take();
        }
    }
}

fn current() -> Option<Arc<Exchange>> {
    CURRENT.with(|current| current.borrow().clone())
}

fn aborted() -> ureq::Error {
    ureq::Error::Io(io::Error::new(
        io::ErrorKind::ConnectionAborted,
        "the exchange was aborted",
    ))
}

/// One TCP connection, as seen from the threads that may shut it down.
struct Socket {
    stream: TcpStream,
    owner: Mutex<Owner>,
}

#[derive(Default)]
struct Owner {
    exchange: Option<u64>,
    /// Shut down: it must never be used again.
    dead: bool,
}

impl Socket {
    fn set_owner(&self, exchange: Option<u64>) {
        self.lock().exchange = exchange;
    }

    fn shut_down_if_owned_by(&self, exchange: u64) {
        let mut owner = self.lock();
        if owner.exchange == Some(exchange) {
            owner.dead = true;
            self.shut();
        }
    }

    fn kill(&self) {
        self.lock().dead = true;
        self.shut();
    }

    /// Shuts the socket down, which the server sees, and wakes a thread blocked on it.
    fn shut(&self) {
        let _ = self.stream.shutdown(Shutdown::Both);
        // Windows: shutdown alone does not end a recv blocked in another thread while the peer
        // stays silent; cancelling the socket's pending I/O does.
        #[cfg(windows)]
        {
            use std::os::windows::io::AsRawSocket;
            let socket = self.stream.as_raw_socket() as windows_sys::Win32::Foundation::HANDLE;
            // SAFETY: cancels I/O on a socket we own; no memory is passed.
            unsafe { windows_sys::Win32::System::IO::CancelIoEx(socket, std::ptr::null()) };
        }
    }

    /// The connection is between requests: nobody owns it. False if it is dead.
    fn release(&self) -> bool {
        let mut owner = self.lock();
        owner.exchange = None;
        !owner.dead
    }

    fn lock(&self) -> MutexGuard<'_, Owner> {
        lock(&self.owner)
    }
}

impl ShutdownHandle for Socket {
    fn shutdown(&self) {
        self.kill();
    }
}

/// A connection whose requests can be aborted from another thread.
struct Tracked {
    inner: Box<dyn Transport>,
    socket: Arc<Socket>,
}

impl Transport for Tracked {
    fn buffers(&mut self) -> &mut dyn Buffers {
        self.inner.buffers()
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        if let Some(exchange) = current() {
            exchange.claim(&self.socket)?;
        }
        self.inner.transmit_output(amount, timeout)
    }

    fn maybe_await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        if let Some(exchange) = current() {
            exchange.request_written();
        }
        self.inner.maybe_await_input(timeout)
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        if let Some(exchange) = current() {
            exchange.request_written();
        }
        self.inner.await_input(timeout)
    }

    /// ureq asks this before pooling a connection and before reusing one: either way, the
    /// request that owned it is over.
    fn is_open(&mut self) -> bool {
        self.socket.release() && self.inner.is_open()
    }

    fn is_tls(&self) -> bool {
        self.inner.is_tls()
    }
}

impl fmt::Debug for Tracked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tracked")
            .field("peer", &self.socket.stream.peer_addr().ok())
            .finish()
    }
}

/// Opens TCP connections, through a proxy's tunnel if the request takes one, TLS on top for
/// https, and wraps them in [`Tracked`].
pub struct TrackingConnector {
    tls: super::trust::TlsSetup,
    routes: Arc<Routes>,
}

impl TrackingConnector {
    pub fn new(tls: super::trust::TlsSetup, routes: Arc<Routes>) -> Self {
        TrackingConnector { tls, routes }
    }
}

impl fmt::Debug for TrackingConnector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TrackingConnector")
    }
}

impl Connector<()> for TrackingConnector {
    type Out = Box<dyn Transport>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        _chained: Option<()>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        // The addresses are the proxy's when the request takes one (see ProxyResolver).
        let proxy = self.routes.for_uri(details.uri);
        let stream = connect_tcp(details).map_err(|e| match (proxy, e) {
            (Some(proxy), ureq::Error::Io(e)) => {
                ureq::Error::ConnectProxyFailed(format!("cannot connect to the proxy {proxy}: {e}"))
            }
            (_, e) => e,
        })?;
        stream.set_nodelay(true)?;
        let socket = Arc::new(Socket {
            stream,
            owner: Mutex::default(),
        });
        // The agent shuts every registered socket down when the transport closes.
        (details.register_shutdown)(Arc::downgrade(&socket) as Weak<dyn ShutdownHandle>)?;
        // An abort while the tunnel or the handshake is under way shuts the socket too.
        if let Some(exchange) = current() {
            exchange.claim(&socket)?;
        }
        let config = details.config;
        let mut transport: Box<dyn Transport> = Box::new(Tcp {
            socket: socket.clone(),
            buffers: LazyBuffers::new(config.input_buffer_size(), config.output_buffer_size()),
            read_timeout: None,
            write_timeout: None,
        });
        if let Some(proxy) = proxy {
            if let Some(host) = proxy.tls_host() {
                transport = Box::new(tls::connect(&self.tls, details, host, transport)?);
            }
            transport = proxy::tunnel(proxy, details, transport)?;
        }
        if details.needs_tls() {
            let host = details.uri.host().unwrap_or_default();
            transport = Box::new(tls::connect(&self.tls, details, host, transport)?);
        }
        Ok(Some(Box::new(Tracked {
            inner: transport,
            socket,
        })))
    }
}

/// Tries each resolved address in turn within the connect timeout.
fn connect_tcp(details: &ConnectionDetails) -> Result<TcpStream, ureq::Error> {
    let budget = details.timeout.not_zero().map(|t| *t);
    let deadline = budget.map(|b| Instant::now() + b);
    let mut last_error = None;
    for addr in &details.addrs {
        let attempt = match deadline {
            Some(deadline) => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(ureq::Error::Timeout(details.timeout.reason));
                }
                TcpStream::connect_timeout(addr, left)
            }
            None => TcpStream::connect(addr),
        };
        match attempt {
            Ok(stream) => return Ok(stream),
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                return Err(ureq::Error::Timeout(details.timeout.reason))
            }
            Err(e) => last_error = Some(e),
        }
    }
    Err(ureq::Error::Io(last_error.unwrap_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            "the host name resolved to no address",
        )
    })))
}

/// Plain TCP I/O on a [`Socket`], with ureq's timeouts applied as socket timeouts.
struct Tcp {
    socket: Arc<Socket>,
    buffers: LazyBuffers,
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
}

impl Tcp {
    fn stream(&self) -> &TcpStream {
        &self.socket.stream
    }
}

impl Transport for Tcp {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        let timeout = timeout.for_write();
        let wanted = timeout.not_zero().map(|t| *t);
        if wanted != self.write_timeout {
            self.stream().set_write_timeout(wanted)?;
            self.write_timeout = wanted;
        }
        let output = &self.buffers.output()[..amount];
        (&self.socket.stream)
            .write_all(output)
            .map_err(|e| io_error(e, timeout))
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        let timeout = timeout.for_read();
        let wanted = timeout.not_zero().map(|t| *t);
        if wanted != self.read_timeout {
            self.stream().set_read_timeout(wanted)?;
            self.read_timeout = wanted;
        }
        let mut stream = &self.socket.stream;
        let input = self.buffers.input_append_buf();
        let read = loop {
            match stream.read(input) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other,
            }
        };
        let amount = read.map_err(|e| io_error(e, timeout))?;
        self.buffers.input_appended(amount);
        Ok(amount > 0)
    }

    /// Open means: nothing to read now, and no end of stream (checked without blocking).
    fn is_open(&mut self) -> bool {
        let stream = self.stream();
        if stream.set_nonblocking(true).is_err() {
            return false;
        }
        let idle = matches!(stream.peek(&mut [0]), Err(e) if e.kind() == io::ErrorKind::WouldBlock);
        stream.set_nonblocking(false).is_ok() && idle
    }
}

impl fmt::Debug for Tcp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tcp")
            .field("peer", &self.stream().peer_addr().ok())
            .finish()
    }
}

fn io_error(error: io::Error, timeout: NextTimeout) -> ureq::Error {
    match error.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => ureq::Error::Timeout(timeout.reason),
        _ => ureq::Error::Io(error),
    }
}
