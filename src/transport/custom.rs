//! Custom transports: the host supplies a blocking round trip (send a request, return its
//! response), and we run each round trip on a worker thread (the pool of `super::workers`, as
//! HTTP does) so the caller stays free to be woken by a cancel. The C vtable in
//! `ffi::transport` is one implementation.

use super::workers::Workers;
use super::{Inbound, OutgoingRequest, Transport};
use crate::error::{Error, Result};
use crate::protocol::jsonrpc::{self, Incoming};
use crate::transport::THREAD_WAIT_ON_CLOSE;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// What a host implements to carry frames its own way.
pub trait BlockingTransport: Send + Sync + 'static {
    /// Sends `request` and returns the response frame. Calls `on_sent` once the bytes are on
    /// the wire; if it never does, the send boundary is taken to be the return of this call.
    fn round_trip(&self, request: &str, on_sent: &mut dyn FnMut()) -> Result<String>;
    /// Sends a notification; no answer is expected.
    fn notify(&self, frame: &str) -> Result<()>;
    /// Ends the connection. Round trips still running must return soon after.
    fn close(&self);
}

pub struct CustomTransport<T: BlockingTransport> {
    inner: Arc<T>,
    inbound: Arc<dyn Inbound>,
    workers: Arc<Workers>,
    closed: AtomicBool,
}

impl<T: BlockingTransport> CustomTransport<T> {
    pub fn new(inner: Arc<T>, inbound: Arc<dyn Inbound>) -> Self {
        CustomTransport {
            inner,
            inbound,
            workers: Arc::new(Workers::new("mcpc-custom")),
            closed: AtomicBool::new(false),
        }
    }
}

impl<T: BlockingTransport> Transport for CustomTransport<T> {
    fn send_request(&self, request: OutgoingRequest) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::new(crate::Status::Closed, "the transport is closed"));
        }
        let (inner, inbound) = (self.inner.clone(), self.inbound.clone());
        let id = request.id;
        // A panic (in the host's transport or ours) fails this call rather than leaving it
        // waiting forever.
        let failed = self.inbound.clone();
        self.workers.run(
            move || round_trip(&*inner, &*inbound, request),
            move |error| failed.request_failed(id, error),
        )
    }

    fn send_notification(&self, frame: &str) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::new(crate::Status::Closed, "the transport is closed"));
        }
        self.inner.notify(frame)
    }

    fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        self.inner.close();
        // The host's round trips must return soon after its close (the trait's contract);
        // one that does not is let go, so that close keeps its bound.
        self.workers.wait(Some(THREAD_WAIT_ON_CLOSE));
        self.workers.stop_idle();
    }
}

fn round_trip(inner: &dyn BlockingTransport, inbound: &dyn Inbound, request: OutgoingRequest) {
    let OutgoingRequest {
        id, frame, sent, ..
    } = request;
    if !sent.start() {
        // Its call has ended already: the host never sees it.
        sent.never_sent();
        return;
    }
    let mut boundary = Some(sent);
    let reply = inner.round_trip(&frame, &mut || {
        if let Some(sent) = boundary.take() {
            sent.signal();
        }
    });
    // The fallback boundary: the round trip is over.
    drop(boundary);
    match reply.and_then(|text| parse(&text)) {
        Ok(message @ Incoming::Response { .. }) => inbound.message(message),
        Ok(_) => inbound.request_failed(
            id,
            Error::protocol("the transport returned a frame that is not a response"),
        ),
        Err(error) => inbound.request_failed(id, error),
    }
    // A response with another id matched nothing; this call must not wait forever.
    inbound.request_failed(
        id,
        Error::protocol(format!(
            "the transport returned no response for request {id}"
        )),
    );
}

fn parse(text: &str) -> Result<Incoming> {
    serde_json::from_str(text)
        .map(jsonrpc::classify)
        .map_err(|e| Error::protocol(format!("the transport returned invalid JSON: {e}")))
}
