//! Closing the connections that sit idle in ureq's pool.
//!
//! After a request ureq keeps its connection in a pool for the next one, and refuses to reuse
//! it once it has been idle for [`IDLE_AGE`]; but it only looks when the pool is next used. An
//! idle client would so keep the socket (and its descriptor) for ever, also after the server
//! closed its side. So while a connection sits in the pool, and only then, the process's
//! reactor watches it: a timer, to close it once it has been idle for `IDLE_AGE`, and, once it
//! has sat there for [`SETTLE`], its socket, to close it as soon as the server ends it (or sends
//! what nobody asked for: it could not be reused either). A connection that the next request
//! takes out sooner (a client at work) so costs no system call. No thread waits for any of it.
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

/// How long a pooled connection has only its timer, before its socket is watched too: a
/// server's close within that time is seen at its end.
#[cfg(unix)]
const SETTLE: Duration = Duration::from_millis(50);

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
    /// Present while the connection is pooled and watched: a timer only until it settles.
    #[cfg(unix)]
    registration: Option<Registration>,
    /// When it was pooled.
    #[cfg(unix)]
    pooled_at: Option<Instant>,
    /// It has sat in the pool for `SETTLE`: its socket is watched (if it can be), and its timer
    /// is the idle age's.
    #[cfg(unix)]
    settled: bool,
}

impl PoolWatch {
    /// ureq is about to put `connection` in its pool: watch it from now on (nothing happens
    /// without a reactor).
    pub(super) fn pooled<P: Pooled + 'static>(&self, connection: &Arc<P>) {
        #[cfg(unix)]
        {
            let Ok(reactor) = Reactor::shared() else {
                return;
            };
            // Held while registering, so a handler that runs at once finds its registration.
            let mut state = lock(&self.state);
            if state.closed || state.registration.is_some() {
                return;
            }
            let expiry = Arc::new(Expiry(Arc::downgrade(connection) as Weak<dyn Pooled>));
            if let Ok(registration) = reactor.register(None, expiry) {
                let now = Instant::now();
                registration.handle().wake_at(now + SETTLE);
                state.registration = Some(registration);
                state.pooled_at = Some(now);
                state.settled = false;
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

    /// On the reactor thread, for a connection still pooled (ureq may have taken it meanwhile:
    /// then nothing happens): once settled, its socket is watched; when the socket is readable
    /// (the server's end, or bytes it should not have sent), or its idle age has come, it is
    /// closed.
    #[cfg(unix)]
    fn ready(&self, pooled: &dyn Pooled, connection: &Weak<dyn Pooled>) {
        let mut state = lock(&self.state);
        if state.registration.is_none() {
            return;
        }
        if !state.settled {
            state.settled = true;
            let watched = pooled.fd().and_then(|fd| {
                let reactor = Reactor::shared().ok()?;
                let expiry = Arc::new(Expiry(connection.clone()));
                reactor.register(Some(fd), expiry).ok()
            });
            // Without a watch on the socket the timer alone goes on.
            let timer_only = watched.and_then(|watched| state.registration.replace(watched));
            if let (Some(registration), Some(pooled_at)) = (&state.registration, state.pooled_at) {
                registration.handle().wake_at(pooled_at + IDLE_AGE);
            }
            drop(state);
            // On the reactor thread: deregistering does not wait for this handler.
            drop(timer_only);
            return;
        }
        state.closed = true;
        let registration = state.registration.take();
        drop(state);
        drop(registration);
        pooled.close();
    }

    /// A handler panicked (a bug): the connection is closed, not reused.
    #[cfg(unix)]
    fn close_now(&self, connection: &dyn Pooled) {
        let registration = {
            let mut state = lock(&self.state);
            state.closed = true;
            state.registration.take()
        };
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
            connection.watch().ready(&*connection, &self.0);
        }
    }

    fn panicked(&self, _error: crate::error::Error) {
        if let Some(connection) = self.0.upgrade() {
            connection.watch().close_now(&*connection);
        }
    }
}
