//! Closing the connections that sit idle in ureq's pool.
//!
//! After a request ureq keeps its connection in a pool for the next one, and refuses to reuse
//! it once it has been idle for [`IDLE_AGE`]; but it only looks when the pool is next used. An
//! idle client would so keep the socket (and its descriptor) for ever, also after the server
//! closed its side. So while a connection sits in the pool, and only then, the process's
//! reactor watches it: its socket, to close it as soon as the server ends it (or sends what
//! nobody asked for: it could not be reused either), and a timer, to close it once it has been
//! idle for `IDLE_AGE`. No thread waits for it.
//!
//! ureq asks a connection `is_open` before it pools it and before it takes it out again (see
//! `connector::Tracked`): the watch starts at the first and ends at the second. Taking it out
//! and closing it exclude each other (one lock), so ureq either gets a live connection, which
//! the watch has let go, or one that says it is closed, which ureq drops before it opens
//! another: a request is never written to a socket closed here. The descriptor leaves the
//! reactor before it is closed. Where there is no reactor (Windows, or none could start) ureq's
//! own check when the pool is next used is all there is.

use crate::sync::lock;
#[cfg(unix)]
use crate::transport::reactor::{Event, Handle, Reactor, Registration, Source};
#[cfg(unix)]
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex};
use std::time::Duration;
#[cfg(unix)]
use std::{sync::Weak, time::Instant};

/// How long a connection may sit idle in the pool: below the usual 5 s keep-alive of servers,
/// so a connection the server is closing is rarely reused. ureq is given the same age.
pub(super) const IDLE_AGE: Duration = Duration::from_secs(4);

/// A pooled connection, as the watch sees it.
pub(super) trait Pooled: Send + Sync {
    #[cfg_attr(not(unix), allow(dead_code))] // no reactor there
    fn watch(&self) -> &PoolWatch;
    /// Its socket's descriptor (`None` once closed).
    #[cfg(unix)]
    fn fd(&self) -> Option<RawFd>;
    /// Closes its descriptor: it is in the pool, and nobody watches it any more.
    #[cfg_attr(not(unix), allow(dead_code))] // no reactor there
    fn close(&self);
}

/// One connection's watch while it is pooled.
#[derive(Default)]
pub(super) struct PoolWatch {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Closed by the watch: ureq must drop it.
    closed: bool,
    /// Present while the connection is pooled and watched.
    #[cfg(unix)]
    registration: Option<Registration>,
}

impl PoolWatch {
    /// ureq is about to put `connection` in its pool: watch it from now on (nothing happens
    /// without a reactor).
    pub(super) fn pooled<P: Pooled + 'static>(&self, connection: &Arc<P>) {
        #[cfg(unix)]
        {
            let (Ok(reactor), Some(fd)) = (Reactor::shared(), connection.fd()) else {
                return;
            };
            // Held while registering, so a handler that runs at once finds its registration.
            let mut state = lock(&self.state);
            if state.closed || state.registration.is_some() {
                return;
            }
            let expiry = Arc::new(Expiry(Arc::downgrade(connection) as Weak<dyn Pooled>));
            if let Ok(registration) = reactor.register(Some(fd), expiry) {
                registration.handle().wake_at(Instant::now() + IDLE_AGE);
                state.registration = Some(registration);
            }
        }
        #[cfg(not(unix))]
        let _ = connection;
    }

    /// ureq takes the connection out of its pool for a request, or drops it: the watch ends.
    /// False if the watch closed it already (ureq then drops it and opens another).
    pub(super) fn taken(&self) -> bool {
        #[cfg(unix)]
        {
            let (registration, open) = {
                let mut state = lock(&self.state);
                (state.registration.take(), !state.closed)
            };
            // Outside the lock: deregistering waits for a handler that may be running (it
            // takes the lock, finds the connection taken, and leaves it alone).
            drop(registration);
            open
        }
        #[cfg(not(unix))]
        !lock(&self.state).closed
    }

    /// The reactor found the pooled socket readable (the server's end, or bytes it should not
    /// have sent), or the connection's idle age has come: closes it, unless ureq took it first.
    #[cfg(unix)]
    fn expire(&self, connection: &dyn Pooled) {
        let registration = {
            let mut state = lock(&self.state);
            let Some(registration) = state.registration.take() else {
                return;
            };
            state.closed = true;
            registration
        };
        // On the reactor thread: deregistering does not wait for this handler.
        drop(registration);
        connection.close();
    }
}

/// What the reactor holds of a pooled connection: weak, so a connection ureq drops goes.
#[cfg(unix)]
struct Expiry(Weak<dyn Pooled>);

#[cfg(unix)]
impl Source for Expiry {
    fn ready(&self, _handle: &Handle, _event: Event) {
        if let Some(connection) = self.0.upgrade() {
            connection.watch().expire(&*connection);
        }
    }

    fn panicked(&self, _error: crate::error::Error) {
        // A bug: the connection is not reused (closing it is what the handler does anyway).
        if let Some(connection) = self.0.upgrade() {
            connection.watch().expire(&*connection);
        }
    }
}
