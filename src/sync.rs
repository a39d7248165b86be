//! The concurrency idioms every module uses, each written once:
//! - [`lock`] takes a mutex whether or not a thread panicked while holding it. A panic in the
//!   library is caught and reported where it happens (`panic_guard`); the threads left must
//!   still be able to fail their calls and shut down, so poisoning is not an error here.
//! - [`wait`] and [`wait_until`] wait on a condition variable, without a limit or until a
//!   deadline, with the same tolerance.
//! - [`spawn`] starts a named library thread behind the panic guard.
//! - [`join_until`] joins one within close's bound, and lets it go past it.

use crate::error::{Error, Result};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Starts a library thread called `name` that runs `body` behind the panic guard: if `body`
/// panics, `on_panic` gets the INTERNAL_ERROR on that thread, to end what it leaves pending.
pub(crate) fn spawn(
    name: &str,
    body: impl FnOnce() + Send + 'static,
    on_panic: impl FnOnce(Error) + Send + 'static,
) -> Result<JoinHandle<()>> {
    crate::panic_guard::spawn(name, body, on_panic)
        .map_err(|e| Error::transport(format!("cannot start the {name} thread: {e}")))
}

/// Joins `thread` if it ends by `deadline`; past it the thread is let go (it is stuck in a host
/// callback or a system call and ends on its own later, holding only what it owns). Never joins
/// the current thread (a callback may close its client from one of ours). Returns whether the
/// thread was joined. (Only Windows keeps threads per connection now.)
#[cfg_attr(not(windows), allow(dead_code))]
pub(crate) fn join_until(thread: JoinHandle<()>, deadline: Instant) -> bool {
    if thread.thread().id() == std::thread::current().id() {
        return false;
    }
    // Close is no hot path: look often at first (threads mostly end at once), then less.
    let mut pause = Duration::from_micros(100);
    while !thread.is_finished() {
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            return false;
        };
        std::thread::sleep(pause.min(left));
        pause = (pause * 2).min(Duration::from_millis(10));
    }
    let _ = thread.join();
    true
}

/// Locks `mutex`, also when a panicking thread poisoned it.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Waits on `condvar` until notified (or woken spuriously: callers loop on their condition).
pub(crate) fn wait<'a, T>(condvar: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    condvar.wait(guard).unwrap_or_else(|e| e.into_inner())
}

/// Waits on `condvar` until notified or `deadline` (`None`: no deadline). `None` when the
/// deadline had already passed, so nothing was waited for; callers loop on their condition and
/// stop waiting then.
pub(crate) fn wait_until<'a, T>(
    condvar: &Condvar,
    guard: MutexGuard<'a, T>,
    deadline: Option<Instant>,
) -> Option<MutexGuard<'a, T>> {
    let Some(deadline) = deadline else {
        return Some(wait(condvar, guard));
    };
    let left = deadline.checked_duration_since(Instant::now())?;
    if left.is_zero() {
        return None;
    }
    Some(
        condvar
            .wait_timeout(guard, left)
            .unwrap_or_else(|e| e.into_inner())
            .0,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn a_poisoned_mutex_is_still_taken() {
        let mutex = Arc::new(Mutex::new(1));
        let poisoner = mutex.clone();
        let _ = std::thread::spawn(move || {
            let _guard = poisoner.lock().unwrap();
            panic!("poison it");
        })
        .join();
        assert!(mutex.is_poisoned());
        assert_eq!(*lock(&mutex), 1);
    }

    #[test]
    fn join_until_joins_a_thread_that_ends_and_lets_one_that_does_not_go() {
        let ended = std::thread::spawn(|| ());
        assert!(join_until(ended, Instant::now() + Duration::from_secs(10)));
        let (release, released) = crossbeam_channel::bounded::<()>(0);
        let stuck = std::thread::spawn(move || {
            let _ = released.recv();
        });
        let start = Instant::now();
        assert!(!join_until(stuck, start + Duration::from_millis(50)));
        assert!(start.elapsed() < Duration::from_secs(5));
        drop(release);
    }

    #[test]
    fn wait_until_a_passed_deadline_does_not_wait() {
        let (mutex, condvar) = (Mutex::new(()), Condvar::new());
        let past = Instant::now() - Duration::from_millis(1);
        assert!(wait_until(&condvar, lock(&mutex), Some(past)).is_none());
        let soon = Instant::now() + Duration::from_millis(20);
        let mut guard = lock(&mutex);
        while let Some(next) = wait_until(&condvar, guard, Some(soon)) {
            guard = next;
        }
        assert!(Instant::now() >= soon);
    }
}
