//! The in-flight table: routes each response to the call waiting for it, by id, and answers
//! what the server asks of us. One router per connection; transports feed it through `Inbound`.

use super::call::{Call, Outbound, Outcome, Outgoing};
use crate::error::Error;
use crate::handlers::{LogHandler, LogLevel};
use crate::protocol::jsonrpc::{self, Incoming};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Receives server notifications (method, params). Runs on the transport's reader thread.
pub type NotificationHandler = Arc<dyn Fn(&str, Option<&Value>) + Send + Sync>;

pub struct Router {
    table: Mutex<Table>,
    outbound: Outbound,
    notifications: Option<NotificationHandler>,
    log: Option<LogHandler>,
    counters: Counters,
}

#[derive(Default)]
struct Table {
    calls: HashMap<i64, Arc<Call>>,
    /// Set once the connection is gone; every later call fails with it.
    terminal: Option<Error>,
    last_bad_frame: Option<String>,
}

/// What the router has dropped, for diagnostics and tests.
#[derive(Default)]
struct Counters {
    unmatched_responses: AtomicU64,
    bad_frames: AtomicU64,
}

/// A snapshot of the router's counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RouterStats {
    /// Responses that matched no waiting call (late answers to cancelled or timed-out calls,
    /// duplicates, ids never sent). They are dropped, never given to another call.
    pub unmatched_responses: u64,
    /// Frames skipped because they were not JSON-RPC, not JSON, or too long.
    pub bad_frames: u64,
    pub last_bad_frame: Option<String>,
}

impl Router {
    pub fn new(
        outbound: Outbound,
        notifications: Option<NotificationHandler>,
        log: Option<LogHandler>,
    ) -> Self {
        Router {
            table: Mutex::default(),
            outbound,
            notifications,
            log,
            counters: Counters::default(),
        }
    }

    pub fn outbound(&self) -> Outbound {
        self.outbound.clone()
    }

    /// Adds a call to the table, unless the connection is already gone.
    pub fn register(&self, call: Arc<Call>) -> Result<(), Error> {
        let mut table = self.lock();
        if let Some(error) = &table.terminal {
            return Err(error.clone());
        }
        table.calls.insert(call.id, call);
        Ok(())
    }

    pub fn unregister(&self, id: i64) {
        self.lock().calls.remove(&id);
    }

    /// Ends every pending call with `error`; with `terminal`, every later call too.
    pub fn fail_all(&self, error: Error, terminal: bool) {
        let calls: Vec<Arc<Call>> = {
            let mut table = self.lock();
            if table.terminal.is_some() {
                return;
            }
            if terminal {
                table.terminal = Some(error.clone());
            }
            table.calls.values().cloned().collect()
        };
        // Finish outside the table lock: waking a caller must not wait on the table.
        for call in calls {
            call.finish(Outcome::Failed(error.clone()));
        }
    }

    pub fn stats(&self) -> RouterStats {
        RouterStats {
            unmatched_responses: self.counters.unmatched_responses.load(Ordering::Relaxed),
            bad_frames: self.counters.bad_frames.load(Ordering::Relaxed),
            last_bad_frame: self.lock().last_bad_frame.clone(),
        }
    }

    fn route_response(&self, id: Value, frame: Value) {
        let call = id
            .as_i64()
            .and_then(|id| self.lock().calls.get(&id).cloned());
        let delivered = call.is_some_and(|call| call.finish(Outcome::Response(frame)));
        if !delivered {
            self.counters
                .unmatched_responses
                .fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Server-to-client requests are always answered: `ping` by us, the rest with -32601
    /// until the host registers handlers. The answer goes through the outbound queue so the
    /// reader thread never blocks on a write.
    fn answer_request(&self, id: Value, method: &str) {
        let frame = if method == crate::protocol::methods::PING {
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#)
        } else {
            let message = format!("Method not found: {method}");
            jsonrpc::encode_error_response(&id, jsonrpc::METHOD_NOT_FOUND, &message)
        };
        let _ = self.outbound.send(Outgoing::Frame(frame));
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl crate::transport::Inbound for Router {
    fn message(&self, message: Incoming) {
        match message {
            Incoming::Response { id, frame } => self.route_response(id, frame),
            Incoming::Request { id, method, .. } => self.answer_request(id, &method),
            Incoming::Notification { method, params } => {
                if let Some(handler) = &self.notifications {
                    handler(&method, params.as_ref());
                }
            }
            Incoming::Invalid(why) => {
                self.bad_frame(Error::protocol(format!("skipped frame: {why}")), false)
            }
        }
    }

    fn bad_frame(&self, error: Error, fatal_for_pending: bool) {
        self.counters.bad_frames.fetch_add(1, Ordering::Relaxed);
        if let Some(log) = &self.log {
            log(LogLevel::Warning, &error.message);
        }
        self.lock().last_bad_frame = Some(error.message.clone());
        if fatal_for_pending {
            self.fail_all(error, false);
        }
    }

    fn request_failed(&self, id: i64, error: Error) {
        let call = self.lock().calls.get(&id).cloned();
        if let Some(call) = call {
            call.finish(Outcome::Failed(error));
        }
    }

    fn closed(&self, error: Error) {
        self.fail_all(error, true);
    }
}
