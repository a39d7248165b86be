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
//!
//! While a connection sits in ureq's pool, `pool_watch` may close it; its socket then has no
//! stream any more, and every use of it fails as on a closed connection.

use super::body_end::{BodyEnd, Layer, Unread, WatchedBuffers};
use super::buffers::ConnectionBuffers;
use super::pool_watch::{PoolWatch, Pooled};
use super::proxy::{self, Routes};
use super::tls;
use crate::cancellation::CancellationToken;
use crate::sync::{lock, wait_until};
use crate::transport::SendBoundary;
use std::cell::RefCell;
use std::fmt;
use std::io::{self, IoSlice, Read};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock, TryLockError, Weak};
use std::time::{Duration, Instant};
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, NextTimeout, ShutdownHandle, Transport,
};

/// One request's traffic: its POST, and the GETs that resume its stream.
pub struct Exchange {
    key: u64,
    /// Its stream waits parked between reads (see `body_end::Unread::parked`).
    parks: bool,
    state: Mutex<ExchangeState>,
    woken: Condvar,
}

#[derive(Default)]
struct ExchangeState {
    aborted: bool,
    /// An abort has begun: set before the `on_abort` tokens are cancelled, so a failure
    /// those cancels cause is known to be the abort's, not taken for the call's outcome.
    aborting: bool,
    /// The connection the exchange last wrote to.
    socket: Option<Arc<Socket>>,
    sent: Option<SendBoundary>,
    /// Tokens cancelled by `abort` (the host's authorization step waits on one).
    on_abort: Vec<(u64, CancellationToken)>,
    next_hook: u64,
    /// Aborts cancelling `on_abort` tokens right now (outside the lock).
    cancelling: usize,
    /// Threads in `sleep`: only they need `woken` (a notify costs a system call even when
    /// nobody waits, and an abort is on a cancel's path).
    sleepers: usize,
}

thread_local! {
    /// The exchange the current thread is running, if any.
    static CURRENT: RefCell<Option<Arc<Exchange>>> = const { RefCell::new(None) };
}

impl Exchange {
    /// The exchange of a stream that waits parked between reads (the standalone stream, the
    /// HTTP+SSE stream): its connection holds no input buffer while nothing is unread.
    pub fn parking() -> Arc<Exchange> {
        Exchange::with(None, true)
    }

    /// An exchange that signals `sent` once its request is on the wire; with `parks`, its
    /// stream may wait parked between reads (read by a worker: see `quiet_reply`), and its
    /// connection then holds no input buffer while nothing is unread.
    pub fn with(sent: Option<SendBoundary>, parks: bool) -> Arc<Exchange> {
        static NEXT_KEY: AtomicU64 = AtomicU64::new(1);
        Arc::new(Exchange {
            key: NEXT_KEY.fetch_add(1, Ordering::Relaxed),
            parks,
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
    ///
    /// The tokens of `cancel_on_abort` are cancelled first: a flow on this exchange must find
    /// its call over as soon as its request fails, or it could take the failure for the
    /// server's and go on (to ask the person) for a call that has ended.
    pub fn abort(&self) {
        let mut state = self.lock();
        state.aborting = true;
        loop {
            let tokens = std::mem::take(&mut state.on_abort);
            if tokens.is_empty() {
                break;
            }
            // Outside the lock: a token's hooks are the host's. One added meanwhile is
            // taken on the next round; once none is left, `aborted` makes later ones cancel
            // at once.
            state.cancelling += 1;
            drop(state);
            for (_, token) in tokens {
                token.cancel(Some("the call ended"));
            }
            state = self.lock();
            state.cancelling -= 1;
        }
        if state.cancelling > 0 {
            // Another abort is still cancelling tokens; it shuts the connection down after.
            return;
        }
        state.aborted = true;
        if let Some(socket) = state.socket.take() {
            socket.shut_down_if_owned_by(self.key);
        }
        if state.sleepers > 0 {
            self.woken.notify_all();
        }
    }

    /// Cancels `token` when the exchange is aborted (at once if it was already). Returns the
    /// key for `forget_on_abort`.
    pub fn cancel_on_abort(&self, token: &CancellationToken) -> u64 {
        let mut state = self.lock();
        if state.aborted {
            drop(state);
            token.cancel(Some("the call ended"));
            return 0;
        }
        state.next_hook += 1;
        let key = state.next_hook;
        state.on_abort.push((key, token.clone()));
        key
    }

    pub fn forget_on_abort(&self, key: u64) {
        self.lock().on_abort.retain(|(k, _)| *k != key);
    }

    /// Whether more of the server's bytes are on the exchange's connection, or arrive within
    /// `within`, or the end of the body is read already and waits in ureq's buffer (see
    /// `body_end`). False without a connection.
    pub fn input_within(&self, within: Duration) -> bool {
        let socket = self.lock().socket.clone();
        socket.is_some_and(|socket| socket.body_end.is_buffered() || socket.readable_within(within))
    }

    /// The connection the exchange's stream is on, for a reader that waits for it elsewhere
    /// (the standalone stream, parked on the reactor). `None` without one, after an abort,
    /// or when its input cannot be watched (behind a proxy).
    #[cfg_attr(not(unix), allow(dead_code))] // no reactor there
    pub fn watch(&self) -> Option<Watched> {
        let socket = self.lock().socket.clone()?;
        socket.unread.is_some().then_some(Watched(socket))
    }

    /// Whether an abort has begun (its tokens may still be being cancelled): the call this
    /// exchange serves has ended, whatever the exchange fails with now.
    pub fn is_aborted(&self) -> bool {
        let state = self.lock();
        state.aborted || state.aborting
    }

    /// Sleeps for `delay` unless the exchange is aborted first. Returns false if it was.
    pub fn sleep(&self, delay: Duration) -> bool {
        // A delay too long to represent (a server's huge `retry`) lasts until the abort.
        let deadline = Instant::now().checked_add(delay);
        let mut state = self.lock();
        while !state.aborted {
            state.sleepers += 1;
            let woken = wait_until(&self.woken, state, deadline);
            let slept_enough = woken.is_none();
            state = woken.unwrap_or_else(|| self.lock());
            state.sleepers -= 1;
            if slept_enough {
                return !state.aborted;
            }
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
        if let Some(unread) = socket.unread.as_ref().filter(|_| self.parks) {
            unread.parked.store(true, Ordering::Release);
        }
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

/// A stream's connection, watched from outside the thread that reads it. Holding it keeps the
/// socket open, so its descriptor cannot be reused while it is registered somewhere.
pub struct Watched(Arc<Socket>);

impl Watched {
    /// `None` if the socket is closed (a watched socket is in use: never closed while pooled).
    #[cfg(unix)]
    pub fn fd(&self) -> Option<std::os::fd::RawFd> {
        self.0.fd()
    }

    /// Whether a read would find something without waiting for the server: bytes ureq or the
    /// TLS layer took from the socket and nobody read yet, or bytes (or the end) on the socket.
    pub fn has_input(&self) -> bool {
        self.input_within(Duration::ZERO)
    }

    /// As `has_input`, also waiting at most `within` for the server's bytes (Linux; elsewhere
    /// only what has arrived already counts).
    pub fn input_within(&self, within: Duration) -> bool {
        let unread = self.0.unread.as_ref().is_some_and(|unread| unread.any());
        unread || self.0.readable_within(within)
    }
}

fn current() -> Option<Arc<Exchange>> {
    CURRENT.with(|current| current.borrow().clone())
}

/// Waits at most `within` for `stream` to have bytes to read (or its end, or an error).
#[cfg(any(target_os = "linux", target_os = "android"))]
fn readable_within(stream: &TcpStream, within: Duration) -> bool {
    use std::os::fd::AsRawFd;
    let mut pollfd = libc::pollfd {
        fd: stream.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let timeout = libc::timespec {
        tv_sec: within.as_secs() as libc::time_t,
        tv_nsec: within.subsec_nanos() as libc::c_long,
    };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask.
    let ready = unsafe { libc::ppoll(&mut pollfd, 1, &timeout, std::ptr::null()) };
    ready > 0
}

/// Elsewhere only what has arrived already counts (no sub-millisecond wait there).
#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn readable_within(stream: &TcpStream, _within: Duration) -> bool {
    let mut byte = [0u8; 1];
    stream.set_nonblocking(true).is_ok() && {
        let ready = stream.peek(&mut byte).is_ok();
        let _ = stream.set_nonblocking(false);
        ready
    }
}

fn aborted() -> ureq::Error {
    ureq::Error::Io(io::Error::new(
        io::ErrorKind::ConnectionAborted,
        "the exchange was aborted",
    ))
}

/// One TCP connection, as seen from the threads that may shut it down.
struct Socket {
    /// `None` once the pool watch closed it. Read-locked for each use, never for long but in
    /// a read; the watch only takes it when nobody holds it (the connection is pooled).
    stream: RwLock<Option<TcpStream>>,
    peer: Option<SocketAddr>,
    owner: Mutex<Owner>,
    /// Noted by the buffers of the transport ureq talks to.
    body_end: Arc<BodyEnd>,
    /// Bytes taken from the socket that ureq has not read yet, noted by each layer; `None`
    /// behind a proxy (its tunnel's buffers are not watched).
    unread: Option<Arc<Unread>>,
    /// Closes it when it sits idle in ureq's pool.
    pool_watch: PoolWatch,
}

#[derive(Default)]
struct Owner {
    exchange: Option<u64>,
    /// Shut down: it must never be used again.
    dead: bool,
    /// A thread is in (or about to enter) a read on the socket.
    reading: bool,
}

impl Socket {
    fn new(stream: TcpStream, unread: Option<Arc<Unread>>) -> Socket {
        Socket {
            peer: stream.peer_addr().ok(),
            stream: RwLock::new(Some(stream)),
            owner: Mutex::default(),
            body_end: Arc::default(),
            unread,
            pool_watch: PoolWatch::default(),
        }
    }

    /// Runs `io` on the stream; fails as a closed connection once the pool watch closed it.
    fn with_stream<T>(&self, io: impl FnOnce(&TcpStream) -> io::Result<T>) -> io::Result<T> {
        let stream = self.stream.read().unwrap_or_else(|e| e.into_inner());
        match stream.as_ref() {
            Some(stream) => io(stream),
            None => Err(io::Error::new(
                io::ErrorKind::NotConnected,
                "the idle connection was closed",
            )),
        }
    }

    fn readable_within(&self, within: Duration) -> bool {
        self.with_stream(|stream| Ok(readable_within(stream, within)))
            .unwrap_or(false)
    }

    fn set_owner(&self, exchange: Option<u64>) {
        self.lock().exchange = exchange;
    }

    fn shut_down_if_owned_by(&self, exchange: u64) {
        let mut owner = self.lock();
        if owner.exchange == Some(exchange) {
            owner.dead = true;
            self.shut(&owner);
        }
    }

    /// A read is about to start. False if the socket is dead (nothing may be read from it).
    fn begin_read(&self) -> bool {
        let mut owner = self.lock();
        owner.reading = !owner.dead;
        owner.reading
    }

    /// A read is over: if the socket died meanwhile, its shutdown is completed now (see `shut`).
    fn end_read(&self) {
        let mut owner = self.lock();
        owner.reading = false;
        if owner.dead {
            self.shut(&owner);
        }
    }

    fn kill(&self) {
        let mut owner = self.lock();
        owner.dead = true;
        self.shut(&owner);
    }

    /// Shuts the socket down, which the server sees, and wakes a thread blocked on it.
    ///
    /// A thread blocked in a read is woken by shutting down only our reading side, which is
    /// cheap: the full shutdown sends the server our FIN, and on loopback the kernel runs the
    /// server's side of that on the calling thread, in a cancel's return (docs/benchmarks.md). The
    /// reader itself then shuts the rest down (`end_read`), so the server still learns at once.
    /// Only where a woken read is certain (Linux); elsewhere, and for a thread that may be
    /// blocked writing, the full shutdown now.
    fn shut(&self, owner: &Owner) {
        let how = match owner.reading && cfg!(any(target_os = "linux", target_os = "android")) {
            true => Shutdown::Read,
            false => Shutdown::Both,
        };
        let _ = self.with_stream(|stream| {
            let _ = stream.shutdown(how);
            // Windows: shutdown alone does not end a recv blocked in another thread while the
            // peer stays silent; cancelling the socket's pending I/O does.
            #[cfg(windows)]
            {
                use std::os::windows::io::AsRawSocket;
                let socket = stream.as_raw_socket() as windows_sys::Win32::Foundation::HANDLE;
                // SAFETY: cancels I/O on a socket we own; no memory is passed.
                unsafe { windows_sys::Win32::System::IO::CancelIoEx(socket, std::ptr::null()) };
            }
            Ok(())
        });
    }

    /// The connection is between requests: nobody owns it. False if it is dead.
    fn release(&self) -> bool {
        let mut owner = self.lock();
        owner.exchange = None;
        if let Some(unread) = &self.unread {
            unread.parked.store(false, Ordering::Release);
        }
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

impl Pooled for Socket {
    fn watch(&self) -> &PoolWatch {
        &self.pool_watch
    }

    #[cfg(unix)]
    fn fd(&self) -> Option<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        self.with_stream(|stream| Ok(stream.as_raw_fd())).ok()
    }

    /// The descriptor is closed, not only shut down. Nobody uses the stream of a pooled
    /// connection; should a reader hold it all the same, it is shut down, and closed when
    /// ureq drops the connection.
    fn close(&self) {
        self.lock().dead = true;
        let closed = match self.stream.try_write() {
            Ok(mut stream) => stream.take(),
            Err(TryLockError::Poisoned(e)) => e.into_inner().take(),
            Err(TryLockError::WouldBlock) => None,
        };
        if closed.is_none() {
            let _ = self.with_stream(|stream| stream.shutdown(Shutdown::Both));
        }
    }
}

/// A connection whose requests can be aborted from another thread.
struct Tracked {
    inner: Box<dyn Transport>,
    socket: Arc<Socket>,
    /// In ureq's pool (between the `is_open` that pools it and the one that takes it out).
    pooled: bool,
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
    /// request that owned it is over. The pool watch runs from the one to the other.
    fn is_open(&mut self) -> bool {
        if std::mem::take(&mut self.pooled) {
            return self.socket.pool_watch.taken() && self.socket.release() && self.inner.is_open();
        }
        let open = self.socket.release() && self.inner.is_open();
        if open {
            self.socket.pool_watch.pooled(&self.socket);
            self.pooled = true;
        }
        open
    }

    fn is_tls(&self) -> bool {
        self.inner.is_tls()
    }
}

impl Drop for Tracked {
    /// ureq drops the connection: the reactor lets its descriptor go first.
    fn drop(&mut self) {
        self.socket.pool_watch.taken();
    }
}

impl fmt::Debug for Tracked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tracked")
            .field("peer", &self.socket.peer)
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
        let socket = Arc::new(Socket::new(stream, proxy.is_none().then(Arc::default)));
        // The agent shuts every registered socket down when the transport closes.
        (details.register_shutdown)(Arc::downgrade(&socket) as Weak<dyn ShutdownHandle>)?;
        // An abort while the tunnel or the handshake is under way shuts the socket too.
        if let Some(exchange) = current() {
            exchange.claim(&socket)?;
        }
        let config = details.config;
        // The body's end is watched in the buffers of the outermost transport: TCP's own
        // when nothing goes on top, TLS's to the server otherwise. (Behind a proxy without
        // TLS to the server, nobody watches: the rest of a stream goes to a worker.)
        let end = socket.body_end.clone();
        let tls_to_server = details.needs_tls();
        let unread = socket.unread.clone();
        let mut transport: Box<dyn Transport> = Box::new(Tcp {
            socket: socket.clone(),
            buffers: WatchedBuffers::new(
                ConnectionBuffers::new(config.input_buffer_size(), config.output_buffer_size()),
                (proxy.is_none() && !tls_to_server).then(|| end.clone()),
            )
            .noting_unread(unread.clone().map(|unread| (unread, Layer::Tcp))),
            read_timeout: None,
            write_timeout: None,
            held: Vec::new(),
        });
        if let Some(proxy) = proxy {
            if let Some(host) = proxy.tls_host() {
                let tls = tls::connect(&self.tls, details, host, transport, None, None)?;
                transport = Box::new(tls);
            }
            transport = proxy::tunnel(proxy, details, transport)?;
        }
        if tls_to_server {
            let host = details.uri.host().unwrap_or_default();
            transport = Box::new(tls::connect(
                &self.tls,
                details,
                host,
                transport,
                Some(end),
                unread,
            )?);
        }
        Ok(Some(Box::new(Tracked {
            inner: transport,
            socket,
            pooled: false,
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
    buffers: WatchedBuffers,
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
    /// A POST's head, held back to leave with its body in one send: written separately, the
    /// two go as two TCP segments (the socket has no delay), and the server may wake for each.
    /// Sent before anything is read, so nothing ever waits for it.
    held: Vec<u8>,
}

impl Transport for Tcp {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        let timeout = timeout.for_write();
        let wanted = timeout.not_zero().map(|t| *t);
        if wanted != self.write_timeout {
            self.socket
                .with_stream(|stream| stream.set_write_timeout(wanted))?;
            self.write_timeout = wanted;
        }
        let output = &self.buffers.output()[..amount];
        if self.held.is_empty() && is_head_with_body(output) {
            self.held.extend_from_slice(output);
            return Ok(());
        }
        let mut held = std::mem::take(&mut self.held);
        let sent = self
            .socket
            .with_stream(|stream| send_all(stream, &[&held, output]))
            .map_err(|e| io_error(e, timeout));
        held.clear();
        self.held = held;
        sent
    }

    fn maybe_await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.send_held(timeout)?;
        if self.buffers.can_use_input() {
            return Ok(true);
        }
        self.await_input(timeout)
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.send_held(timeout)?;
        let timeout = timeout.for_read();
        let wanted = timeout.not_zero().map(|t| *t);
        if wanted != self.read_timeout {
            self.socket
                .with_stream(|stream| stream.set_read_timeout(wanted))?;
            self.read_timeout = wanted;
        }
        let socket = &self.socket;
        if !socket.begin_read() {
            return Err(aborted());
        }
        let input = self.buffers.input_append_buf();
        let read = socket.with_stream(|mut stream| loop {
            match stream.read(input) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other,
            }
        });
        socket.end_read();
        let amount = read.map_err(|e| io_error(e, timeout))?;
        self.buffers.input_appended(amount);
        Ok(amount > 0)
    }

    /// Open means: nothing to read now, and no end of stream (checked without blocking), and
    /// no request half sent.
    fn is_open(&mut self) -> bool {
        // Asked before the connection is pooled: idle, it needs no buffers.
        self.buffers.give_back();
        self.held.is_empty() && self.socket.with_stream(|s| Ok(is_idle(s))).unwrap_or(false)
    }
}

impl Tcp {
    /// Sends a held head alone (no body came: the request is read from now).
    fn send_held(&mut self, timeout: NextTimeout) -> Result<(), ureq::Error> {
        if self.held.is_empty() {
            return Ok(());
        }
        let held = std::mem::take(&mut self.held);
        self.socket
            .with_stream(|stream| send_all(stream, &[&held]))
            .map_err(|e| io_error(e, timeout.for_write()))
    }
}

/// A POST's head announcing a body (ureq writes the head, then the body).
fn is_head_with_body(output: &[u8]) -> bool {
    output.starts_with(b"POST ")
        && output.ends_with(b"\r\n\r\n")
        && memchr::memmem::find(output, b"\r\ncontent-length: 0\r\n").is_none()
        && memchr::memmem::find(output, b"\r\ncontent-length: ").is_some()
}

/// Writes all of `parts`, in order, in as few system calls as the socket takes them.
fn send_all(stream: &TcpStream, parts: &[&[u8]]) -> io::Result<()> {
    let mut slices: Vec<IoSlice> = parts.iter().map(|part| IoSlice::new(part)).collect();
    let mut slices = &mut slices[..];
    IoSlice::advance_slices(&mut slices, 0);
    while !slices.is_empty() {
        match send_vectored(stream, slices) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(sent) => IoSlice::advance_slices(&mut slices, sent),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// `sendmsg` with MSG_NOSIGNAL: a peer that has gone must not raise SIGPIPE in the host (a
/// plain `writev` would).
#[cfg(any(target_os = "linux", target_os = "android"))]
fn send_vectored(stream: &TcpStream, slices: &[IoSlice]) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    // SAFETY: an all-zero msghdr is valid (no address, no control data).
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    // IoSlice is ABI-compatible with iovec on Unix; sendmsg only reads through the pointer.
    message.msg_iov = slices.as_ptr() as *mut libc::iovec;
    message.msg_iovlen = slices.len() as _;
    // SAFETY: the descriptor is the stream's own; `message` points at `slices`, alive here.
    let sent = unsafe { libc::sendmsg(stream.as_raw_fd(), &message, libc::MSG_NOSIGNAL) };
    match sent {
        -1 => Err(io::Error::last_os_error()),
        sent => Ok(sent as usize),
    }
}

/// Elsewhere the standard library's sockets raise no SIGPIPE (SO_NOSIGPIPE on Apple's
/// systems; Windows has no such signal).
#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn send_vectored(mut stream: &TcpStream, slices: &[IoSlice]) -> io::Result<usize> {
    std::io::Write::write_vectored(&mut stream, slices)
}

/// Nothing to read now and no end of stream: one non-blocking peek.
#[cfg(unix)]
fn is_idle(stream: &TcpStream) -> bool {
    use std::os::fd::AsRawFd;
    let mut byte = 0u8;
    // SAFETY: reads at most one byte into a local, from the stream's own descriptor.
    let peeked = unsafe {
        libc::recv(
            stream.as_raw_fd(),
            (&mut byte as *mut u8).cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    peeked == -1 && io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock
}

#[cfg(not(unix))]
fn is_idle(stream: &TcpStream) -> bool {
    if stream.set_nonblocking(true).is_err() {
        return false;
    }
    let idle = matches!(stream.peek(&mut [0]), Err(e) if e.kind() == io::ErrorKind::WouldBlock);
    stream.set_nonblocking(false).is_ok() && idle
}

impl fmt::Debug for Tcp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tcp")
            .field("peer", &self.socket.peer)
            .finish()
    }
}

fn io_error(error: io::Error, timeout: NextTimeout) -> ureq::Error {
    match error.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => ureq::Error::Timeout(timeout.reason),
        _ => ureq::Error::Io(error),
    }
}
