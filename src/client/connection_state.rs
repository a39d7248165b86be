//! Where a client stands, as `Client::state` reports it, and the host's connection-state
//! callback, told of each transition in order.

use crate::engine::callback_queue::CallbackQueue;
use crate::engine::gate::Gate;
use crate::handlers::LogHandler;
use crate::sync::lock;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The state of a client's connection. The numbers are part of the C ABI.
// C knows it as `mcp_connection_state`: cbindgen.toml renames it.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionState {
    /// `connect` has not been called, or the last connect failed, or the server was stopped
    /// for idleness (the idle shutdown option).
    NotConnected = 0,
    /// A `connect` is under way (starting the server, handshake or discovery).
    Connecting = 1,
    /// Connected: calls go to the server.
    Connected = 2,
    /// The connection failed after connecting (the stdio server exited, the HTTP server
    /// ended the session), or connecting again after that failed: calls fail, and the next
    /// `connect` (or, with a reconnect policy, the next request) starts a new connection.
    Failed = 3,
    /// `close` was called: everything returns CLOSED from now on.
    Closed = 4,
    /// A connect is under way that replaces a failed connection.
    Reconnecting = 5,
}

/// Told each transition of a client's connection, on the client's state-callback thread, in
/// the order they happened; never while the library holds a lock.
pub type StateHandler = Arc<dyn Fn(ConnectionState) + Send + Sync>;

/// Tells the host's state callback of each transition, in order, on a strand of the shared
/// pool (a callback queue of its own), so that a transition found on a reader thread or under
/// the client's lock never runs host code there.
pub(super) struct StateReports {
    target: Option<(StateHandler, CallbackQueue)>,
    now: Mutex<Now>,
}

struct Now {
    reported: ConnectionState,
    /// Numbers the connects: a failure is reported only for the connection of the current one.
    connect: u64,
}

impl StateReports {
    pub fn new(handler: Option<StateHandler>, gate: Arc<Gate>, log: Option<LogHandler>) -> Self {
        StateReports {
            target: handler.map(|handler| (handler, CallbackQueue::new(gate, log))),
            now: Mutex::new(Now {
                reported: ConnectionState::NotConnected,
                connect: 0,
            }),
        }
    }

    /// A connect begins: CONNECTING, or RECONNECTING when it replaces a failed connection
    /// (after FAILED, when that was not reported yet). Returns the connect's number.
    pub fn connecting(&self, replacing_failed: bool) -> u64 {
        let mut now = lock(&self.now);
        now.connect += 1;
        if replacing_failed {
            self.report(&mut now, ConnectionState::Failed);
            self.report(&mut now, ConnectionState::Reconnecting);
        } else {
            self.report(&mut now, ConnectionState::Connecting);
        }
        now.connect
    }

    /// `state` for the connection made by connect number `connect`, unless a newer connect
    /// has begun since (a late failure of a replaced connection says nothing).
    pub fn of(&self, connect: u64, state: ConnectionState) {
        let mut now = lock(&self.now);
        if now.connect == connect {
            self.report(&mut now, state);
        }
    }

    /// The current connection failed.
    pub fn failed(&self) {
        let mut now = lock(&self.now);
        self.report(&mut now, ConnectionState::Failed);
    }

    /// The client is closing: CLOSED, the last report (the failure of the connection that
    /// close ends is not one).
    pub fn closed(&self) {
        let mut now = lock(&self.now);
        self.report(&mut now, ConnectionState::Closed);
    }

    /// Waits until `deadline` for the reports queued to run (before the gate shuts).
    pub fn drain(&self, deadline: Instant) {
        if let Some((_, thread)) = &self.target {
            thread.drain(deadline);
        }
    }

    /// After the gate shut: the queue takes no more.
    pub fn stop(&self, deadline: Instant) {
        if let Some((_, thread)) = &self.target {
            thread.stop(deadline);
        }
    }

    /// Queues the callback for `state` if it is a change (never after CLOSED). Called under
    /// `now`'s lock so that reports queue in the order the transitions happened; queueing
    /// never runs host code.
    fn report(&self, now: &mut Now, state: ConnectionState) {
        if now.reported == state || now.reported == ConnectionState::Closed {
            return;
        }
        now.reported = state;
        if let Some((handler, thread)) = &self.target {
            let handler = handler.clone();
            // Fails only after stop: the host then misses the report.
            let _ = thread.send(Box::new(move || handler(state)), 0);
        }
    }
}
