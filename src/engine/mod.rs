//! The engine: one connection's calls in flight. A caller's thread sends its request and blocks
//! on its own `Call` until the first outcome (response, error, cancel, timeout, close) decides
//! it. Cancel notices and answers to server requests go out through one dispatcher thread, so
//! neither a cancelling thread nor the reader thread ever waits for a write.

pub mod call;
pub mod router;

use crate::cancellation::CancellationToken;
use crate::error::{Error, Result, Status};
use crate::handlers::LogHandler;
use crate::protocol::jsonrpc;
use crate::transport::{Inbound, OutgoingRequest, SendBoundary, Transport};
use call::{Call, Outcome, Outgoing, WireCancel};
use crossbeam_channel::{select, Receiver, Sender};
use router::{NotificationHandler, Router, RouterStats};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How one call is made.
#[derive(Default, Clone, Copy)]
pub struct CallOptions<'a> {
    pub cancellation: Option<&'a CancellationToken>,
    pub timeout: Option<Duration>,
    /// False for `initialize` and the discovery probe, which are never cancelled on the wire.
    pub cancel_on_wire: bool,
}

pub struct Connection {
    router: Arc<Router>,
    transport: Arc<dyn Transport>,
    next_id: AtomicI64,
    closed: AtomicBool,
    stop_dispatcher: Sender<()>,
    dispatcher: Mutex<Option<JoinHandle<()>>>,
}

impl Connection {
    /// Builds the router, lets `make_transport` connect to the server with it, and starts the
    /// dispatcher thread.
    pub fn open(
        (notifications, log): (Option<NotificationHandler>, Option<LogHandler>),
        make_transport: impl FnOnce(Arc<dyn Inbound>) -> Result<Arc<dyn Transport>>,
    ) -> Result<Connection> {
        let (outbound_tx, outbound_rx) = crossbeam_channel::unbounded();
        let router = Arc::new(Router::new(outbound_tx, notifications, log));
        let transport = make_transport(router.clone())?;
        let (stop_tx, stop_rx) = crossbeam_channel::bounded(1);
        let dispatcher = {
            let transport = transport.clone();
            std::thread::Builder::new()
                .name("mcpc-dispatch".into())
                .spawn(move || dispatch(outbound_rx, stop_rx, transport))
                .map_err(|e| Error::transport(format!("cannot start a thread: {e}")))?
        };
        Ok(Connection {
            router,
            transport,
            next_id: AtomicI64::new(1),
            closed: AtomicBool::new(false),
            stop_dispatcher: stop_tx,
            dispatcher: Mutex::new(Some(dispatcher)),
        })
    }

    /// Sends a request and blocks until its outcome. See the module docs.
    pub fn call(&self, method: &str, params: Option<&Value>, opts: CallOptions) -> Result<Value> {
        if let Some(token) = opts.cancellation {
            if token.is_cancelled() {
                // Nothing is sent at all: no request, no notice.
                return Err(cancelled_error(None, token.reason()));
            }
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let wire = match opts.cancel_on_wire {
            true => self.transport.wire_cancel(),
            false => WireCancel::Silent,
        };
        let call = Arc::new(Call::new(id, wire, self.router.outbound()));
        self.router.register(call.clone())?;
        let hook = opts.cancellation.and_then(|token| {
            let call = call.clone();
            token.on_cancel(move |reason| {
                call.cancel(reason, false);
            })
        });

        // A cancel that won before we wrote anything means the request is never sent.
        let sent = !call.is_finished();
        if sent {
            let boundary = {
                let call = call.clone();
                SendBoundary::new(move || call.mark_sent())
            };
            let frame = jsonrpc::encode_request(id, method, params);
            let request = OutgoingRequest {
                id,
                frame,
                sent: boundary,
            };
            if let Err(error) = self.transport.send_request(request) {
                call.finish(Outcome::Failed(error));
            }
        }

        let deadline = opts.timeout.map(|t| Instant::now() + t);
        let outcome = call.wait(deadline).unwrap_or_else(|| {
            // The timeout is a cancel with a reason; a response that beat it still wins.
            let timeout = opts.timeout.unwrap_or_default();
            call.cancel(Some(&timeout_reason(timeout)), true);
            call.wait(None)
                .expect("a call has an outcome once cancelled")
        });

        self.router.unregister(id);
        if let (Some(token), Some(hook)) = (opts.cancellation, hook) {
            token.off_cancel(hook);
        }
        let request_id = sent.then_some(id);
        match outcome {
            Outcome::Response(frame) => {
                jsonrpc::into_result(frame).map_err(|e| e.with_request_id(request_id))
            }
            Outcome::Failed(error) => Err(error.with_request_id(request_id)),
            Outcome::Cancelled { reason, timed_out } => Err(if timed_out {
                timeout_error(request_id, reason)
            } else {
                cancelled_error(request_id, reason)
            }),
        }
    }

    /// Sends a notification from the caller's thread.
    pub fn notify(&self, method: &str, params: Option<&Value>) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::new(Status::Closed, "client is closed"));
        }
        self.transport
            .send_notification(&jsonrpc::encode_notification(method, params))
    }

    /// Tells the transport which era and version the connection settled on.
    pub fn negotiated(&self, protocol_version: &str, modern: bool) {
        self.transport.negotiated(protocol_version, modern);
    }

    pub fn stats(&self) -> RouterStats {
        self.router.stats()
    }

    /// Ends every pending call with `error` at once, then shuts the transport down.
    /// Safe to call more than once and from any thread.
    pub fn close(&self, error: Error) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        self.router.fail_all(error, true);
        self.transport.close();
        let _ = self.stop_dispatcher.send(());
        let handle = self
            .dispatcher
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(handle) = handle {
            let _ = handle.join();
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.close(Error::new(Status::Closed, "client closed"));
    }
}

/// The dispatcher thread: writes queued frames (cancel notices, answers) and drops abandoned
/// exchanges, in order.
fn dispatch(queue: Receiver<Outgoing>, stop: Receiver<()>, transport: Arc<dyn Transport>) {
    loop {
        select! {
            recv(queue) -> outgoing => match outgoing {
                // A failed write means the connection is going away; the reader reports that.
                Ok(Outgoing::Frame(frame)) => { let _ = transport.send_notification(&frame); }
                Ok(Outgoing::Abandon(id)) => transport.abandon(id),
                Err(_) => return,
            },
            recv(stop) -> _ => return,
        }
    }
}

fn timeout_reason(timeout: Duration) -> String {
    format!("timed out after {} ms", timeout.as_millis())
}

fn cancelled_error(request_id: Option<i64>, reason: Option<String>) -> Error {
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

fn timeout_error(request_id: Option<i64>, reason: Option<String>) -> Error {
    Error {
        request_id,
        message: format!("request {}", reason.as_deref().unwrap_or("timed out")),
        cancel_reason: reason,
        ..Error::new(Status::Timeout, "")
    }
}
