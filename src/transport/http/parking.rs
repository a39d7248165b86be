//! Where a stream's reader waits while the server is quiet, holding no thread (Unix): the
//! reader is put aside here, the process's reactor watches its socket, and the reactor's
//! handler has a worker take the reader back and read on once something came. Used by the
//! standalone stream (`listener`), by the SSE responses that workers read (`quiet_reply`) and
//! by the HTTP+SSE transport's stream (`legacy_sse::stream`).
//! Where the socket cannot be watched (Windows, behind a proxy, no reactor), nothing is
//! parked: the reader waits in its read, on its thread, as before.

use super::connector::{Exchange, Watched};
#[cfg(unix)]
use crate::transport::reactor::{Reactor, Registration, Source};
#[cfg(unix)]
use std::sync::Arc;
use std::sync::Mutex;
#[cfg(unix)]
use std::time::Instant;

/// One stream's parked reader (`R`), and what has the reactor watch for it.
pub(super) struct Parking<R> {
    slot: Mutex<Slot<R>>,
}

struct Slot<R> {
    /// Set by `stop`: nothing is parked or registered any more.
    stopped: bool,
    /// Declared before `watched`, so dropped first: its descriptor is still open.
    #[cfg(unix)]
    registration: Option<Registration>,
    /// The descriptor `registration` watches (`None`: a timer only).
    #[cfg(unix)]
    watching: Option<std::os::fd::RawFd>,
    /// Keeps the watched socket open while it is registered.
    watched: Option<Watched>,
    reader: Option<R>,
}

/// How parking a reader went.
#[cfg_attr(not(unix), allow(dead_code))] // nothing parks there
pub(super) enum Park<R> {
    /// Parked: the reactor resumes it.
    Parked,
    /// `stop` came first: the reader is dropped.
    Stopped,
    /// The socket could not be registered: the reader is handed back.
    Failed(R),
}

/// The connection of `exchange`'s stream, when the reactor can wait for it (Unix, the
/// process's reactor running, not behind a proxy).
pub(super) fn watchable(exchange: &Exchange) -> Option<Watched> {
    #[cfg(unix)]
    if Reactor::shared().is_ok() {
        return exchange.watch();
    }
    let _ = exchange;
    None
}

impl<R> Default for Parking<R> {
    fn default() -> Self {
        Parking {
            slot: Mutex::new(Slot {
                stopped: false,
                #[cfg(unix)]
                registration: None,
                #[cfg(unix)]
                watching: None,
                watched: None,
                reader: None,
            }),
        }
    }
}

impl<R> Parking<R> {
    /// The parked reader, for the worker whose turn it is (the registration stays, to be
    /// armed again at the next park).
    pub fn take(&self) -> Option<R> {
        self.lock().reader.take()
    }

    /// Parks `reader` and has the reactor watch `watched`'s socket: armed again when it is
    /// already registered, registered with the source `waker` makes otherwise.
    #[cfg(unix)]
    pub fn park(
        &self,
        reader: R,
        watched: Watched,
        waker: impl FnOnce() -> Arc<dyn Source>,
    ) -> Park<R> {
        let Ok(reactor) = Reactor::shared() else {
            return Park::Failed(reader);
        };
        let mut slot = self.lock();
        if slot.stopped {
            drop(slot);
            drop(reader);
            return Park::Stopped;
        }
        let Some(fd) = watched.fd() else {
            // Closed already (an idle pooled socket is closed, never one in use): not parked.
            drop(slot);
            return Park::Failed(reader);
        };
        // The reader goes back before the reactor may hand it to a worker.
        slot.reader = Some(reader);
        if slot.watching == Some(fd) {
            if let Some(registration) = &slot.registration {
                registration.handle().arm();
                return Park::Parked;
            }
        }
        // Another connection's, or a timer's: replaced (the old socket closes after).
        let old = (slot.registration.take(), slot.watched.replace(watched));
        slot.watching = None;
        match reactor.register(Some(fd), waker()) {
            Ok(registration) => {
                slot.registration = Some(registration);
                slot.watching = Some(fd);
                drop(slot);
                drop(old);
                Park::Parked
            }
            Err(_) => {
                let reader = slot.reader.take();
                let watched = slot.watched.take();
                drop(slot);
                drop((old, watched));
                reader.map_or(Park::Stopped, Park::Failed)
            }
        }
    }

    #[cfg(not(unix))]
    pub fn park<W>(&self, reader: R, _watched: Watched, _waker: W) -> Park<R> {
        Park::Failed(reader)
    }

    /// Has the reactor run the source `waker` makes at `at` (a timer, no socket). False when
    /// it cannot (the caller waits itself); true once stopped.
    #[cfg(unix)]
    pub fn wake_at(&self, at: Instant, waker: impl FnOnce() -> Arc<dyn Source>) -> bool {
        let Ok(reactor) = Reactor::shared() else {
            return false;
        };
        let mut slot = self.lock();
        if slot.stopped {
            return true;
        }
        let Ok(registration) = reactor.register(None, waker()) else {
            return false;
        };
        registration.handle().wake_at(at);
        let old = slot.registration.replace(registration);
        slot.watching = None;
        drop(slot);
        drop(old);
        true
    }

    /// Nothing is parked from now on: a parked reader is dropped, and the reactor runs
    /// nothing more for this stream once this returns.
    pub fn stop(&self) {
        let mut slot = self.lock();
        slot.stopped = true;
        Self::unwatch_slot(slot);
    }

    /// Stops watching the socket, then lets the parked reader and the socket go.
    pub fn unwatch(&self) {
        Self::unwatch_slot(self.lock());
    }

    /// In that order: a descriptor is never closed while registered.
    fn unwatch_slot(mut slot: std::sync::MutexGuard<'_, Slot<R>>) {
        #[cfg(unix)]
        let registration = {
            slot.watching = None;
            slot.registration.take()
        };
        let reader = slot.reader.take();
        let watched = slot.watched.take();
        drop(slot);
        // Outside the lock: deregistering waits for a handler that may be running, and the
        // reader's drop may end its exchange.
        #[cfg(unix)]
        drop(registration);
        drop(reader);
        drop(watched);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Slot<R>> {
        crate::sync::lock(&self.slot)
    }
}
