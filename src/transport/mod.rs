//! Transports move frames between the client and one server. They know nothing about calls,
//! tokens or timeouts: they write what they are given, signal the send boundary, and hand every
//! frame that arrives to the [`Inbound`] sink they were built with.
//!
//! Files: `stdio/` (a child process), `http/` (Streamable HTTP and the older HTTP+SSE),
//! `custom` (the host's own), `reactor/` (the process's one thread watching every stdio pipe),
//! `wake` (waking a thread blocked in a wait), `workers` (threads that run blocking exchanges).

pub mod custom;
pub mod http;
#[cfg(unix)]
pub(crate) mod reactor;
pub mod stdio;
#[cfg(unix)]
pub(crate) mod wake;
mod workers;

/// The completion queue's signal on Windows (`ffi::completion_queue`).
#[cfg(windows)]
pub(crate) use stdio::WindowsEvent;

use crate::error::{Error, Result};
use crate::protocol::jsonrpc::Incoming;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long close waits, after the transport is shut down, for each of the connection's own
/// threads (stdio reader and stderr, HTTP workers) and its queued work on the shared pool to
/// end; one still running then (a stderr callback that never returns, a write stuck in a TCP
/// connect) is let go. The transports own it; `mcpc::limits` lists it with the other bounds.
pub const THREAD_WAIT_ON_CLOSE: Duration = Duration::from_secs(1);

/// Runs `starts` (which only starts requests, never waits for the server) so that the
/// requests it sends leave together: on stdio, in one write once it returns (see
/// `stdin::coalesce_requests`); the other transports send each as they would anyway.
pub(crate) fn coalesce_requests<R>(starts: impl FnOnce() -> R) -> R {
    #[cfg(unix)]
    return stdio::stdin::coalesce_requests(starts);
    #[cfg(not(unix))]
    starts()
}

/// How the server learns that a call was cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireCancel {
    /// It does not: `initialize` and the discovery probe are never cancelled on the wire.
    Silent,
    /// `notifications/cancelled`, once the request is on the wire (stdio, legacy HTTP, custom).
    Notify,
    /// Abort the request's exchange; the server sees its stream close (modern HTTP). The
    /// transport's `abandon` runs on the thread that takes the cancel and never blocks.
    Abort,
}

/// Where a transport delivers what comes from the server. Implemented by the engine.
pub trait Inbound: Send + Sync {
    /// A well-formed JSON-RPC message.
    fn message(&self, message: Incoming);
    /// A frame that could not be used (not JSON, too long...). The stream goes on.
    /// `fatal_for_pending` is true when the frame may have been an answer we can no longer match,
    /// so the pending calls must fail rather than wait forever.
    fn bad_frame(&self, error: Error, fatal_for_pending: bool);
    /// One request failed in the transport (custom transports report this per request).
    fn request_failed(&self, id: i64, error: Error);
    /// The connection is gone: every pending and future call fails with `error`.
    fn closed(&self, error: Error);
}

/// The send boundary of one request: signalled once its bytes are handed to the wire.
///
/// Dropping it unsignalled counts as a signal. That is the fallback for transports that never
/// report the boundary: the latch opens when the request has finished sending or failed, never
/// earlier, so a cancel can never overtake its request (there is no timer). A transport that
/// knows not a byte of the request went out says so with [`SendBoundary::never_sent`].
pub struct SendBoundary {
    /// The call's side of the boundary: the call itself, shared (no allocation per request).
    hooks: Arc<dyn SendHooks>,
    /// `hooks.sent()` is still to run: cleared once it has, or when the request is never sent.
    armed: bool,
    on_claimed: Option<Box<dyn Fn() + Send + Sync>>,
}

/// What the engine does at a request's send boundary (implemented by its call).
pub trait SendHooks: Send + Sync {
    /// The transport is about to write the request's first byte: false once the call has
    /// ended without it (see [`SendBoundary::start`]).
    fn claim(&self) -> bool;
    /// The request is on the wire, or will never be (writing failed): a cancel of it may now
    /// be told to the server.
    fn sent(&self);
}

impl SendBoundary {
    pub fn new(hooks: Arc<dyn SendHooks>) -> Self {
        SendBoundary {
            hooks,
            armed: true,
            on_claimed: None,
        }
    }

    /// Also runs `hook` when the transport claims the request for the wire (at most once; the
    /// wire trace records the request there). It runs where the claim is made, maybe under a
    /// transport lock: it must only record, never wait.
    pub fn on_claimed(mut self, hook: impl Fn() + Send + Sync + 'static) -> Self {
        self.on_claimed = Some(Box::new(hook));
        self
    }

    /// Called by the transport just before it writes the request's first byte. False: the
    /// call has already ended and the engine withdrew the request, so the transport drops it
    /// unsent (and calls [`SendBoundary::never_sent`]); the caller was told it was never sent.
    /// True: the request is the wire's for good, the transport writes all of it, and a cancel
    /// of it is told to the server once it is written.
    pub fn start(&self) -> bool {
        let claimed = self.hooks.claim();
        if let (true, Some(hook)) = (claimed, &self.on_claimed) {
            hook();
        }
        claimed
    }

    pub fn signal(mut self) {
        self.fire();
    }

    /// Not a byte of the request was written, and none will be: there is no boundary, so a
    /// cancel of the request sends no notice.
    pub fn never_sent(mut self) {
        self.armed = false;
    }

    fn fire(&mut self) {
        if std::mem::take(&mut self.armed) {
            self.hooks.sent();
        }
    }
}

impl Drop for SendBoundary {
    fn drop(&mut self) {
        self.fire();
    }
}

/// Wakes a thread blocked reading for the engine (see [`Transport::read_here`]).
pub type Waker = Arc<dyn Fn() + Send + Sync>;

/// A request ready for the wire.
pub struct OutgoingRequest {
    pub id: i64,
    /// The encoded JSON-RPC request, without a trailing newline.
    pub frame: String,
    pub sent: SendBoundary,
    /// The sending thread waits for the outcome right after `send_request` returns, in
    /// [`Transport::read_here`] (a blocking call): a transport may leave the request's
    /// exchange for that thread to run there (HTTP), instead of handing it to a worker. False
    /// when nobody will call `read_here` for it.
    pub caller_reads: bool,
}

pub trait Transport: Send + Sync {
    /// Sends a request. The answer arrives later through [`Inbound`]. An error means the request
    /// was not sent (or not completely). A transport may return before the request is on the
    /// wire (stdio queues what the pipe cannot take yet): its boundary is signalled once it is,
    /// and a request whose call ended before its first byte went out may be dropped unsent.
    fn send_request(&self, request: OutgoingRequest) -> Result<()>;
    /// Sends a notification or an answer to a server request (a frame with no reply expected).
    fn send_notification(&self, frame: &str) -> Result<()>;
    /// How the server learns of a cancel on this transport (default: `notifications/cancelled`).
    fn wire_cancel(&self) -> WireCancel {
        WireCancel::Notify
    }
    /// Call `id` ended without its response (cancel, timeout): drop what the transport holds
    /// for it, such as its HTTP exchange. Called by the dispatcher (on the shared I/O pool), after any cancel
    /// notice for the call was written, and only for a request `send_request` was given and
    /// returned from (the engine decides; a request never handed over is never abandoned).
    /// With [`WireCancel::Abort`] it is called by the thread that takes the cancel (the
    /// caller's), so it must never block.
    fn abandon(&self, _id: i64) {}
    /// The connection's era is settled: `protocol_version` was negotiated (legacy) or adopted
    /// (modern). HTTP sends it as `MCP-Protocol-Version` from now on.
    fn negotiated(&self, _protocol_version: &str, _modern: bool) {}
    /// Whether this transport knows only the handshake era (HTTP+SSE): connecting then skips
    /// the discover probe, and the modern mode is refused.
    fn handshake_only(&self) -> bool {
        false
    }
    /// Lets a caller waiting for its response read it on its own thread, saving the hand-off
    /// from a reader thread (a thread wake-up and two context switches per call).
    ///
    /// `alone` says whether this caller's call is the only one in flight. When the transport
    /// lets it, the caller reads and routes frames until `done()` holds, the deadline passes
    /// or the connection ends, and this returns true. Otherwise it returns false at once (after
    /// making sure someone else reads) and the caller waits to be handed its outcome. While it
    /// reads, a cancel or close reaches it through [`Transport::reader_waker`].
    /// The default: never. HTTP runs the caller's own exchange here (see `http`), whatever
    /// `alone` says: each exchange has its own connection; it aborts the exchange at
    /// `deadline`, so it is given only a deadline that will not move (see `caller_reads`).
    fn read_here(
        &self,
        _done: &dyn Fn() -> bool,
        _deadline: Option<Instant>,
        _alone: bool,
    ) -> bool {
        false
    }
    /// Wakes the caller of call `id` while it reads in `read_here`, so it looks at `done()`
    /// again (HTTP: by aborting the exchange it runs there).
    fn reader_waker(&self, _id: i64) -> Option<Waker> {
        None
    }
    /// Ends the connection and releases its resources; after it returns, no thread of the
    /// transport is left running and no more frames arrive.
    fn close(&self);
}

/// How a message over a size limit says which option raises it, after "... limit of N bytes".
pub(crate) fn raise_limit_with(rust_option: &str) -> String {
    format!(
        " (raise it with {rust_option}; in C mcp_client_options_set_max_line_bytes, in Go \
         WithMaxLineBytes)"
    )
}
