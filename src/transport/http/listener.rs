//! The legacy era's standalone stream: a GET the server may use for what belongs to no call
//! (requests such as `roots/list`, notifications such as list changes). It is opened once the
//! session is initialized, opened again after the server's retry delay when the server ends it,
//! and given up after a 405 (the server offers none) or two failures in a row. Opening it waits
//! (briefly) for the server's answer to the first GET, so that what the server sends on it right
//! after the handshake (a request made while handling the first call) is not lost: servers
//! without an event store drop messages for a standalone stream that is not open yet.
//!
//! While the stream waits for the server it holds no thread (Unix): its reader is parked, and
//! its socket watched by the process's reactor. When the socket is readable, a worker reads
//! what has come for as long as more is there without waiting, then parks the reader again;
//! a read that stops mid-event waits on that worker for the rest. The delay before opening the
//! stream again is a reactor timer. Where the socket cannot be watched (Windows, behind a proxy,
//! no reactor), a worker reads the stream as before, waiting in the read.

use super::connector::{Exchange, Watched};
use super::endpoint::{self, Events};
use super::exchange::{self, StreamEnd, StreamState};
use super::parking::{self, Parking};
use super::{lock, Shared};
#[cfg(unix)]
use crate::transport::reactor::{Event, Handle, Source};
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc, Mutex, Weak};
use std::time::Duration;
#[cfg(unix)]
use std::time::Instant;

const DEFAULT_RETRY: Duration = Duration::from_millis(1000);
const MIN_RETRY: Duration = Duration::from_millis(100);
const MAX_FAILURES: u32 = 2;
/// The longest `start` waits for the server to answer the first GET.
const OPEN_WAIT: Duration = Duration::from_secs(2);

/// How one turn with the stream went.
enum Round {
    /// Nothing more to read for now: the reader is parked, the reactor watches the socket.
    #[cfg_attr(not(unix), allow(dead_code))] // no reactor there
    Parked,
    /// The server ended the stream: open it again.
    Ended,
    /// No standalone stream here (405), or the session is gone.
    Refused,
    Failed,
}

/// One connection's standalone stream.
pub(super) struct Standalone {
    /// Weak: the connection's shared state holds this.
    shared: Weak<Shared>,
    exchange: Arc<Exchange>,
    /// Its reader, while it waits for the server.
    parked: Parking<Events>,
    /// What the rounds so far told; one worker at a time holds it, for its whole turn.
    progress: Mutex<Progress>,
}

#[derive(Default)]
struct Progress {
    stream: StreamState,
    failures: u32,
}

/// Starts the stream on a worker thread, and waits until the server has answered its first GET
/// (at most OPEN_WAIT); close stops it.
pub(super) fn start(shared: &Arc<Shared>) {
    let standalone = Arc::new(Standalone {
        shared: Arc::downgrade(shared),
        exchange: Exchange::parking(),
        parked: Parking::default(),
        progress: Mutex::default(),
    });
    {
        let mut listener = lock(&shared.listener);
        if listener.is_some() || shared.closed.load(Ordering::Acquire) {
            return;
        }
        *listener = Some(standalone.clone());
    }
    let (opened, answered) = mpsc::channel();
    let worker = move || standalone.run(Some(opened));
    // Without a thread there is no standalone stream: calls work all the same.
    // A panic ends the stream (the sender is dropped, so the wait below ends too).
    if shared.workers.run(worker, |_| ()).is_ok() {
        // Whatever the answer (or none in time), the session goes on.
        let _ = answered.recv_timeout(OPEN_WAIT);
    }
}

impl Standalone {
    /// Ends the stream at once (close): a worker reading it wakes, a parked one is dropped,
    /// and the reactor runs nothing more for it once this returns.
    pub(super) fn stop(&self) {
        self.exchange.abort();
        self.parked.stop();
    }

    /// A worker's turn: reads the parked stream, or opens it when there is none (`opened` is
    /// told once the server answered the GET), until nothing more is there (it parks), or it
    /// is given up. Opens it again after the retry delay, on a reactor timer where it can.
    fn run(self: &Arc<Self>, mut opened: Option<mpsc::Sender<()>>) {
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        let _entered = self.exchange.enter();
        let mut progress = lock(&self.progress);
        let mut events = self.parked.take();
        loop {
            if self.exchange.is_aborted() || shared.closed.load(Ordering::Acquire) {
                return;
            }
            let round = match events.take() {
                Some(events) => self.read(&shared, events, &mut progress.stream),
                None => match open(&shared, &progress.stream, &mut opened) {
                    Ok(events) => self.read(&shared, events, &mut progress.stream),
                    Err(round) => round,
                },
            };
            match round {
                Round::Parked => return,
                Round::Ended => progress.failures = 0,
                Round::Refused => return self.parked.unwatch(),
                Round::Failed => {
                    progress.failures += 1;
                    if progress.failures == MAX_FAILURES {
                        return self.parked.unwatch();
                    }
                }
            }
            let delay = progress
                .stream
                .retry
                .unwrap_or(DEFAULT_RETRY)
                .max(MIN_RETRY);
            if self.reopen_after(delay) || !self.exchange.sleep(delay) {
                return;
            }
        }
    }

    /// Reads and delivers events, as long as more is there without waiting when the stream
    /// can be parked (then parks it), to the stream's end otherwise.
    fn read(
        self: &Arc<Self>,
        shared: &Shared,
        mut events: Events,
        state: &mut StreamState,
    ) -> Round {
        let watched = parking::watchable(&self.exchange);
        let nothing_there = |events: &Events| {
            watched
                .as_ref()
                .is_some_and(|watched| !events.has_buffered() && !watched.has_input())
        };
        let deliver = |message| shared.inbound.message(message);
        let ended = match nothing_there(&events) {
            true => Ok(StreamEnd::Stopped),
            false => exchange::read_events(shared, &mut events, state, deliver, nothing_there),
        };
        let round = match ended {
            Ok(StreamEnd::Stopped) => match watched {
                Some(watched) => return self.park(events, watched),
                None => Round::Failed,
            },
            Ok(StreamEnd::Closed) => Round::Ended,
            Ok(StreamEnd::Broke(_)) | Err(_) => Round::Failed,
        };
        // The socket stops being watched before the stream (maybe its last user) goes.
        self.parked.unwatch();
        drop(events);
        round
    }

    /// Parks the reader and has the reactor watch its socket. `Failed` when it cannot be
    /// registered, `Refused` once stopped.
    #[cfg(unix)]
    fn park(self: &Arc<Self>, events: Events, watched: Watched) -> Round {
        let waker = || Arc::new(Waker(Arc::downgrade(self))) as Arc<dyn Source>;
        match self.parked.park(events, watched, waker) {
            parking::Park::Parked => Round::Parked,
            parking::Park::Stopped => Round::Refused,
            parking::Park::Failed(_) => Round::Failed,
        }
    }

    #[cfg(not(unix))]
    fn park(self: &Arc<Self>, _events: Events, _watched: Watched) -> Round {
        Round::Failed
    }

    /// Sets a reactor timer to open the stream again after `delay`. True when it is set (or
    /// the stream is stopped); false when the caller must wait itself.
    #[cfg(unix)]
    fn reopen_after(self: &Arc<Self>, delay: Duration) -> bool {
        // A delay too long to represent (a server's huge `retry`) lasts until close.
        let Some(at) = Instant::now().checked_add(delay) else {
            return true;
        };
        let waker = || Arc::new(Waker(Arc::downgrade(self))) as Arc<dyn Source>;
        self.parked.wake_at(at, waker)
    }

    #[cfg(not(unix))]
    fn reopen_after(self: &Arc<Self>, _delay: Duration) -> bool {
        false
    }

    /// The reactor found the socket readable, or the time to open the stream again came:
    /// a worker takes its turn.
    #[cfg(unix)]
    fn resume(self: &Arc<Self>) {
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        if shared.closed.load(Ordering::Acquire) {
            return;
        }
        let me = self.clone();
        // Without a worker the stream stays parked, unread, until close.
        let _ = shared.workers.run(move || me.run(None), |_| ());
    }
}

/// What the reactor holds of a stream: weak, so a stream nobody else holds goes.
#[cfg(unix)]
struct Waker(Weak<Standalone>);

#[cfg(unix)]
impl Source for Waker {
    fn ready(&self, _handle: &Handle, _event: Event) {
        if let Some(standalone) = self.0.upgrade() {
            standalone.resume();
        }
    }

    fn panicked(&self, _error: crate::error::Error) {
        // A bug: the stream ends (calls go on without it).
        if let Some(standalone) = self.0.upgrade() {
            standalone.exchange.abort();
        }
    }
}

/// One GET; `opened` is told once the server has answered it (or it failed). The events of
/// the stream it opened, or how it went otherwise.
fn open(
    shared: &Shared,
    state: &StreamState,
    opened: &mut Option<mpsc::Sender<()>>,
) -> Result<Events, Round> {
    let response = endpoint::open_session_stream(shared, state.last_event_id.as_deref());
    if let Some(opened) = opened.take() {
        let _ = opened.send(());
    }
    let Ok(response) = response else {
        return Err(Round::Failed);
    };
    match response.status().as_u16() {
        200..=299 => {}
        // 404: the server forgot the session; calls will say so.
        404 | 405 => return Err(Round::Refused),
        _ => return Err(Round::Failed),
    }
    let is_sse = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"));
    if !is_sse {
        return Err(Round::Failed);
    }
    Ok(endpoint::events_of(shared, response.into_body()))
}
