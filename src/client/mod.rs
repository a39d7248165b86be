//! The client: connect, one method per MCP request, close.
//!
//! Every request method blocks the calling thread until its outcome and may be called from many
//! threads at once; a [`CancellationToken`] in the [`RequestOptions`] wakes it from any other
//! thread. [`Client::start`] starts the same requests without blocking (see `operation`).

pub(crate) mod cache;
mod changes;
mod connect;
mod connection_state;
mod idle;
mod input_required;
mod lazy;
mod listen;
mod notify;
mod operation;
mod reconnect_policy;
mod request;
mod requests;
mod self_heal;
mod skills;
mod tasks;
pub(crate) mod trace;

use crate::cancellation::CancellationToken;
use crate::engine::completer::Completer;
use crate::engine::gate::Gate;
use crate::engine::router::RouterStats;
use crate::engine::{Connection, CALLBACK_WAIT_ON_CLOSE};
use crate::error::{Error, Result, Status};
use crate::handlers::{Callbacks, LogLevel, ProgressHandler};
use crate::protocol::envelope::{self, Envelope};
use crate::sync::{lock, wait_until};
use crate::transport::custom::{BlockingTransport, CustomTransport};
use crate::transport::http::{HttpConfig, HttpTransport, TransportMemory};
use crate::transport::stdio::{StderrMode, StdioConfig, StdioTransport};
use crate::transport::{Inbound, Transport};
use changes::Changes;
pub use connect::ConnectMode;
use connection_state::StateReports;
pub use connection_state::{ConnectionState, StateHandler};
pub use listen::Listen;
pub use reconnect_policy::ReconnectPolicy;
pub use request::{Arguments, Request};
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Options for a client, fixed when it is created.
#[derive(Clone)]
pub struct ClientOptions {
    /// Sent as `clientInfo` (in `initialize`, or in every modern request's `_meta`).
    pub client_info: Value,
    /// Sent as the client's capabilities, in the same places. `None`: derived from the
    /// request handlers (`roots`, `sampling`, `elicitation` for those registered).
    pub capabilities: Option<Value>,
    /// Which protocol era to speak; `Auto` probes with `server/discover` and falls back to the
    /// `initialize` handshake.
    pub mode: ConnectMode,
    /// Pins a protocol version: a handshake version means the legacy handshake with that offer;
    /// a modern version is never downgraded.
    pub protocol_version: Option<String>,
    /// How long the auto mode's `server/discover` probe waits before deciding the server is
    /// of the handshake era: its share of `connect_timeout`, never more.
    pub discover_timeout: Duration,
    /// How many `input_required` rounds one call may take (SEP-2322).
    pub input_required_max_rounds: u32,
    /// Callbacks for notifications and progress, handlers for server requests, the log.
    pub callbacks: Callbacks,
    /// The timeout for every request that does not set its own. `None`: no timeout. It bounds
    /// the whole request: all its legs (input rounds, task polls, `tasks/result`) share one
    /// deadline taken when it starts.
    pub timeout: Option<Duration>,
    /// The bound of the whole of `connect`: the probe, a proxy tunnel, TLS, the handshake and
    /// OAuth discovery share one deadline, taken when connect starts (TIMEOUT past it).
    pub connect_timeout: Duration,
    /// The most pages an all-pages call (`tools`, `resources`...) will fetch.
    pub max_pages: usize,
    /// Declares the tasks extension (`io.modelcontextprotocol/tasks`, 2026-07-28 era): the
    /// server may then answer `tools/call` with a task, which the call polls to its end. On a
    /// 2025-11-25 connection, calls tools listed as task-capable as tasks of that era, where the
    /// server offers them (see `tasks.rs`).
    pub tasks: bool,
    /// The `elicitation/create` handler also accepts URL mode: declares `elicitation.url`.
    pub elicitation_url: bool,
    /// The `sampling/createMessage` handler accepts `tools`: declares `sampling.tools`.
    pub sampling_tools: bool,
    /// Connect on the first request instead of at `connect`: nothing starts (no process,
    /// socket or thread) until a request needs the server. The requests that find no
    /// connection wait for one connect, each bounded by its own timeout and cancel; when it
    /// fails they fail with its status, the message prefixed "lazy connect failed", and the
    /// next request tries again. `connect` still connects at once.
    pub lazy_connect: bool,
    /// Stop a stdio server that has had no request for this long (none in flight, no listen
    /// open), as `close` stops one; the next request starts it again, as a lazy connect does.
    /// `state()` is then NotConnected, and the log says why. HTTP clients ignore it.
    pub idle_shutdown: Option<Duration>,
    /// Self-healing connections: a request that finds the connection failed connects again
    /// first (see [`ReconnectPolicy`]). `None` (the default): the host calls `connect`.
    pub reconnect: Option<ReconnectPolicy>,
    /// Told each transition of the connection (connecting, connected, failed, reconnecting,
    /// closed), in order, on a thread of the client's own that runs no other callback.
    pub on_state: Option<StateHandler>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            client_info: json!({ "name": "mcpc", "version": crate::VERSION }),
            capabilities: None,
            mode: ConnectMode::Auto,
            protocol_version: None,
            discover_timeout: Duration::from_secs(5),
            input_required_max_rounds: 10,
            callbacks: Callbacks::default(),
            timeout: None,
            connect_timeout: Duration::from_secs(30),
            max_pages: 1000,
            tasks: false,
            elicitation_url: false,
            sampling_tools: false,
            lazy_connect: false,
            idle_shutdown: None,
            reconnect: None,
            on_state: None,
        }
    }
}

/// Options for one request.
#[derive(Clone, Default)]
pub struct RequestOptions {
    /// Cancelling this token from any thread ends the call with CANCELLED.
    pub cancellation: Option<CancellationToken>,
    /// Overrides the client's timeout for this request; `Some(Duration::ZERO)` means none. It
    /// bounds all the request's legs together.
    pub timeout: Option<Duration>,
    /// Sent as `params._meta.progressToken`. When unset but `on_progress` is set, the library
    /// makes a token unique on the connection.
    pub progress_token: Option<Value>,
    /// Hears this call's progress, on the client's callback thread.
    pub on_progress: Option<ProgressHandler>,
    /// Progress restarts the timeout (never past `max_total_timeout`).
    pub reset_timeout_on_progress: bool,
    /// A hard limit on the whole call, whatever progress arrives.
    pub max_total_timeout: Option<Duration>,
    /// Extra `params._meta` entries.
    pub meta: Option<Map<String, Value>>,
    /// To continue an `input_required` result by hand: the answers, keyed as in its
    /// `inputRequests` (sent as `inputResponses`).
    pub input_responses: Option<Value>,
    /// To continue an `input_required` result by hand: its `requestState`, echoed unchanged.
    pub request_state: Option<String>,
    /// A call answered with a task returns the task as it came (`resultType: "task"`,
    /// `taskId`...) instead of polling it: the host then drives it with `get_task`,
    /// `update_task` and `cancel_task`.
    pub return_task: bool,
    /// List calls ask the server even when a fresh page is cached (the new page is kept).
    pub bypass_cache: bool,
}

impl RequestOptions {
    pub fn with_cancellation(token: &CancellationToken) -> Self {
        RequestOptions {
            cancellation: Some(token.clone()),
            ..Self::default()
        }
    }

    pub fn with_timeout(timeout: Duration) -> Self {
        RequestOptions {
            timeout: Some(timeout),
            ..Self::default()
        }
    }
}

type TransportFactory = dyn Fn(Arc<dyn Inbound>) -> Result<Opened> + Send + Sync;

/// A transport just opened, and the stdio one again when it is one (for its stderr and pid).
struct Opened {
    transport: Arc<dyn Transport>,
    stdio: Option<Arc<StdioTransport>>,
}

/// An MCP client: connect, then make requests, blocking ([`Client::call_tool`]...) or started
/// without blocking ([`Client::start`]); both go through the same engine path.
pub struct Client {
    /// What the client is made of, shared with the operations it started.
    core: Arc<ClientCore>,
}

/// The client's own methods; the requests are in `requests.rs`, the listens in `listen.rs`.
impl Client {
    /// Starts the server (stdio) and learns its era: in auto mode (the default) it probes with
    /// `server/discover` and falls back to the `initialize` handshake (offering 2025-11-25).
    /// Returns the discover or `initialize` result. Neither `initialize` nor the probe is
    /// cancelled on the wire.
    ///
    /// The reconnect contract: connecting again while connected returns the same result
    /// without I/O. When the connection has failed since ([`ConnectionState::Failed`]: the
    /// stdio server exited, the HTTP server ended the session), it starts a new connection
    /// (the server is started again, a new session is opened), says so to the log callback,
    /// and returns the new server's result. A `close` from another thread ends a connect at
    /// any point with CLOSED. With a reconnect policy, requests do this themselves (see
    /// [`ReconnectPolicy`]).
    ///
    /// `connect_timeout` bounds the whole of it. A connect made while another makes a new
    /// connection waits for that one's outcome, within its own timeout. No lock of ours is held
    /// while the failed connection is reported and ended, so any callback (the log, a stderr
    /// line, a handler) may call connect on its own client.
    pub fn connect(&self) -> Result<Value> {
        self.core.connect()
    }

    /// Ends the session: every pending call returns CLOSED at once, and the handlers of server
    /// requests still running see their cancellation (their answers are not sent). A `connect`
    /// in progress returns CLOSED at once. The callbacks already queued run, then no callback
    /// starts; close waits for those running on other threads to return. All this takes
    /// [`CALLBACK_WAIT_ON_CLOSE`] (2 s) at most: what is still queued then is dropped, and a
    /// callback still running is left running (logged). Then the server's stdin is closed, and
    /// it gets 2 s to exit, then SIGTERM, 2 s more, then SIGKILL to its process group, whose
    /// last processes get up to 1 s to end, so none is left when close returns; processes it
    /// started outside its process group that still hold its pipes are not waited for. With
    /// [`StdioConfig::close_in_background`](crate::StdioConfig) close does not wait for the server:
    /// the library ends it (same steps) and reaps it in the background. The
    /// connection's own threads get [`limits::THREAD_WAIT_ON_CLOSE`] to end and are let go past
    /// it. In all, close (and dropping the client) returns within [`limits::CLOSE_BOUND`]
    /// whatever servers and callbacks do; a callback still running then is abandoned, so what it
    /// uses must outlive it. Later calls return CLOSED. Safe from any thread, more than once, and
    /// from inside a callback (which close does not wait for).
    ///
    /// [`limits::THREAD_WAIT_ON_CLOSE`]: crate::limits::THREAD_WAIT_ON_CLOSE
    /// [`limits::CLOSE_BOUND`]: crate::limits::CLOSE_BOUND
    pub fn close(&self) {
        self.core.close()
    }

    /// The server's `initialize` result (or `server/discover` result, modern), once connected.
    pub fn server_info(&self) -> Option<Value> {
        self.core.server_info()
    }

    /// The negotiated protocol version, once connected.
    pub fn protocol_version(&self) -> Option<String> {
        self.core.protocol_version()
    }

    pub fn server_capabilities(&self) -> Option<Value> {
        self.core.server_capabilities()
    }

    pub fn instructions(&self) -> Option<String> {
        self.core.instructions()
    }

    /// Whether the connection speaks the modern (2026-07-28) era.
    pub fn is_modern(&self) -> bool {
        self.core.is_modern()
    }

    /// The server's implementation info (`name`, `version`...), in either era.
    pub fn server_implementation(&self) -> Option<Value> {
        self.core.server_implementation()
    }

    /// Connected, with a connection that has not failed.
    pub fn is_connected(&self) -> bool {
        self.core.is_connected()
    }

    /// Where the client stands; see [`ConnectionState`] and the reconnect contract of
    /// [`Client::connect`].
    pub fn state(&self) -> ConnectionState {
        self.core.state()
    }

    /// The last lines the stdio server wrote to stderr.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.core.stderr_tail()
    }

    /// The stdio server's process id.
    pub fn server_pid(&self) -> Option<u32> {
        self.core.server_pid()
    }

    /// What the connection has dropped so far (late responses, bad frames).
    pub fn stats(&self) -> RouterStats {
        self.core.stats()
    }
}

/// What a [`Client`] is made of, shared with the operations it has started (which may outlive
/// a method call: see [`Client::start`]).
pub struct ClientCore {
    /// This core itself, for the process-wide idle timer (which must not keep it alive).
    me: std::sync::Weak<ClientCore>,
    options: ClientOptions,
    /// Numbers the progress tokens the library makes.
    next_progress_token: AtomicU64,
    open_transport: Box<TransportFactory>,
    state: Mutex<State>,
    /// Signalled when a connect ends (see `State::connecting`), and on close.
    connect_done: Condvar,
    /// Every host callback passes through it; `close` shuts it.
    gate: Arc<Gate>,
    /// Signalled when a connection has finished opening (see `State::opening`).
    opened: Condvar,
    /// `tasks/cancel` requests sent for cancelled task-backed calls, still under way.
    task_cancels: Arc<tasks::CancelsInFlight>,
    /// Told when the session changes or fails and when the client closes: every wait between
    /// requests (a listen, a task's poll interval, an input round's pause) ends on it.
    changes: Arc<Changes>,
    /// The wire trace, when the host asked for one.
    tracer: Option<Arc<trace::Tracer>>,
    /// List pages kept while their `ttlMs` lasts.
    cache: Arc<cache::Cache>,
    /// Where started (non-blocking) requests end; see `engine::completer`.
    completer: Completer,
    /// The host's connection-state callback, told of each transition.
    reports: Arc<StateReports>,
}

#[derive(Default)]
struct State {
    /// The current connection; it stays after it failed (for its stderr tail, pid and
    /// server info) until `connect` replaces it.
    session: Option<Arc<Session>>,
    /// A `connect` is making a new connection; other connects wait for its outcome.
    connecting: bool,
    /// The connection while its handshake runs, so `close` can end it.
    handshaking: Option<Arc<Connection>>,
    /// A connection is being opened (the server started, threads made): `close` waits for
    /// that short step to end, so it can end the new connection itself, the way it ends one
    /// in its handshake, and `connect` returns CLOSED at once.
    opening: bool,
    /// Closes waiting for the opening to end (each gives up at its deadline).
    closers_waiting: usize,
    /// Why the last connection is gone (the server ended the HTTP session, or connecting
    /// again after a failure failed too): the state is Failed, and the next `connect` opens
    /// a new one.
    lost: Option<Error>,
    /// The connect under way replaces a failed connection.
    reconnecting: bool,
    closed: bool,
    /// The next request connects when there is no session: the lazy option, or the server
    /// was stopped for idleness.
    connect_on_request: bool,
    /// Idle shutdown's account (kept only with that option; see `idle.rs`).
    idle: idle::Account,
    /// How many connects have ended, and the last one's failure: requests that waited for a
    /// lazy connect learn its outcome from them.
    connects_ended: u64,
    last_connect_failure: Option<Error>,
    /// A lazy connect runs on its thread (see `lazy.rs`).
    lazy_connect_running: bool,
}

/// What connecting learned.
struct Negotiated {
    server_info: Value,
    protocol_version: String,
    envelope: Option<Envelope>,
}

/// A connected server.
struct Session {
    connection: Arc<Connection>,
    stdio: Option<Arc<StdioTransport>>,
    /// The `initialize` result, or the `server/discover` result in the modern era.
    server_info: Value,
    protocol_version: String,
    /// Set in the modern era: what every request carries in `_meta`.
    envelope: Option<Envelope>,
    /// 2025-11-25 experimental tasks: the tools this connection's `tools/list` pages said may
    /// run as tasks (`execution.taskSupport` optional or required).
    task_tools: Mutex<HashSet<String>>,
}

impl Client {
    /// A client for a server run as a child process. Nothing starts until [`Client::connect`].
    pub fn stdio(mut config: StdioConfig, options: ClientOptions) -> Client {
        let gate = Arc::<Gate>::default();
        if let StderrMode::Callback(callback) = &config.stderr {
            let (callback, gate) = (callback.clone(), gate.clone());
            config.stderr = StderrMode::Callback(Arc::new(move |line: &str| {
                gate.run(|| callback(line));
            }));
        }
        Self::with_factory(options, gate, "stdio", move |inbound| {
            let stdio = Arc::new(StdioTransport::spawn(&config, inbound)?);
            Ok(Opened {
                transport: stdio.clone(),
                stdio: Some(stdio),
            })
        })
    }

    /// A client over a transport of the host's own.
    pub fn custom(transport: impl BlockingTransport, options: ClientOptions) -> Client {
        let transport = Arc::new(transport);
        Self::with_factory(options, Arc::default(), "custom", move |inbound| {
            Ok(Opened {
                transport: Arc::new(CustomTransport::new(transport.clone(), inbound)),
                stdio: None,
            })
        })
    }

    /// A client for a server reached by Streamable HTTP. Nothing is sent until
    /// [`Client::connect`], which also reports a bad URL or header. With OAuth configured
    /// (`config.auth.oauth`), the auto mode's probe waits up to the connect timeout, since it
    /// may include the person's authorization step.
    pub fn http(config: HttpConfig, mut options: ClientOptions) -> Client {
        // With OAuth the probe may meet the 401 and wait for the person's step: it gets as
        // long as the handshake would.
        if config.auth.oauth.is_some() {
            options.discover_timeout = options.discover_timeout.max(options.connect_timeout);
        }
        // What a connection finds out about the server's transport, for the next ones.
        let memory = TransportMemory::default();
        Self::with_factory(options, Arc::default(), "http", move |inbound| {
            let memory = memory.clone();
            Ok(Opened {
                transport: Arc::new(HttpTransport::open(config.clone(), inbound, memory)?),
                stdio: None,
            })
        })
    }

    fn with_factory(
        options: ClientOptions,
        gate: Arc<Gate>,
        transport_name: &'static str,
        factory: impl Fn(Arc<dyn Inbound>) -> Result<Opened> + Send + Sync + 'static,
    ) -> Client {
        let tracer = options.callbacks.on_trace.clone().and_then(|handler| {
            let log = options.callbacks.on_log.clone();
            trace::Tracer::start(handler, log, transport_name, gate.clone())
        });
        let reports = Arc::new(StateReports::new(
            options.on_state.clone(),
            gate.clone(),
            options.callbacks.on_log.clone(),
        ));
        Client {
            core: Arc::new_cyclic(|me| ClientCore {
                me: me.clone(),
                state: Mutex::new(State {
                    connect_on_request: options.lazy_connect,
                    ..State::default()
                }),
                reports,
                tracer,
                cache: Arc::default(),
                changes: Arc::default(),
                options,
                next_progress_token: AtomicU64::new(1),
                open_transport: Box::new(factory),
                connect_done: Condvar::new(),
                opened: Condvar::new(),
                gate,
                completer: Completer::default(),
                task_cancels: Arc::default(),
            }),
        }
    }
}

impl ClientCore {
    /// The work of [`Client::connect`].
    pub(crate) fn connect(&self) -> Result<Value> {
        crate::fork_guard::check()?;
        let outcome = self.connect_once();
        {
            // Requests waiting for a lazy connect learn how it ended (see `lazy.rs`).
            let mut state = self.lock();
            state.connects_ended += 1;
            state.last_connect_failure = outcome.as_ref().err().cloned();
        }
        self.changes.notify();
        outcome
    }

    /// `connect` itself: one new connection at a time; a connect made meanwhile waits for its
    /// outcome.
    fn connect_once(&self) -> Result<Value> {
        // `None`: a timeout too long to represent, which is none.
        let deadline = Instant::now().checked_add(self.options.connect_timeout);
        // The failure of the connection this connect replaces: the state says Reconnecting
        // meanwhile, and Failed again should no new connection come.
        let mut replacing: Option<Error> = None;
        let (number, reconnecting) = loop {
            let failed = {
                let mut state = self.lock();
                loop {
                    if state.closed {
                        return Err(closed_error());
                    }
                    if !state.connecting {
                        break;
                    }
                    // Another thread is connecting: its outcome is ours, within our own time.
                    state = wait_until(&self.connect_done, state, deadline)
                        .ok_or_else(|| connect::connect_timed_out(self.options.connect_timeout))?;
                }
                let failure = match &state.session {
                    Some(session) => match session.connection.failure() {
                        None => return Ok(session.server_info.clone()),
                        Some(failure) => Some(failure),
                    },
                    None => state.lost.take(),
                };
                match failure {
                    Some(failure) => {
                        state.reconnecting = true;
                        replacing = Some(failure.clone());
                        (failure, state.session.take())
                    }
                    None => {
                        // Another connect may be retiring the failed connection: this one
                        // then replaces it.
                        state.connecting = true;
                        state.reconnecting |= replacing.is_some();
                        let reconnecting = state.reconnecting;
                        break (self.reports.connecting(reconnecting), reconnecting);
                    }
                }
            };
            // The failed connection is retired before connecting, with no lock of ours held:
            // the log callback and the old connection's own callbacks (a stderr line) may call
            // connect, and the first to find no connection makes the new one.
            self.retire(failed);
        };
        let outcome = self.connect_anew(deadline, number);
        let mut state = self.lock();
        state.connecting = false;
        state.reconnecting = false;
        self.connect_done.notify_all();
        if let (Err(error), false) = (&outcome, state.closed) {
            let now = match reconnecting {
                // The old connection is gone and no new one came: still Failed.
                true => {
                    state.lost = Some(replacing.unwrap_or_else(|| error.clone()));
                    ConnectionState::Failed
                }
                false => ConnectionState::NotConnected,
            };
            drop(state);
            self.reports.of(number, now);
        }
        outcome
    }

    /// Says a connection failed and ends it, before a new one is made.
    fn retire(&self, (failure, old): (Error, Option<Arc<Session>>)) {
        self.log(
            LogLevel::Info,
            &format!(
                "the connection had failed ({}); connecting again",
                failure.message
            ),
        );
        if let Some(old) = old {
            old.connection.close(failure);
        }
    }

    /// Opens a new connection and learns its era, by `deadline`; `number` is this connect's,
    /// for the state reports.
    fn connect_anew(&self, deadline: Option<Instant>, number: u64) -> Result<Value> {
        {
            let mut state = self.lock();
            if state.closed {
                return Err(closed_error());
            }
            state.opening = true;
        }
        let mut stdio = None;
        let callbacks = Arc::new(self.options.callbacks.clone());
        // A new connection may be another server: nothing it said before is kept.
        self.cache.clear();
        let opened = Connection::open(callbacks, self.gate.clone(), |inbound| {
            let inbound = self.cache.watching(inbound);
            let inbound = match &self.tracer {
                Some(tracer) => tracer.inbound(inbound),
                None => inbound,
            };
            let opened = (self.open_transport)(inbound)?;
            stdio = opened.stdio;
            Ok(match &self.tracer {
                Some(tracer) => tracer.transport(opened.transport),
                None => opened.transport,
            })
        });
        let connection = {
            let mut state = self.lock();
            state.opening = false;
            self.opened.notify_all();
            let connection = match opened {
                Ok(connection) => Arc::new(connection),
                Err(_) if state.closed => return Err(closed_error()),
                Err(error) => return Err(error),
            };
            if state.closed && state.closers_waiting == 0 {
                // The close gave up waiting for the opening: the connection is ours to end.
                drop(state);
                connection.close(closed_error());
                return Err(closed_error());
            }
            // A close waiting for the opening, or one that comes later, takes it and ends it.
            state.handshaking = Some(connection.clone());
            if state.closed {
                return Err(closed_error());
            }
            connection
        };
        let handshake = self.negotiate(&connection, deadline);
        let mut state = self.lock();
        state.handshaking = None;
        match handshake {
            // Whatever the handshake ended with, a close decides the outcome. That close took
            // the connection (with `closed`, in one step) and ends it: returning now, not after
            // the server's exit, is what "at once" means for a connect.
            _ if state.closed => Err(closed_error()),
            Ok(negotiated) => {
                let server_info = negotiated.server_info.clone();
                // Reported before the failure hook is set, so that CONNECTED comes first.
                self.reports.of(number, ConnectionState::Connected);
                let (changes, reports) = (self.changes.clone(), self.reports.clone());
                connection.on_failure(move || {
                    changes.notify();
                    reports.of(number, ConnectionState::Failed);
                });
                self.changes.notify();
                state.session = Some(Arc::new(Session {
                    connection,
                    stdio,
                    server_info: negotiated.server_info,
                    protocol_version: negotiated.protocol_version,
                    envelope: negotiated.envelope,
                    task_tools: Mutex::default(),
                }));
                self.idle_connected(&mut state);
                Ok(server_info)
            }
            Err(error) => {
                drop(state);
                connection.close(Error::new(Status::Closed, "connect failed"));
                Err(error)
            }
        }
    }

    /// The work of [`Client::close`].
    pub(crate) fn close(&self) {
        // What close waits for before shutting the transport down shares this deadline.
        let deadline = Instant::now() + CALLBACK_WAIT_ON_CLOSE;
        let (session, handshaking) = {
            let mut state = self.lock();
            state.closed = true;
            self.connect_done.notify_all();
            // Opening a connection is short (a process and threads started, nothing awaited
            // from the server): wait for it, to end that connection here. Should it not end
            // by the deadline, the connect ends the connection itself once it has it.
            state.closers_waiting += 1;
            while state.opening {
                match wait_until(&self.opened, state, Some(deadline)) {
                    Some(next) => state = next,
                    None => {
                        state = self.lock();
                        break;
                    }
                }
            }
            state.closers_waiting -= 1;
            (state.session.take(), state.handshaking.take())
        };
        self.reports.closed();
        // Calls waiting between requests (a task's next poll, an input round's pause, a
        // listen) end now.
        self.changes.close();
        // The tasks/cancel of a call cancelled just before is let through (as queued cancel
        // notices are), within the bound close keeps.
        self.task_cancels.wait_until(deadline);
        let error = closed_error();
        let connections: Vec<Arc<Connection>> = handshaking
            .into_iter()
            .chain(session.map(|s| s.connection.clone()))
            .collect();
        // Calls made from callbacks return now, and handlers see their cancellation, so that
        // the callbacks can return.
        for connection in &connections {
            connection.fail_pending(error.clone());
        }
        // What the server said before close is still heard (a close made from a callback
        // cannot wait for those queued after it: they are dropped).
        for connection in &connections {
            connection.drain_callbacks(deadline);
        }
        // Every started request completes (with CLOSED, their calls having ended above), its
        // completion delivered before the gate shuts.
        if !self.completer.close(deadline) {
            self.options.callbacks.log(
                LogLevel::Warning,
                "started requests were still undelivered 2 s after close began (a completion callback did not return)",
            );
        }
        if let Some(tracer) = &self.tracer {
            tracer.drain(deadline);
        }
        self.reports.drain(deadline);
        self.gate.shut();
        if !self.gate.wait_until(deadline) {
            // On this thread, which is the host's own and holds no lock of ours.
            self.options.callbacks.log(
                LogLevel::Warning,
                "a callback was still running 2 s after close began; close returns without it",
            );
        }
        self.reports.stop(deadline);
        for connection in connections {
            connection.close_by(error.clone(), deadline);
        }
    }

    /// The work of [`Client::server_info`].
    pub(crate) fn server_info(&self) -> Option<Value> {
        self.session_ref().map(|s| s.server_info.clone())
    }

    /// The work of [`Client::protocol_version`].
    pub(crate) fn protocol_version(&self) -> Option<String> {
        self.session_ref().map(|s| s.protocol_version.clone())
    }

    /// The work of [`Client::server_capabilities`].
    pub(crate) fn server_capabilities(&self) -> Option<Value> {
        self.session_ref()
            .and_then(|s| s.server_info.get("capabilities").cloned())
    }

    /// The work of [`Client::instructions`].
    pub(crate) fn instructions(&self) -> Option<String> {
        self.session_ref().and_then(|s| {
            s.server_info
                .get("instructions")?
                .as_str()
                .map(str::to_owned)
        })
    }

    /// The work of [`Client::is_modern`].
    pub(crate) fn is_modern(&self) -> bool {
        self.session_ref().is_some_and(|s| s.envelope.is_some())
    }

    /// The work of [`Client::server_implementation`].
    pub(crate) fn server_implementation(&self) -> Option<Value> {
        self.session_ref()
            .and_then(|s| envelope::server_info(&s.server_info).cloned())
    }

    /// The work of [`Client::is_connected`].
    pub(crate) fn is_connected(&self) -> bool {
        self.state() == ConnectionState::Connected
    }

    /// The work of [`Client::state`].
    pub(crate) fn state(&self) -> ConnectionState {
        let state = self.lock();
        match &state.session {
            _ if state.closed => ConnectionState::Closed,
            _ if state.reconnecting => ConnectionState::Reconnecting,
            _ if state.connecting => ConnectionState::Connecting,
            Some(session) if session.connection.failure().is_some() => ConnectionState::Failed,
            Some(_) => ConnectionState::Connected,
            None if state.lost.is_some() => ConnectionState::Failed,
            None => ConnectionState::NotConnected,
        }
    }

    /// The work of [`Client::stderr_tail`].
    pub(crate) fn stderr_tail(&self) -> Vec<String> {
        self.session_ref()
            .and_then(|s| s.stdio.as_ref().map(|t| t.stderr_tail()))
            .unwrap_or_default()
    }

    /// The work of [`Client::server_pid`].
    pub(crate) fn server_pid(&self) -> Option<u32> {
        self.session_ref()
            .and_then(|s| s.stdio.as_ref().map(|t| t.pid()))
    }

    /// The work of [`Client::stats`].
    pub(crate) fn stats(&self) -> RouterStats {
        self.session_ref()
            .map(|s| s.connection.stats())
            .unwrap_or_default()
    }

    /// Drops `session` if it is still the current one, so that `connect` starts afresh.
    fn forget_session(&self, session: &Arc<Session>) {
        let forgotten = {
            let mut state = self.lock();
            match &state.session {
                Some(current) if Arc::ptr_eq(current, session) => {
                    state.lost = Some(session_ended());
                    // Under the lock: before a connect that replaces it can report.
                    self.reports.failed();
                    state.session.take()
                }
                _ => None,
            }
        };
        self.changes.notify();
        if let Some(forgotten) = forgotten {
            forgotten.connection.close(session_ended());
        }
    }

    /// The live session, or why there is none.
    fn session(&self) -> Result<Arc<Session>> {
        let state = self.lock();
        if state.closed {
            return Err(closed_error());
        }
        state
            .session
            .clone()
            .ok_or_else(|| Error::new(Status::NotConnected, "not connected: call connect first"))
    }

    /// The library's log from a caller's thread (which holds no lock of ours).
    fn log(&self, level: LogLevel, message: &str) {
        self.gate.run(|| self.options.callbacks.log(level, message));
    }

    /// The capabilities we declare: the host's, or those its request handlers imply.
    fn capabilities(&self) -> Value {
        if let Some(capabilities) = &self.options.capabilities {
            return capabilities.clone();
        }
        let handles = |method: &str| self.options.callbacks.request_handlers.contains_key(method);
        let mut capabilities = serde_json::Map::new();
        if handles("roots/list") {
            // `notify_roots_list_changed` tells the server when the roots change.
            capabilities.insert("roots".into(), json!({ "listChanged": true }));
        }
        if handles("sampling/createMessage") {
            let sampling = match self.options.sampling_tools {
                true => json!({ "tools": {} }),
                false => json!({}),
            };
            capabilities.insert("sampling".into(), sampling);
        }
        if handles("elicitation/create") {
            let elicitation = match self.options.elicitation_url {
                true => json!({ "form": {}, "url": {} }),
                false => json!({ "form": {} }),
            };
            capabilities.insert("elicitation".into(), elicitation);
        }
        Value::Object(capabilities)
    }

    /// The capabilities of a modern request's envelope: those above, and the extensions the
    /// options ask for (added to the host's own capabilities too).
    fn modern_capabilities(&self) -> Value {
        let mut capabilities = self.capabilities();
        if self.options.tasks {
            if let Value::Object(fields) = &mut capabilities {
                let extensions = fields.entry("extensions").or_insert_with(|| json!({}));
                if let Value::Object(extensions) = extensions {
                    extensions.insert(tasks::TASKS_EXTENSION.into(), json!({}));
                }
            }
        }
        capabilities
    }

    fn session_ref(&self) -> Option<Arc<Session>> {
        self.lock().session.clone()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.core.close();
    }
}

fn session_ended() -> Error {
    Error::new(Status::SessionExpired, "the server ended the session")
}

fn closed_error() -> Error {
    Error::new(Status::Closed, "the client is closed")
}
