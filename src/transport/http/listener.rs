//! The legacy era's standalone stream: a GET the server may use for what belongs to no call
//! (requests such as `roots/list`, notifications such as list changes). It is opened once the
//! session is initialized, opened again after the server's retry delay when the server ends it,
//! and given up after a 405 (the server offers none) or two failures in a row. Opening it waits
//! (briefly) for the server's answer to the first GET, so that what the server sends on it right
//! after the handshake (a request made while handling the first call) is not lost: servers
//! without an event store drop messages for a standalone stream that is not open yet.

use super::connector::Exchange;
use super::endpoint;
use super::exchange::{self, StreamEnd, StreamState};
use super::Shared;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::time::Duration;

const DEFAULT_RETRY: Duration = Duration::from_millis(1000);
const MIN_RETRY: Duration = Duration::from_millis(100);
const MAX_FAILURES: u32 = 2;
/// The longest `start` waits for the server to answer the first GET.
const OPEN_WAIT: Duration = Duration::from_secs(2);

/// How one GET went.
enum Round {
    /// The server ended the stream: open it again.
    Ended,
    /// No standalone stream here (405), or the session is gone.
    Refused,
    Failed,
}

/// Starts the listener on a worker thread, and waits until the server has answered its first GET
/// (at most OPEN_WAIT); close aborts it.
pub(super) fn start(shared: &Arc<Shared>) {
    let exchange = Exchange::new(None);
    {
        let mut listener = super::lock(&shared.listener);
        if listener.is_some() || shared.closed.load(Ordering::Acquire) {
            return;
        }
        *listener = Some(exchange.clone());
    }
    let (opened, answered) = mpsc::channel();
    let worker = {
        let shared = shared.clone();
        move || listen(&shared, &exchange, opened)
    };
    // Without a thread there is no standalone stream: calls work all the same.
    // A panic ends the stream (the sender is dropped, so the wait below ends too).
    if shared.workers.run(worker, |_| ()).is_ok() {
        // Whatever the answer (or none in time), the session goes on.
        let _ = answered.recv_timeout(OPEN_WAIT);
    }
}

fn listen(shared: &Shared, exchange: &Arc<Exchange>, opened: mpsc::Sender<()>) {
    let _entered = exchange.enter();
    let mut state = StreamState::default();
    let mut failures = 0;
    let mut opened = Some(opened);
    while !exchange.is_aborted() {
        match round(shared, &mut state, &mut opened) {
            Round::Ended => failures = 0,
            Round::Refused => return,
            Round::Failed => {
                failures += 1;
                if failures == MAX_FAILURES {
                    return;
                }
            }
        }
        let delay = state.retry.unwrap_or(DEFAULT_RETRY).max(MIN_RETRY);
        if !exchange.sleep(delay) {
            return;
        }
    }
}

/// One GET; `opened` is told once the server has answered it (or it failed).
fn round(shared: &Shared, state: &mut StreamState, opened: &mut Option<mpsc::Sender<()>>) -> Round {
    let response = endpoint::open_stream(shared, state.last_event_id.as_deref());
    if let Some(opened) = opened.take() {
        let _ = opened.send(());
    }
    let Ok(response) = response else {
        return Round::Failed;
    };
    match response.status().as_u16() {
        200..=299 => {}
        // 404: the server forgot the session; calls will say so.
        404 | 405 => return Round::Refused,
        _ => return Round::Failed,
    }
    let is_sse = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"));
    if !is_sse {
        return Round::Failed;
    }
    let deliver = |message| shared.inbound.message(message);
    let mut events = endpoint::events_of(shared, response.into_body());
    match exchange::read_events(shared, &mut events, state, deliver, |_| false) {
        Ok(StreamEnd::Closed | StreamEnd::Stopped) => Round::Ended,
        Ok(StreamEnd::Broke(_)) | Err(_) => Round::Failed,
    }
}
