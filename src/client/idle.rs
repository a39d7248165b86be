//! Idle shutdown: with [`ClientOptions::idle_shutdown`](super::ClientOptions), a stdio server
//! that has had no request for that long (none in flight, no listen open) is stopped as
//! `close` stops one (stdin closed, a grace period, SIGTERM, SIGKILL), and the next request
//! starts it again, as a lazy connect does (`lazy.rs`).
//!
//! No thread per client: each client counts its requests in flight, and when the count falls
//! to zero (or a connect ends) it arms one process-wide timer, served by a single thread
//! started with the first armed client. When a client's time comes the timer looks at it: still
//! idle, its server is stopped (on a short-lived thread, so the timer never waits for the
//! connection's callbacks; the server's exit is left to the reactor, as with
//! `StdioConfig::close_in_background`); busy since, it is armed again for the new time. A
//! client is in the timer's list at most once, and held weakly, so the timer never keeps a
//! client alive.
//!
//! The server is stopped in the background (the same bounded sequence as close: SIGTERM after
//! the grace, then SIGKILL, its group ended, reaped); close does not wait for it.

use super::{ClientCore, State};
use crate::error::{Error, Status};
use crate::handlers::LogLevel;
use crate::sync::{lock, spawn, wait_until};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::Instant;

/// A client's idleness, kept in its state (only with the option).
#[derive(Default)]
pub(super) struct Account {
    /// Requests in flight and listens open.
    busy: usize,
    /// When the client last became idle (a connect ended, the last request ended).
    idle_since: Option<Instant>,
    /// The client is in the timer's list.
    armed: bool,
}

/// One request in flight (or one listen open): while it lives the server is not idle.
pub(crate) struct Busy {
    core: Weak<ClientCore>,
}

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some(core) = self.core.upgrade() {
            let mut state = core.lock();
            state.idle.busy -= 1;
            if state.idle.busy == 0 {
                state.idle.idle_since = Some(Instant::now());
                core.arm(&mut state);
            }
        }
    }
}

impl ClientCore {
    /// Counts one request in flight, when idle shutdown is on.
    pub(super) fn busy(&self, state: &mut State) -> Option<Busy> {
        self.options.idle_shutdown?;
        state.idle.busy += 1;
        Some(Busy {
            core: self.me.clone(),
        })
    }

    /// A connect just made `state.session`: idle from now on.
    pub(super) fn idle_connected(&self, state: &mut State) {
        if self.options.idle_shutdown.is_some() {
            state.idle.idle_since = Some(Instant::now());
            self.arm(state);
        }
    }

    /// Puts the client in the timer's list for its idle deadline, once, for a stdio session.
    fn arm(&self, state: &mut State) {
        let (Some(idle), Some(since)) = (self.options.idle_shutdown, state.idle.idle_since) else {
            return;
        };
        let stdio = state.session.as_ref().is_some_and(|s| s.stdio.is_some());
        if state.idle.armed || !stdio || state.closed {
            return;
        }
        state.idle.armed = true;
        timer().arm(since + idle, self.me.clone());
    }

    /// The timer's call: stops the server if the client is still idle, or arms again.
    fn idle_check(&self) {
        let Some(idle) = self.options.idle_shutdown else {
            return;
        };
        let session = {
            let mut state = self.lock();
            state.idle.armed = false;
            if state.closed || state.connecting || state.idle.busy > 0 {
                // A request ending, or the connect, arms again.
                return;
            }
            let Some(since) = state.idle.idle_since else {
                return;
            };
            if Instant::now() < since + idle {
                self.arm(&mut state);
                return;
            }
            let live = state
                .session
                .as_ref()
                .is_some_and(|s| s.stdio.is_some() && s.connection.failure().is_none());
            if !live {
                return;
            }
            state.connect_on_request = true;
            state.session.take()
        };
        let Some(session) = session else { return };
        self.changes.notify();
        let core = self.me.clone();
        let message = format!(
            "the server had no request for {} ms: stopping it; the next request starts it again",
            idle.as_millis()
        );
        let stop = move || {
            if let Some(core) = core.upgrade() {
                core.log(LogLevel::Info, &message);
            }
            // Nobody waits for the exit of a server stopped for idleness.
            if let Some(stdio) = &session.stdio {
                stdio.end_in_background();
            }
            session.connection.close(Error::new(
                Status::NotConnected,
                "the server was stopped for idleness",
            ));
        };
        // On a short-lived thread of its own, so the timer never waits for the connection's
        // callbacks to drain; failing that, here.
        let inline = Arc::new(Mutex::new(Some(stop)));
        let on_thread = inline.clone();
        let spawned = spawn(
            "mcpc-idle-stop",
            move || {
                if let Some(stop) = lock(&on_thread).take() {
                    stop()
                }
            },
            |_| {},
        );
        if spawned.is_err() {
            if let Some(stop) = lock(&inline).take() {
                stop()
            }
        }
    }
}

/// The process-wide idle timer.
struct Timer {
    armed: Mutex<Armed>,
    changed: Condvar,
}

#[derive(Default)]
struct Armed {
    clients: Vec<(Instant, Weak<ClientCore>)>,
    thread_started: bool,
}

fn timer() -> &'static Timer {
    static TIMER: OnceLock<Timer> = OnceLock::new();
    TIMER.get_or_init(|| Timer {
        armed: Mutex::default(),
        changed: Condvar::new(),
    })
}

impl Timer {
    fn arm(&'static self, at: Instant, client: Weak<ClientCore>) {
        let mut armed = lock(&self.armed);
        armed.clients.push((at, client));
        self.changed.notify_all();
        if !armed.thread_started {
            // A thread that cannot start is tried again by the next arm.
            armed.thread_started = spawn("mcpc-idle-timer", || self.run(), |_| {}).is_ok();
        }
    }

    /// Checks each client whose time has come, with no lock of the timer held.
    fn run(&self) {
        loop {
            let due = {
                let mut armed = lock(&self.armed);
                loop {
                    let now = Instant::now();
                    if armed.clients.iter().any(|(at, _)| *at <= now) {
                        break;
                    }
                    let next = armed.clients.iter().map(|(at, _)| *at).min();
                    armed = match wait_until(&self.changed, armed, next) {
                        Some(armed) => armed,
                        None => lock(&self.armed),
                    };
                }
                let now = Instant::now();
                let (due, later) = armed.clients.drain(..).partition(|(at, _)| *at <= now);
                armed.clients = later;
                due
            };
            for (_, client) in due {
                if let Some(client) = client.upgrade() {
                    client.idle_check();
                }
            }
        }
    }
}
