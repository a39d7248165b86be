//! The engine: one connection's calls in flight.
//!
//! A call is made in two halves, the same for every caller. `Connection::start` gives the call
//! an id, registers it with the router (which routes its response by id), hooks its
//! cancellation token, and hands the request to the transport. `Started::finish` takes the
//! outcome the call's completion race decided (response, error, cancel, timeout, close: see
//! `call`), unregisters it, and maps the outcome to the caller's result. Between the halves
//! someone waits for the outcome:
//! - a blocking call waits on its own thread (`Started::wait`), reading the transport itself
//!   when it is the only call in flight, and keeps its timeout there;
//! - a started call (the completion API) has no thread: its `Call` carries a `notify` hook
//!   that tells the client's completer (`completer`, a strand of the process's completion pool)
//!   the outcome is decided; the completer also keeps started calls' timeouts (the same
//!   `timeout::Timeout`, woken by the process's one clock, `completion_timer`), finishes them
//!   and runs their continuations.
//!
//! Cancel notices and answers to server requests go out through the dispatcher, which runs on
//! the connection's strand of the shared I/O pool (no thread of its own), so neither a cancelling
//! thread nor the reader thread ever waits for a write. Answers wait in a bounded queue
//! (`answers`, `limits`); cancel notices have a queue of their own, written first, so a server
//! flooding us with requests never holds a cancel up.
//!
//! Files: `call` (one call's outcome race), `router` (what arrives, routed by id), `timeout`,
//! `dispatcher` and `answers` (what goes out besides requests), `callback_queue` and `gate`
//! (host callbacks in order on the shared pool, and close waiting for them), `own_progress` (a
//! call's own progress callback) and `reported_progress` (progress the client reports itself),
//! `completer` and `completion_timer` (the completion API), `limits` (every bound).

pub mod answers;
pub mod call;
pub mod callback_queue;
pub mod completer;
mod completion_timer;
mod dispatcher;
pub mod gate;
pub mod limits;
mod own_progress;
pub mod reported_progress;
pub mod router;
mod timeout;

use crate::cancellation::{CancellationToken, HookId};
use crate::error::{Error, Result, Status};
use crate::handlers::{Callbacks, LogLevel, ProgressHandler};
use crate::protocol::envelope::Envelope;
use crate::protocol::jsonrpc;
use crate::protocol::params::Params;
use crate::protocol::reply::Reply;
use crate::transport::{Inbound, OutgoingRequest, SendBoundary, Transport, WireCancel};
use call::{Call, Notify, Outcome};
use callback_queue::CallbackQueue;
use dispatcher::{Dispatcher, Outbound};
use gate::Gate;
use own_progress::OwnProgress;
use router::{Router, RouterInbound, RouterStats};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use timeout::Timeout;

/// How long close waits for host callbacks still running to return (the callback gate).
pub const CALLBACK_WAIT_ON_CLOSE: Duration = Duration::from_secs(2);

/// What a request says; the engine gives it an id and encodes it.
#[derive(Clone, Copy)]
pub struct RequestBody<'a> {
    pub method: &'a str,
    pub params: Option<&'a Params>,
    /// Modern era: stamped into `params._meta` as the request is encoded.
    pub envelope: Option<&'a Envelope>,
}

impl<'a> RequestBody<'a> {
    pub fn new(method: &'a str, params: Option<&'a Params>) -> Self {
        RequestBody {
            method,
            params,
            envelope: None,
        }
    }

    pub fn stamped(self, envelope: Option<&'a Envelope>) -> Self {
        RequestBody { envelope, ..self }
    }
}

/// How one call is made.
#[derive(Default, Clone)]
pub struct CallOptions {
    pub cancellation: Option<CancellationToken>,
    pub timeout: Option<Duration>,
    /// Progress restarts the timeout (never past `max_total`).
    pub reset_timeout_on_progress: bool,
    /// A hard limit on the whole call, whatever progress arrives.
    pub max_total: Option<Duration>,
    /// False for `initialize` and the discovery probe, which are never cancelled on the wire.
    pub cancel_on_wire: bool,
    /// The progress token sent in the request, and who hears its progress besides the client.
    pub progress: Option<(Value, Option<ProgressHandler>)>,
    /// Set for `subscriptions/listen` (see `Router::watch_listen`).
    pub listen: Option<Arc<router::ListenWatch>>,
}

/// A call handed to the engine and not finished yet: what `finish` undoes once its outcome is
/// known (the table entry, the token's hook, its own progress callback).
pub struct Started {
    call: Arc<Call>,
    opts: CallOptions,
    hook: Option<HookId>,
    own: Option<OwnProgress>,
    /// In the router's table (a call refused by a closed connection never was).
    registered: bool,
    /// Handed to the transport.
    sent: bool,
}

impl Started {
    /// Blocks this thread until the call's outcome (reading the transport itself when it is
    /// the only call in flight), then finishes it.
    pub fn wait(self, connection: &Connection) -> Result<Reply> {
        let outcome = wait_with_timeout(&self.call, &self.opts, |deadline| {
            connection.wait_for(&self.call, deadline)
        });
        self.finish(connection, outcome)
    }

    pub fn call(&self) -> &Arc<Call> {
        &self.call
    }

    pub fn options(&self) -> &CallOptions {
        &self.opts
    }

    /// Whether finishing the call waits for its own progress callback (host code) to run.
    pub fn has_own_progress(&self) -> bool {
        self.own.is_some()
    }

    /// Ends the call with the outcome taken from it: out of the table, the hook off the token,
    /// its own progress settled, and the outcome as the caller sees it.
    pub fn finish(self, connection: &Connection, outcome: Outcome) -> Result<Reply> {
        let id = self.call.id;
        let progress_token = self.opts.progress.as_ref().map(|(token, _)| token);
        if self.registered {
            connection.router.unregister(id, progress_token);
        }
        if let (Some(token), Some(hook)) = (&self.opts.cancellation, self.hook) {
            token.off_cancel(hook);
        }
        if let Some(own) = &self.own {
            // A call that ended by itself (answered, or failed by the server or the transport)
            // lets its own queued progress run first; a cancelled, timed-out or closed one
            // returns at once. A call made on the callback thread cannot wait (they are queued
            // behind it): they are dropped.
            let ended_by_itself = match &outcome {
                Outcome::Response(_) | Outcome::Answer(_) => true,
                Outcome::Failed(error) => error.status != Status::Closed,
                Outcome::Cancelled { .. } => false,
            };
            own.finish(ended_by_itself, !connection.callback_queue.is_current());
        }
        let request_id = (self.sent && !self.call.was_withdrawn()).then_some(id);
        match outcome {
            Outcome::Response(frame) => jsonrpc::into_result(frame)
                .map(Reply::from)
                .map_err(|e| e.with_request_id(request_id)),
            Outcome::Answer(reply) => Ok(reply),
            Outcome::Failed(error) => Err(error.with_request_id(request_id)),
            Outcome::Cancelled { reason, timed_out } => Err(if timed_out {
                timeout_error(request_id, reason)
            } else {
                cancelled_error(request_id, reason)
            }),
        }
    }
}

pub struct Connection {
    router: Arc<Router>,
    transport: Arc<dyn Transport>,
    next_id: AtomicI64,
    closed: AtomicBool,
    dispatcher: Arc<Dispatcher>,
    callback_queue: Arc<CallbackQueue>,
}

impl Connection {
    /// Builds the router, lets `make_transport` connect to the server with it, and starts the
    /// dispatcher. Every host callback runs through `gate`.
    pub fn open(
        callbacks: Arc<Callbacks>,
        gate: Arc<Gate>,
        make_transport: impl FnOnce(Arc<dyn Inbound>) -> Result<Arc<dyn Transport>>,
    ) -> Result<Connection> {
        // Unbounded, but only the host fills it: at most a notice and an abandon per call.
        let (outbound_tx, outbound_rx) = crossbeam_channel::unbounded();
        let (answers_tx, answers_rx) = answers::bounded();
        let dispatcher = Dispatcher::new(outbound_rx, answers_rx);
        let callback_queue = Arc::new(CallbackQueue::new(gate, callbacks.on_log.clone()));
        let router = Arc::new(Router::new(
            Outbound::new(outbound_tx, Some(dispatcher.clone())),
            answers_tx.waking({
                let dispatcher = dispatcher.clone();
                Arc::new(move || dispatcher.wake())
            }),
            callback_queue.clone(),
            callbacks,
        ));
        let transport = make_transport(Arc::new(RouterInbound(router.clone())))?;
        dispatcher.serve(&transport);
        Ok(Connection {
            router,
            transport,
            next_id: AtomicI64::new(1),
            closed: AtomicBool::new(false),
            dispatcher,
            callback_queue,
        })
    }

    /// Sends a request and blocks until its outcome: [`Connection::start`], then
    /// [`Started::wait`] on this thread.
    pub fn call(&self, request: RequestBody, opts: &CallOptions) -> Result<Value> {
        self.start(request, opts.clone(), None)
            .wait(self)
            .and_then(Reply::try_into_value)
    }

    /// Hands a request to the transport without waiting for its outcome. With `notify`, the
    /// call is watched by the completion thread (`completer`), which `notify` tells when the
    /// outcome is decided; without, the caller is expected to `wait`. Either way the call ends
    /// through [`Started::finish`].
    pub fn start(
        &self,
        request: RequestBody,
        opts: CallOptions,
        notify: Option<Notify>,
    ) -> Started {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let caller_waits = notify.is_none();
        let wire = match opts.cancel_on_wire {
            true => self.transport.wire_cancel(),
            false => WireCancel::Silent,
        };
        let call = Arc::new(
            Call::new(id, wire, self.router.outbound())
                .with_reader_waker(self.transport.reader_waker(id))
                .with_transport(Arc::downgrade(&self.transport))
                .with_notify(notify),
        );
        let mut started = Started {
            call: call.clone(),
            own: None,
            hook: None,
            registered: false,
            sent: false,
            opts,
        };
        if let Some(token) = &started.opts.cancellation {
            if token.is_cancelled() {
                // Nothing is sent at all: no request, no notice.
                call.cancel(token.reason().as_deref(), false);
                call.never_sent();
                return started;
            }
        }
        started.own = started
            .opts
            .progress
            .as_ref()
            .and_then(|(_, handler)| handler.clone())
            .map(OwnProgress::new);
        let progress = started
            .opts
            .progress
            .as_ref()
            .map(|(token, _)| (token, started.own.clone()));
        if let Err(error) = self.router.register(call.clone(), progress) {
            call.finish(Outcome::Failed(error));
            call.never_sent();
            return started;
        }
        started.registered = true;
        if let Some(watch) = &started.opts.listen {
            self.router.watch_listen(call.id, watch.clone());
        }
        started.hook = started.opts.cancellation.as_ref().and_then(|token| {
            let call = call.clone();
            token.on_cancel(move |reason| {
                call.cancel(reason, false);
            })
        });

        // A cancel that won before we wrote anything means the request is never sent.
        started.sent = !call.is_finished();
        if !started.sent {
            call.never_sent();
            return started;
        }
        // A request whose call ended before its first byte was written is not sent.
        let boundary = SendBoundary::new(call.clone());
        let frame = jsonrpc::encode_request(id, request.method, request.params, request.envelope);
        let request = OutgoingRequest {
            id,
            frame,
            sent: boundary,
            // A blocking caller waits in `wait_for` right after (which reads if it can), unless
            // its deadline may move on progress: then it must stay free to move it (a transport
            // aborts what it runs for the caller at the deadline it was given). A started call
            // has no caller waiting: never.
            caller_reads: caller_waits && !started.opts.reset_timeout_on_progress,
        };
        if let Err(error) = self.transport.send_request(request) {
            call.finish(Outcome::Failed(error));
        }
        started
    }

    /// Waits for the call's outcome until `deadline`. When the call is the only one in flight
    /// and the transport lets it, this thread reads the response itself (no hand-off from a
    /// reader thread); otherwise it waits to be handed its outcome.
    fn wait_for(&self, call: &Call, deadline: Option<Instant>) -> Option<Outcome> {
        if call.start_reading() {
            let alone = self.router.in_flight() == 1;
            self.transport
                .read_here(&|| call.is_finished(), deadline, alone);
            call.stop_reading();
        }
        call.wait(deadline)
    }

    /// The library's own log, on the callback thread.
    pub fn log(&self, level: LogLevel, message: &str) {
        self.router.log(level, message);
    }

    /// Sends a notification from the caller's thread.
    pub fn notify(&self, method: &str, params: Option<&Value>) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::new(Status::Closed, "client is closed"));
        }
        self.transport
            .send_notification(&jsonrpc::encode_notification(method, params))
    }

    /// Hands the host a notification the library makes itself (the handshake era's listen
    /// acknowledgement), on the callback thread, after what the server sent before it.
    pub fn inject_notification(&self, method: &str, params: Option<Value>) {
        use crate::transport::Inbound;
        let notification = jsonrpc::Incoming::Notification {
            method: method.to_owned(),
            params,
        };
        RouterInbound(self.router.clone()).message(notification);
    }

    /// Runs `hook` once the connection is gone (at once if it is already).
    pub fn on_failure(&self, hook: impl FnOnce() + Send + 'static) {
        self.router.on_terminal(hook);
    }

    /// Tells the transport which era and version the connection settled on.
    pub fn negotiated(&self, protocol_version: &str, modern: bool) {
        self.transport.negotiated(protocol_version, modern);
    }

    /// Whether the transport knows only the handshake era (HTTP+SSE).
    pub fn handshake_only(&self) -> bool {
        self.transport.handshake_only()
    }

    /// Why the connection ended, if it has: the transport failed (the server exited, say)
    /// or it was closed.
    pub fn failure(&self) -> Option<Error> {
        self.router.terminal()
    }

    pub fn stats(&self) -> RouterStats {
        self.router.stats()
    }

    /// Ends every pending call and later ones with `error`, and cancels the tokens of the
    /// server requests being handled, without waiting for anything.
    pub fn fail_pending(&self, error: Error) {
        self.router.fail_all(error, true);
    }

    /// Lets the callbacks queued so far run, until `deadline` at most.
    pub fn drain_callbacks(&self, deadline: Instant) {
        self.callback_queue.drain(deadline);
    }

    /// Ends every pending call with `error` at once, then shuts the transport down.
    /// Safe to call more than once and from any thread.
    pub fn close(&self, error: Error) {
        self.close_by(error, Instant::now() + CALLBACK_WAIT_ON_CLOSE);
    }

    /// As `close`, with `deadline` the end of close's wait for queued cancel notices and
    /// callbacks (the client's close shares it with everything it waits for first).
    pub fn close_by(&self, error: Error, deadline: Instant) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        self.router.fail_all(error, true);
        // Cancel notices already queued are still written before the transport goes: the
        // dispatcher drains its queue on stop, until the deadline; closing the transport then
        // unblocks a write stuck on a server that reads nothing.
        let stopped = self.dispatcher.stop(deadline);
        self.transport.close();
        // A write that closing the transport cannot end (a TCP connect under way) is let go.
        let threads_deadline = Instant::now() + limits::THREAD_WAIT_ON_CLOSE;
        if !stopped {
            self.dispatcher.wait_stopped(threads_deadline);
        }
        // A callback that closes the client runs on the callback thread, which must not wait
        // for itself; one that never returns is given up on at the deadline.
        self.callback_queue.stop(deadline.max(threads_deadline));
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.close(Error::new(Status::Closed, "client closed"));
    }
}

/// Waits for the call's outcome, cancelling it with a reason when its timeout passes.
fn wait_with_timeout(
    call: &Call,
    opts: &CallOptions,
    wait: impl Fn(Option<Instant>) -> Option<Outcome>,
) -> Outcome {
    let mut timeout = Timeout::start(opts);
    loop {
        if let Some(outcome) = wait(timeout.deadline()) {
            return outcome;
        }
        if let Some(reason) = timeout.expired(call) {
            // A response that beat the timeout still wins.
            call.cancel(Some(&reason), true);
            return call
                .wait(None)
                .expect("a call has an outcome once cancelled");
        }
    }
}

pub(crate) fn cancelled_error(request_id: Option<i64>, reason: Option<String>) -> Error {
    let message = match &reason {
        Some(reason) => format!("request cancelled: {reason}"),
        None => "request cancelled".to_owned(),
    };
    Error {
        request_id,
        cancel_reason: reason,
        ..Error::new(Status::Cancelled, message)
    }
}

pub(crate) fn timeout_error(request_id: Option<i64>, reason: Option<String>) -> Error {
    Error {
        request_id,
        message: format!("request {}", reason.as_deref().unwrap_or("timed out")),
        cancel_reason: reason,
        ..Error::new(Status::Timeout, "")
    }
}
