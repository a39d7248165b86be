//! The cancellation token: a flag, a reason and a list of hooks, safe to use from any thread.
//!
//! A token is shared (it is an `Arc` inside), so one token may serve many calls on many threads,
//! and the C host may free its handle while a call still holds a clone. `cancel` runs the
//! registered hooks synchronously on the cancelling thread and never does I/O itself: the engine's
//! hooks only flip state and wake waiters (see `engine::call`), so `cancel` returns at once.

use crate::sync::lock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

type Hook = Box<dyn FnOnce(Option<&str>) + Send>;

/// A thread-safe, reference-counted cancellation token.
#[derive(Clone, Default)]
pub struct CancellationToken {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Mirrors `State::cancelled` so `is_cancelled` never takes the lock.
    cancelled: AtomicBool,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    cancelled: bool,
    reason: Option<String>,
    next_hook_id: u64,
    hooks: Vec<(u64, Hook)>,
}

/// Identifies a registered hook so it can be removed once its call has finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HookId(u64);

impl CancellationToken {
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels the token. Returns true only for the first cancel; later calls change nothing and
    /// keep the first reason. Hooks run on this thread, outside the token's lock, in the order
    /// they were registered.
    pub fn cancel(&self, reason: Option<&str>) -> bool {
        let hooks = {
            let mut state = self.lock();
            if state.cancelled {
                return false;
            }
            state.cancelled = true;
            state.reason = reason.map(str::to_owned);
            self.inner.cancelled.store(true, Ordering::Release);
            std::mem::take(&mut state.hooks)
        };
        for (_, hook) in hooks {
            hook(reason);
        }
        true
    }

    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::Acquire)
    }

    /// The reason given to the first cancel, if any.
    pub fn reason(&self) -> Option<String> {
        self.lock().reason.clone()
    }

    /// Registers a hook that runs once when the token is cancelled. If the token is already
    /// cancelled the hook runs now, on this thread, and `None` is returned.
    pub fn on_cancel(&self, hook: impl FnOnce(Option<&str>) + Send + 'static) -> Option<HookId> {
        let mut state = self.lock();
        if state.cancelled {
            let reason = state.reason.clone();
            drop(state);
            hook(reason.as_deref());
            return None;
        }
        state.next_hook_id += 1;
        let id = state.next_hook_id;
        state.hooks.push((id, Box::new(hook)));
        Some(HookId(id))
    }

    /// Removes a hook that has not run yet. Returns true if it was still pending.
    pub fn off_cancel(&self, id: HookId) -> bool {
        let mut state = self.lock();
        let before = state.hooks.len();
        state.hooks.retain(|(hook_id, _)| *hook_id != id.0);
        state.hooks.len() != before
    }

    /// Whether two handles refer to the same token.
    pub fn same_as(&self, other: &CancellationToken) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A hook never runs under this lock, so a poisoned lock can only come from a panic in
        // our own bookkeeping; the state is still consistent, so keep going.
        lock(&self.inner.state)
    }
}

impl std::fmt::Debug for CancellationToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancellationToken")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn starts_not_cancelled() {
        let token = CancellationToken::new();
        assert!(!token.is_cancelled());
        assert_eq!(token.reason(), None);
    }

    #[test]
    fn first_cancel_wins_and_keeps_its_reason() {
        let token = CancellationToken::new();
        assert!(token.cancel(Some("first")));
        assert!(token.is_cancelled());
        assert!(!token.cancel(Some("second")));
        assert_eq!(token.reason().as_deref(), Some("first"));
    }

    #[test]
    fn cancel_without_reason_has_no_reason() {
        let token = CancellationToken::new();
        assert!(token.cancel(None));
        assert_eq!(token.reason(), None);
    }

    #[test]
    fn hooks_fire_once_with_the_first_reason() {
        let token = CancellationToken::new();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        token.on_cancel(move |r| s.lock().unwrap().push(r.map(str::to_owned)));
        token.cancel(Some("a"));
        token.cancel(Some("b"));
        assert_eq!(*seen.lock().unwrap(), vec![Some("a".to_owned())]);
    }

    #[test]
    fn hook_registered_after_cancel_fires_immediately() {
        let token = CancellationToken::new();
        token.cancel(Some("done"));
        let fired = Arc::new(AtomicUsize::new(0));
        let f = fired.clone();
        let id = token.on_cancel(move |r| {
            assert_eq!(r, Some("done"));
            f.fetch_add(1, Ordering::SeqCst);
        });
        assert!(id.is_none());
        assert_eq!(fired.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn removed_hook_never_fires() {
        let token = CancellationToken::new();
        let fired = Arc::new(AtomicUsize::new(0));
        let f = fired.clone();
        let id = token
            .on_cancel(move |_| {
                f.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        assert!(token.off_cancel(id));
        assert!(!token.off_cancel(id));
        token.cancel(None);
        assert_eq!(fired.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_hook_may_use_the_token_without_deadlock() {
        let token = CancellationToken::new();
        let t2 = token.clone();
        token.on_cancel(move |_| {
            assert!(t2.is_cancelled());
            assert!(!t2.cancel(Some("again")));
            t2.on_cancel(|_| {});
        });
        assert!(token.cancel(Some("x")));
    }

    #[test]
    fn concurrent_cancels_have_exactly_one_winner() {
        for _ in 0..50 {
            let token = CancellationToken::new();
            let wins = Arc::new(AtomicUsize::new(0));
            let threads: Vec<_> = (0..8)
                .map(|i| {
                    let (t, w) = (token.clone(), wins.clone());
                    std::thread::spawn(move || {
                        if t.cancel(Some(&format!("r{i}"))) {
                            w.fetch_add(1, Ordering::SeqCst);
                        }
                    })
                })
                .collect();
            threads.into_iter().for_each(|t| t.join().unwrap());
            assert_eq!(wins.load(Ordering::SeqCst), 1);
        }
    }
}
