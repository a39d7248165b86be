//! The wire trace: every JSON-RPC frame in and out, for debugging. Off by default, and then
//! it costs nothing: the transport and its inbound sink are wrapped only when the host set
//! `Callbacks::on_trace`.
//!
//! Frames are recorded where they cross the transport: a request when the transport claims it
//! for the wire (one withdrawn before that is not traced, as it is never written), a
//! notification or answer when it is handed over, and what arrives once it has been parsed
//! (so it is re-encoded: the keys may come in another order than the server wrote them).
//! Only JSON-RPC frames appear: never an HTTP header, so no credential the host put in one.
//!
//! The host's callback runs on a thread of the trace's own, in the order the frames were
//! recorded, never while the library holds a lock, so it may call the client. Recording only
//! queues the frame; a queue of `QUEUE_LIMIT` frames or `QUEUE_BYTES_LIMIT` bytes waiting is
//! full (one frame of any size gets in when none waits), and what comes then is dropped and
//! counted; the library log says how many, once the trace thread catches up.
//! Close lets the frames queued before it reach the host (within the callbacks' 2 s), then no
//! trace callback starts.

use crate::engine::gate::Gate;
use crate::error::Result;
use crate::handlers::{LogHandler, LogLevel, TraceDirection, TraceFrame, TraceHandler};
use crate::protocol::jsonrpc::Incoming;
use crate::sync::{lock, spawn, wait_until};
use crate::transport::{Inbound, OutgoingRequest, Transport, Waker, WireCancel};
use crossbeam_channel::{Receiver, Sender, TrySendError};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::ThreadId;
use std::time::Instant;

/// The most frames, and bytes of frames, waiting for the host's trace callback.
use crate::engine::limits::{
    MAX_QUEUED_TRACE_BYTES as QUEUE_BYTES_LIMIT, MAX_QUEUED_TRACE_FRAMES as QUEUE_LIMIT,
};

struct Queued {
    direction: TraceDirection,
    json: String,
}

/// One client's trace: the queue and the thread that empties it into the host's callback.
pub(super) struct Tracer {
    queue: Sender<Queued>,
    dropped: Arc<AtomicU64>,
    /// The bytes of the frames in the queue.
    queued_bytes: Arc<AtomicUsize>,
    /// Frames queued so far, and (in `progress`) those the trace thread has finished with: close
    /// lets the queued ones reach the host first, as it does for other callbacks.
    queued: AtomicU64,
    progress: Arc<Progress>,
}

#[derive(Default)]
struct Progress {
    done: Mutex<u64>,
    changed: Condvar,
    /// The trace thread: a trace callback that closes the client is not waited for.
    thread: OnceLock<ThreadId>,
}

impl Tracer {
    /// Starts the trace thread; it ends when the client (the last sender) goes.
    pub fn start(
        handler: TraceHandler,
        log: Option<LogHandler>,
        transport: &'static str,
        gate: Arc<Gate>,
    ) -> Option<Arc<Self>> {
        let (queue, frames) = crossbeam_channel::bounded(QUEUE_LIMIT);
        let dropped = Arc::new(AtomicU64::new(0));
        let queued_bytes = Arc::new(AtomicUsize::new(0));
        let progress = Arc::new(Progress::default());
        let tracer = Arc::new(Tracer {
            queue,
            dropped: dropped.clone(),
            queued_bytes: queued_bytes.clone(),
            queued: AtomicU64::new(0),
            progress: progress.clone(),
        });
        let sink = Sink {
            handler,
            log,
            transport,
            gate,
            dropped,
            queued_bytes,
            progress,
        };
        let thread = spawn("mcpc-trace", move || sink.deliver(frames), |_| {});
        thread.ok().map(|_| tracer)
    }

    /// Waits (until `deadline`) for the trace thread to deliver the frames queued so far.
    pub fn drain(&self, deadline: Instant) {
        if self.progress.thread.get() == Some(&std::thread::current().id()) {
            return;
        }
        let target = self.queued.load(Ordering::Acquire);
        let mut done = lock(&self.progress.done);
        while *done < target {
            match wait_until(&self.progress.changed, done, Some(deadline)) {
                Some(next) => done = next,
                None => return,
            }
        }
    }

    fn record(&self, direction: TraceDirection, json: String) {
        let bytes = json.len();
        // Room in bytes: always when nothing waits, else up to the limit.
        let room = self
            .queued_bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |queued| {
                let fits = queued == 0 || queued.saturating_add(bytes) <= QUEUE_BYTES_LIMIT;
                fits.then(|| queued.saturating_add(bytes))
            });
        if room.is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        // Counted first: a frame delivered at once must not find the count behind it.
        self.queued.fetch_add(1, Ordering::AcqRel);
        match self.queue.try_send(Queued { direction, json }) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.queued.fetch_sub(1, Ordering::AcqRel);
                self.queued_bytes.fetch_sub(bytes, Ordering::AcqRel);
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    pub fn inbound(self: &Arc<Self>, inner: Arc<dyn Inbound>) -> Arc<dyn Inbound> {
        Arc::new(TracedInbound {
            inner,
            tracer: self.clone(),
        })
    }

    pub fn transport(self: &Arc<Self>, inner: Arc<dyn Transport>) -> Arc<dyn Transport> {
        Arc::new(TracedTransport {
            inner,
            tracer: self.clone(),
        })
    }
}

/// The trace thread's end: the host's callback, and the library log for lost frames.
struct Sink {
    handler: TraceHandler,
    log: Option<LogHandler>,
    transport: &'static str,
    gate: Arc<Gate>,
    dropped: Arc<AtomicU64>,
    queued_bytes: Arc<AtomicUsize>,
    progress: Arc<Progress>,
}

impl Sink {
    fn deliver(self, frames: Receiver<Queued>) {
        let _ = self.progress.thread.set(std::thread::current().id());
        let mut reported = 0;
        for frame in frames {
            self.queued_bytes
                .fetch_sub(frame.json.len(), Ordering::AcqRel);
            let ran = self.gate.run(|| {
                (self.handler)(&TraceFrame {
                    direction: frame.direction,
                    transport: self.transport,
                    json: &frame.json,
                });
                let dropped = self.dropped.load(Ordering::Relaxed);
                if let (true, Some(log)) = (dropped > reported, &self.log) {
                    reported = dropped;
                    let message = format!("wire trace: {dropped} frames dropped so far (the trace callback fell behind)");
                    log(LogLevel::Warning, &message);
                }
            });
            *lock(&self.progress.done) += 1;
            self.progress.changed.notify_all();
            if ran.is_none() {
                return; // the client is closing: no callback starts any more
            }
        }
    }
}

struct TracedInbound {
    inner: Arc<dyn Inbound>,
    tracer: Arc<Tracer>,
}

impl Inbound for TracedInbound {
    fn message(&self, message: Incoming) {
        if let Some(text) = encode(&message) {
            self.tracer.record(TraceDirection::In, text);
        }
        self.inner.message(message);
    }
    fn bad_frame(&self, error: crate::error::Error, fatal_for_pending: bool) {
        self.inner.bad_frame(error, fatal_for_pending);
    }
    fn request_failed(&self, id: i64, error: crate::error::Error) {
        self.inner.request_failed(id, error);
    }
    fn closed(&self, error: crate::error::Error) {
        self.inner.closed(error);
    }
}

/// The JSON text of a parsed message; `None` for one that is not JSON-RPC.
fn encode(message: &Incoming) -> Option<String> {
    let value = match message {
        Incoming::Response { frame, .. } => return Some(frame.to_string()),
        Incoming::Answer { id, reply } => {
            return Some(format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{}}}"#,
                reply.text()
            ))
        }
        Incoming::Request { id, method, params } => with_params(
            json!({"jsonrpc": "2.0", "id": id, "method": method}),
            params,
        ),
        Incoming::Notification { method, params } => {
            with_params(json!({"jsonrpc": "2.0", "method": method}), params)
        }
        Incoming::Invalid(_) => return None,
    };
    Some(value.to_string())
}

fn with_params(mut message: Value, params: &Option<Value>) -> Value {
    if let Some(params) = params {
        message["params"] = params.clone();
    }
    message
}

struct TracedTransport {
    inner: Arc<dyn Transport>,
    tracer: Arc<Tracer>,
}

impl Transport for TracedTransport {
    fn send_request(&self, mut request: OutgoingRequest) -> Result<()> {
        let tracer = self.tracer.clone();
        let frame = Mutex::new(Some(request.frame.clone()));
        request.sent = request.sent.on_claimed(move || {
            if let Some(frame) = crate::sync::lock(&frame).take() {
                tracer.record(TraceDirection::Out, frame);
            }
        });
        self.inner.send_request(request)
    }
    fn send_notification(&self, frame: &str) -> Result<()> {
        self.tracer.record(TraceDirection::Out, frame.to_owned());
        self.inner.send_notification(frame)
    }
    fn wire_cancel(&self) -> WireCancel {
        self.inner.wire_cancel()
    }
    fn abandon(&self, id: i64) {
        self.inner.abandon(id)
    }
    fn negotiated(&self, protocol_version: &str, modern: bool) {
        self.inner.negotiated(protocol_version, modern)
    }
    fn handshake_only(&self) -> bool {
        self.inner.handshake_only()
    }
    fn read_here(&self, done: &dyn Fn() -> bool, deadline: Option<Instant>, alone: bool) -> bool {
        self.inner.read_here(done, deadline, alone)
    }
    fn reader_waker(&self, id: i64) -> Option<Waker> {
        self.inner.reader_waker(id)
    }
    fn close(&self) {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_queue_is_bounded_in_bytes() {
        let (release_tx, release) = crossbeam_channel::bounded::<()>(0);
        let handler: TraceHandler = Arc::new(move |_: &TraceFrame| {
            let _ = release.recv();
        });
        let tracer = Tracer::start(handler, None, "test", Arc::default()).unwrap();
        let frame = "x".repeat(QUEUE_BYTES_LIMIT / 4);
        for _ in 0..8 {
            tracer.record(TraceDirection::In, frame.clone());
        }
        // The first frame may be running (its handler blocked) or waiting: four more fit at
        // most, the rest are dropped.
        let dropped = tracer.dropped.load(Ordering::Relaxed);
        assert!((3..=4).contains(&dropped), "{dropped} dropped");
        drop(release_tx);
        tracer.drain(Instant::now() + Duration::from_secs(10));
        assert_eq!(tracer.queued_bytes.load(Ordering::Relaxed), 0);
        // An empty queue takes one frame of any size.
        tracer.record(TraceDirection::In, "x".repeat(2 * QUEUE_BYTES_LIMIT));
        assert_eq!(tracer.dropped.load(Ordering::Relaxed), dropped);
    }
}
