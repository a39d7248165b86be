//! What ends a client's waits between requests: a change of session (a new connection, a
//! failure), the client's close, and the call's own cancel. Every such wait (a task's poll
//! interval, the pause before a state-only input round, a listen) goes through [`Changes`], so
//! close reaches each of them at once, the way it reaches a call blocked on the wire.

use crate::cancellation::CancellationToken;
use crate::sync::{lock, wait_until};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

/// Wakes the client's waits: the session changed or failed, the client closed, a token fired.
#[derive(Default)]
pub(crate) struct Changes {
    state: Mutex<Seen>,
    changed: Condvar,
}

#[derive(Default)]
struct Seen {
    count: u64,
    closed: bool,
}

/// Why a [`Changes::pause`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PauseEnd {
    /// Its time came.
    Elapsed,
    Cancelled,
    Closed,
}

impl Changes {
    pub fn notify(&self) {
        lock(&self.state).count += 1;
        self.changed.notify_all();
    }

    /// The client closed: every wait ends now, and later ones at once.
    pub fn close(&self) {
        let mut state = lock(&self.state);
        state.count += 1;
        state.closed = true;
        drop(state);
        self.changed.notify_all();
    }

    pub fn seen(&self) -> u64 {
        lock(&self.state).count
    }

    fn is_closed(&self) -> bool {
        lock(&self.state).closed
    }

    /// Waits until something changed after `seen`, or `deadline`.
    pub fn wait(&self, seen: u64, deadline: Option<Instant>) {
        let mut state = lock(&self.state);
        while state.count == seen {
            match wait_until(&self.changed, state, deadline) {
                Some(next) => state = next,
                None => return,
            }
        }
    }

    /// Waits until `until`, unless `token` is cancelled or the client closes first.
    pub fn pause(self: &Arc<Self>, until: Instant, token: Option<&CancellationToken>) -> PauseEnd {
        let hook = token.and_then(|token| {
            let changes = self.clone();
            token.on_cancel(move |_| changes.notify())
        });
        let end = loop {
            let seen = self.seen();
            if token.is_some_and(CancellationToken::is_cancelled) {
                break PauseEnd::Cancelled;
            }
            if self.is_closed() {
                break PauseEnd::Closed;
            }
            if Instant::now() >= until {
                break PauseEnd::Elapsed;
            }
            self.wait(seen, Some(until));
        };
        if let (Some(token), Some(hook)) = (token, hook) {
            token.off_cancel(hook);
        }
        end
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_pause_ends_when_its_time_comes_at_a_cancel_and_at_close() {
        let changes = Arc::new(Changes::default());
        let soon = Instant::now() + Duration::from_millis(10);
        assert_eq!(changes.pause(soon, None), PauseEnd::Elapsed);

        let token = CancellationToken::new();
        let later = Instant::now() + Duration::from_secs(60);
        let cancel = {
            let token = token.clone();
            std::thread::spawn(move || token.cancel(None))
        };
        assert_eq!(changes.pause(later, Some(&token)), PauseEnd::Cancelled);
        cancel.join().unwrap();

        let closer = {
            let changes = changes.clone();
            std::thread::spawn(move || changes.close())
        };
        assert_eq!(changes.pause(later, None), PauseEnd::Closed);
        closer.join().unwrap();
        // And every pause after close ends at once.
        assert_eq!(changes.pause(later, None), PauseEnd::Closed);
    }
}
