//! What ends a client's waits between requests: a change of session (a new connection, a
//! failure), the client's close, and the call's own cancel. Every such wait (a task's poll
//! interval, the pause before a state-only input round, a listen) goes through [`Changes`], so
//! close reaches each of them at once, the way it reaches a call blocked on the wire. Host code
//! a call waits on (an input handler) cannot be woken: its token is cancelled instead
//! ([`Changes::cancel_on_close`]).

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
    /// Tokens close cancels, by registration.
    tokens: Vec<(u64, CancellationToken)>,
    next_token: u64,
}

/// The reason a token cancelled by close gives.
const CLOSED_REASON: &str = "client closed";

/// Keeps a token registered with [`Changes::cancel_on_close`]; dropping it unregisters it.
pub(crate) struct CancelOnClose(Option<(Arc<Changes>, u64)>);

impl Drop for CancelOnClose {
    fn drop(&mut self) {
        if let Some((changes, id)) = self.0.take() {
            lock(&changes.state)
                .tokens
                .retain(|(token_id, _)| *token_id != id);
        }
    }
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

    /// The client closed: every wait ends now, and later ones at once; the tokens registered
    /// are cancelled.
    pub fn close(&self) {
        let mut state = lock(&self.state);
        state.count += 1;
        state.closed = true;
        let tokens = std::mem::take(&mut state.tokens);
        drop(state);
        self.changed.notify_all();
        // Outside the lock: a token's hooks are any code.
        for (_, token) in tokens {
            token.cancel(Some(CLOSED_REASON));
        }
    }

    pub fn seen(&self) -> u64 {
        lock(&self.state).count
    }

    pub fn is_closed(&self) -> bool {
        lock(&self.state).closed
    }

    /// Cancels `token` when the client closes (now, if it has), for as long as the returned
    /// guard lives.
    pub fn cancel_on_close(self: &Arc<Self>, token: &CancellationToken) -> CancelOnClose {
        let mut state = lock(&self.state);
        if state.closed {
            drop(state);
            token.cancel(Some(CLOSED_REASON));
            return CancelOnClose(None);
        }
        state.next_token += 1;
        let id = state.next_token;
        state.tokens.push((id, token.clone()));
        CancelOnClose(Some((self.clone(), id)))
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

    #[test]
    fn close_cancels_the_tokens_registered_and_no_others() {
        let changes = Arc::new(Changes::default());
        let (kept, dropped) = (CancellationToken::new(), CancellationToken::new());
        let _kept = changes.cancel_on_close(&kept);
        drop(changes.cancel_on_close(&dropped));
        changes.close();
        assert!(kept.is_cancelled());
        assert_eq!(kept.reason().as_deref(), Some(CLOSED_REASON));
        assert!(!dropped.is_cancelled());
        let late = CancellationToken::new();
        let _late = changes.cancel_on_close(&late);
        assert!(
            late.is_cancelled(),
            "registered after close: cancelled at once"
        );
    }
}
