//! A request's SSE stream read by a worker (a started call, a call whose deadline moves on
//! progress) waits parked while the server is quiet, holding no thread (Unix): a listen, or a
//! long tool call, over a thousand connections costs no thousand threads. The worker puts the
//! reader aside (`parking`), the reactor watches the socket, and when it is readable a worker
//! reads on for as long as more is there, then parks the reader again; a read that stops
//! mid-event waits on that worker for the rest. A resumption by GET (SEP-1699) is read on its
//! worker as before. The caller's own reads (the fast path) never park; what follows the
//! caller's answer on its stream does (`Reply::drains`).
//!
//! Everything else holds as for a reader that waits in its read: the exchange's abort (cancel,
//! the call's timeout, the drain deadline after the answer, close) drops a parked reader at
//! once, on the aborting thread, and then shuts the socket down, so a modern server sees its
//! stream close; the exchange is ended (`Exchanges::running`) exactly once, when the reader
//! goes, wherever that is.

use super::connector::Exchange;
use super::endpoint::Events;
use super::exchange::{Quiet, Reply, StreamState};
use super::parking::{Park, Parking};
use super::Shared;
use crate::cancellation::CancellationToken;
#[cfg(unix)]
use crate::transport::reactor::{Event, Handle, Source};
#[cfg(unix)]
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

/// One parked request's stream.
#[cfg_attr(not(unix), allow(dead_code))] // nothing parks there
struct QuietReply {
    id: i64,
    exchange: Arc<Exchange>,
    /// Weak: the reply holds the connection's shared state.
    shared: Weak<Shared>,
    parked: Parking<Paused>,
}

/// The reader between turns.
struct Paused {
    reply: Reply,
    events: Events,
    state: StreamState,
    _ends: EndsExchange,
}

/// Ends the exchange when the reader goes, however it goes.
struct EndsExchange {
    shared: Arc<Shared>,
    id: i64,
    /// The rest of a stream whose caller has its answer: counted in `draining` till now.
    drains: bool,
}

impl Drop for EndsExchange {
    fn drop(&mut self) {
        let mut exchanges = self.shared.lock_exchanges();
        exchanges.running.remove(&self.id);
        if self.drains {
            exchanges.draining -= 1;
            drop(exchanges);
            self.shared.drained.notify_all();
        }
    }
}

/// Parks `reply`'s stream, which has nothing to read for now, and returns: a worker reads on
/// once the server sends more, and ends the exchange. Where it cannot be parked, reads it to
/// its end here.
pub(super) fn park(reply: Reply, quiet: Quiet) {
    let shared = reply.shared().clone();
    let exchange = reply.exchange().clone();
    let id = reply.id();
    let drains = reply.drains();
    let me = Arc::new(QuietReply {
        id,
        exchange: exchange.clone(),
        shared: Arc::downgrade(&shared),
        parked: Parking::default(),
    });
    // The abort drops the parked reader at once (at once too when it came already).
    let aborted = CancellationToken::new();
    let weak = Arc::downgrade(&me);
    aborted.on_cancel(move |_| {
        if let Some(me) = weak.upgrade() {
            me.parked.stop();
        }
    });
    exchange.cancel_on_abort(&aborted);
    let Quiet {
        events,
        state,
        watched,
    } = quiet;
    let paused = Paused {
        reply,
        events,
        state,
        _ends: EndsExchange { shared, id, drains },
    };
    me.park(paused, watched);
}

impl QuietReply {
    /// A worker's turn: reads on what came, then parks the reader again, or ends it.
    #[cfg_attr(not(unix), allow(dead_code))] // nothing parks there
    fn turn(self: &Arc<Self>) {
        let Some(Paused {
            mut reply,
            events,
            state,
            _ends,
        }) = self.parked.take()
        else {
            return;
        };
        let _entered = self.exchange.enter();
        match reply.read_on(events, state) {
            Ok(Some(Quiet {
                events,
                state,
                watched,
            })) => {
                let paused = Paused {
                    reply,
                    events,
                    state,
                    _ends,
                };
                return self.park(paused, watched);
            }
            Ok(None) => {}
            Err(error) => reply.failed(error),
        }
        // The socket stops being watched before the stream (maybe its last user) goes.
        self.parked.unwatch();
        drop((reply, _ends));
    }

    /// Parks the reader: the reactor holds this (strongly) while it is registered. Where the
    /// socket cannot be registered, reads the stream to its end on this thread, or on a worker
    /// for a caller that has its answer (`Reply::drains`: without a worker, the stream is
    /// dropped).
    fn park(self: &Arc<Self>, paused: Paused, watched: super::connector::Watched) {
        #[cfg(unix)]
        let waker = || Arc::new(Waker(self.clone())) as Arc<dyn Source>;
        #[cfg(not(unix))]
        let waker = ();
        let Paused {
            mut reply,
            events,
            state,
            _ends,
        } = match self.parked.park(paused, watched, waker) {
            Park::Parked | Park::Stopped => return,
            Park::Failed(paused) => paused,
        };
        let me = self.clone();
        let drains = reply.drains();
        let workers = reply.shared().workers.clone();
        let read = move || {
            if let Err(error) = reply.read_to_end(events, state) {
                reply.failed(error);
            }
            me.parked.unwatch();
            drop((reply, _ends));
        };
        match drains {
            true => drop(workers.run(read, |_| ())),
            false => read(),
        }
    }

    /// The socket is readable: a worker takes its turn. Without a worker the stream stays
    /// parked, unread, until its call ends (cancel, timeout, close).
    #[cfg(unix)]
    fn resume(self: &Arc<Self>) {
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        if shared.closed.load(Ordering::Acquire) {
            return;
        }
        let me = self.clone();
        // A bug must not leave the call waiting forever (its reader is gone with the panic).
        let on_panic = {
            let (me, shared) = (self.clone(), shared.clone());
            move |error| {
                me.parked.unwatch();
                shared.inbound.request_failed(me.id, error);
            }
        };
        let _ = shared.workers.run(move || me.turn(), on_panic);
    }
}

/// What the reactor holds of a parked stream: the stream itself, until it is unwatched (its
/// end, or the exchange's abort).
#[cfg(unix)]
struct Waker(Arc<QuietReply>);

#[cfg(unix)]
impl Source for Waker {
    fn ready(&self, _handle: &Handle, _event: Event) {
        self.0.resume();
    }

    fn panicked(&self, error: crate::error::Error) {
        // A bug: the call fails, and its stream is dropped (on a worker: not the reactor's
        // business to call the engine).
        let me = self.0.clone();
        if let Some(shared) = me.shared.upgrade() {
            let workers = shared.workers.clone();
            let fail = move || {
                shared.inbound.request_failed(me.id, error);
                me.exchange.abort();
            };
            let _ = workers.run(fail, |_| ());
        }
    }
}
