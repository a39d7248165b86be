//! Lazy connect: with [`ClientOptions::lazy_connect`](super::ClientOptions), a client starts
//! nothing when it is made (no process, no socket, no thread) and connects on the first
//! request that needs a server, so a host may make many clients and pay only for those it uses.
//!
//! - The request that finds no connection starts the connect, on a thread of its own (living
//!   only as long as the connect), and waits for it; requests that come meanwhile wait for
//!   the same connect. Each waits bounded by its own timeout and cancel, and `close` ends the
//!   connect and the waits with CLOSED; a request that gives up leaves the connect running for
//!   the next one. The connect itself is bounded by the connect timeout, and the time it took
//!   comes out of the request's timeout.
//! - When the connect fails, the requests that waited for it fail with its status, its message
//!   prefixed "lazy connect failed" (they do not try it again one after another).
//! - The next request after a failed connect tries again: the server may be up by then.
//! - An explicit `connect` still works, and is the way to connect before the first request.
//! - A connection that failed after connecting is not replaced here (that is the reconnect
//!   contract of `connect`): requests get its failure. Only a client with no connection at
//!   all connects on request: never connected, the last connect failed, the server was
//!   stopped for idleness (`idle.rs`), or the HTTP server ended the session.

use super::idle::Busy;
use super::{closed_error, ClientCore, RequestOptions, Session};
use crate::error::{Error, Result, Status};
use crate::sync::{lock, spawn};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where a request goes.
pub(super) enum Route {
    /// To this session, counted busy while the request lasts (for idle shutdown).
    Session(Arc<Session>, Option<Busy>),
    /// Nowhere yet: the request connects first (`connect_for_request`).
    ConnectFirst,
}

impl ClientCore {
    /// The session a request goes to, or whether it must connect first.
    pub(super) fn route(&self) -> Result<Route> {
        let mut state = self.lock();
        if state.closed {
            return Err(closed_error());
        }
        match state.session.clone() {
            Some(session) => {
                let busy = self.busy(&mut state);
                Ok(Route::Session(session, busy))
            }
            None if state.connect_on_request => Ok(Route::ConnectFirst),
            None => Err(not_connected()),
        }
    }

    /// Connects for a request that began at `started` (see the module docs).
    pub(super) fn connect_for_request(
        &self,
        opts: &RequestOptions,
        started: Instant,
    ) -> Result<()> {
        let deadline = self.timeout_of(opts).and_then(|t| started.checked_add(t));
        self.connect_before(opts, deadline)
    }

    /// The request's options, with the time since `started` (the connect) taken out of its
    /// timeout; TIMEOUT when none is left.
    pub(super) fn request_time_left(
        &self,
        opts: &RequestOptions,
        started: Instant,
    ) -> Result<RequestOptions> {
        let timeout = match self.timeout_of(opts) {
            // `Duration::ZERO` is "no timeout" to the request.
            None => Duration::ZERO,
            Some(timeout) => match timeout.checked_sub(started.elapsed()) {
                Some(left) if !left.is_zero() => left,
                _ => return Err(timed_out(timeout)),
            },
        };
        Ok(RequestOptions {
            timeout: Some(timeout),
            ..opts.clone()
        })
    }

    /// The request's timeout: its own, or the client's.
    fn timeout_of(&self, opts: &RequestOptions) -> Option<Duration> {
        match opts.timeout.or(self.options.timeout) {
            Some(Duration::ZERO) => None,
            other => other,
        }
    }

    /// Connects, or waits for the connect under way, until `deadline`, the request's cancel
    /// or `close`.
    pub(super) fn connect_before(
        &self,
        opts: &RequestOptions,
        deadline: Option<Instant>,
    ) -> Result<()> {
        let hook = opts.cancellation.as_ref().and_then(|token| {
            let changes = self.changes.clone();
            token.on_cancel(move |_| changes.notify())
        });
        let outcome = self.connect_or_wait(opts, deadline);
        if let (Some(token), Some(hook)) = (&opts.cancellation, hook) {
            token.off_cancel(hook);
        }
        outcome
    }

    fn connect_or_wait(&self, opts: &RequestOptions, deadline: Option<Instant>) -> Result<()> {
        let connects_before = self.lock().connects_ended;
        loop {
            let seen = self.changes.seen();
            if let Some(token) = opts.cancellation.as_ref().filter(|t| t.is_cancelled()) {
                let reason = token.reason();
                return Err(Error {
                    message: match &reason {
                        Some(reason) => format!("cancelled while connecting: {reason}"),
                        None => "cancelled while connecting".to_owned(),
                    },
                    cancel_reason: reason,
                    ..Error::new(Status::Cancelled, "")
                });
            }
            {
                let mut state = self.lock();
                if state.closed {
                    return Err(closed_error());
                }
                // Once the connect has ended too, so that `state()` says Connected.
                if state.session.is_some() && !state.connecting {
                    return Ok(());
                }
                if state.connects_ended != connects_before {
                    // The connect this request waited for failed.
                    if let Some(failure) = &state.last_connect_failure {
                        return Err(failure.clone().context("lazy connect failed"));
                    }
                }
                if !state.lazy_connect_running {
                    state.lazy_connect_running = true;
                    drop(state);
                    self.start_lazy_connect();
                    continue;
                }
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(timed_out(self.timeout_of(opts).unwrap_or_default()));
            }
            self.changes.wait(seen, deadline);
        }
    }

    /// Runs `connect` on a thread of its own, so that every request waiting for it, the one
    /// that started it included, keeps its own timeout and cancel; a request that gives up
    /// leaves the connect running for the next request. Failing a thread, runs it here.
    fn start_lazy_connect(&self) {
        let Some(core) = self.me.upgrade() else {
            return;
        };
        let connect = move || {
            let _ = core.connect();
            core.lock().lazy_connect_running = false;
            core.changes.notify();
        };
        let inline = Arc::new(Mutex::new(Some(connect)));
        let on_thread = inline.clone();
        let spawned = spawn(
            "mcpc-lazy-connect",
            move || {
                if let Some(connect) = lock(&on_thread).take() {
                    connect()
                }
            },
            |_| {},
        );
        if spawned.is_err() {
            if let Some(connect) = lock(&inline).take() {
                connect()
            }
        }
    }
}

fn not_connected() -> Error {
    Error::new(Status::NotConnected, "not connected: call connect first")
}

fn timed_out(timeout: Duration) -> Error {
    let reason = format!("timed out after {} ms", timeout.as_millis());
    Error {
        message: format!("{reason} waiting for the lazy connect"),
        cancel_reason: Some(reason),
        ..Error::new(Status::Timeout, "")
    }
}
