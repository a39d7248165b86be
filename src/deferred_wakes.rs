//! Waking a waiting host once per batch of results, not once per result.
//!
//! The stdio reader thread routes the answers of one `read()` one after the other. When each
//! completion pushed onto a host's completion queue woke the host at once, a host thread on the
//! same core ran at the first wake-up (the scheduler prefers the woken thread), took that one
//! completion, started one call, and slept again before the reader had routed the rest: the
//! window of calls fell apart into small pieces, each costing a round of context switches.
//!
//! A thread that routes in batches runs inside [`deferring_wakes`]; a wake-up asked for there
//! ([`wake_soon`]) waits until the thread calls [`wake_deferred`], which it does before it
//! blocks or reads from the descriptor again, and when the scope ends (also by a panic). On any
//! other thread `wake_soon` wakes at once. Whatever is woken must not mind being woken later
//! than its data arrived by the time it takes to route one buffer of lines.

use std::cell::RefCell;
use std::sync::Arc;

/// Something that wakes a waiter (a completion queue's descriptor).
pub(crate) trait Wake: Send + Sync {
    fn wake(&self);
}

thread_local! {
    /// Inside [`deferring_wakes`]: the wake-ups asked for since the last [`wake_deferred`]
    /// (each waker once). `None` outside.
    static DEFERRED: RefCell<Option<Vec<Arc<dyn Wake>>>> = const { RefCell::new(None) };
}

/// Wakes `waker`: at once, or, inside [`deferring_wakes`], at this thread's next
/// [`wake_deferred`].
pub(crate) fn wake_soon(waker: Arc<dyn Wake>) {
    let now = DEFERRED.with(|deferred| match &mut *deferred.borrow_mut() {
        Some(list) => {
            if !list.iter().any(|w| Arc::ptr_eq(w, &waker)) {
                list.push(waker);
            }
            None
        }
        None => Some(waker),
    });
    if let Some(waker) = now {
        waker.wake();
    }
}

/// Wakes every waker this thread deferred so far (none outside [`deferring_wakes`]).
#[cfg_attr(windows, allow(dead_code))] // the Windows stdio reader does not defer (yet)
pub(crate) fn wake_deferred() {
    let wakers = DEFERRED.with(|deferred| deferred.borrow_mut().as_mut().map(std::mem::take));
    for waker in wakers.into_iter().flatten() {
        waker.wake();
    }
}

/// Runs `body` with this thread's [`wake_soon`] deferred; what is still deferred when it ends
/// (returns or panics) is woken then. Nested, the outer scope keeps deferring.
#[cfg_attr(windows, allow(dead_code))]
pub(crate) fn deferring_wakes<R>(body: impl FnOnce() -> R) -> R {
    if DEFERRED.with(|deferred| deferred.borrow().is_some()) {
        return body();
    }
    DEFERRED.with(|deferred| *deferred.borrow_mut() = Some(Vec::new()));
    /// Wakes what is left and stops deferring, also when `body` panics.
    struct End;
    impl Drop for End {
        fn drop(&mut self) {
            wake_deferred();
            DEFERRED.with(|deferred| *deferred.borrow_mut() = None);
        }
    }
    let _end = End;
    body()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[derive(Default)]
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(&self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    impl Count {
        fn get(&self) -> usize {
            self.0.load(Ordering::SeqCst)
        }
    }

    #[test]
    fn outside_a_scope_a_wake_is_at_once() {
        let count = Arc::new(Count::default());
        wake_soon(count.clone());
        wake_soon(count.clone());
        assert_eq!(count.get(), 2);
    }

    #[test]
    fn inside_a_scope_each_waker_wakes_once_when_asked_and_at_the_end() {
        let (a, b) = (Arc::new(Count::default()), Arc::new(Count::default()));
        deferring_wakes(|| {
            wake_soon(a.clone());
            wake_soon(a.clone());
            wake_soon(b.clone());
            assert_eq!((a.get(), b.get()), (0, 0), "deferred");
            wake_deferred();
            assert_eq!((a.get(), b.get()), (1, 1), "once each");
            wake_deferred();
            assert_eq!((a.get(), b.get()), (1, 1), "nothing left to wake");
            deferring_wakes(|| wake_soon(a.clone())); // nested: still the outer's
            assert_eq!(a.get(), 1);
        });
        assert_eq!((a.get(), b.get()), (2, 1), "woken at the scope's end");
        wake_soon(a.clone());
        assert_eq!(a.get(), 3, "at once again after the scope");
    }

    #[test]
    fn a_panic_in_the_scope_still_wakes() {
        let count = Arc::new(Count::default());
        let inner = count.clone();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            deferring_wakes(|| {
                wake_soon(inner);
                panic!("routing failed");
            })
        }));
        assert!(outcome.is_err());
        assert_eq!(count.get(), 1);
        wake_soon(count.clone());
        assert_eq!(count.get(), 2, "no longer deferring");
    }

    #[test]
    fn other_threads_are_not_deferred() {
        let count = Arc::new(Count::default());
        deferring_wakes(|| {
            let other = count.clone();
            std::thread::spawn(move || wake_soon(other)).join().unwrap();
            assert_eq!(count.get(), 1);
        });
    }
}
