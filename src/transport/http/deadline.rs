//! A watchdog that aborts exchanges still running past their deadline.
//!
//! After a response arrives, its worker keeps reading the stream to its end, so the connection
//! can go back to the pool. A server should close the stream then; one that keeps it open would
//! keep the worker blocked, so each such read gets a deadline, and one thread for the whole
//! process (started on first use, ended once it has had no deadline to watch for `KEEP_ALIVE`)
//! aborts the exchanges that pass theirs. Each connection has a [`Watchdog`] handle to it;
//! stopping the handle stops the watch of that connection's exchanges only.

use super::connector::Exchange;
use crate::sync::{lock, spawn};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

/// How long the thread stays with no deadline to watch before it ends.
const KEEP_ALIVE: Duration = Duration::from_secs(2);

/// One connection's use of the process's watchdog thread.
#[derive(Default)]
pub struct Watchdog {
    /// Set by `stop`: the thread forgets this connection's deadlines.
    stopped: Arc<AtomicBool>,
}

/// The deadlines of every connection, and the thread's state.
#[derive(Default)]
struct Deadlines {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    deadlines: Vec<Entry>,
    /// The thread runs (or is starting).
    running: bool,
    /// When the thread will next look, if it sleeps with a deadline (`None`: until woken).
    sleeping_until: Option<Instant>,
    /// At this many deadlines, those of exchanges already over are dropped: a call's deadline
    /// is registered for every call that has one, and the thread only looks at the earliest.
    prune_at: usize,
}

struct Entry {
    deadline: Instant,
    exchange: Weak<Exchange>,
    /// The connection's `Watchdog::stopped`.
    stopped: Arc<AtomicBool>,
}

impl Entry {
    fn is_over(&self) -> bool {
        self.exchange.strong_count() == 0 || self.stopped.load(Ordering::Acquire)
    }
}

fn deadlines() -> &'static Arc<Deadlines> {
    static DEADLINES: OnceLock<Arc<Deadlines>> = OnceLock::new();
    DEADLINES.get_or_init(Arc::default)
}

impl Watchdog {
    /// Aborts `exchange` at `deadline` unless it has ended (been dropped), or this watchdog
    /// was stopped, by then.
    pub fn abort_at(&self, deadline: Instant, exchange: &Arc<Exchange>) {
        if self.stopped.load(Ordering::Acquire) {
            return;
        }
        let shared = deadlines();
        let mut guard = lock(&shared.state);
        if guard.deadlines.len() >= guard.prune_at {
            guard.deadlines.retain(|entry| !entry.is_over());
            guard.prune_at = (guard.deadlines.len() * 2).max(64);
        }
        guard.deadlines.push(Entry {
            deadline,
            exchange: Arc::downgrade(exchange),
            stopped: self.stopped.clone(),
        });
        // The thread sleeps until the earliest deadline it knows; only an earlier one needs
        // to wake it (deadlines mostly come in rising order, so this saves a wake-up per call).
        if guard.sleeping_until.is_none_or(|until| deadline < until) {
            shared.changed.notify_all();
        }
        if !guard.running {
            guard.running = true;
            drop(guard);
            let watched = shared.clone();
            // Without the thread, streams that stay open keep their worker until close: not
            // fatal. The next deadline tries again.
            if spawn("mcpc-http-watchdog", move || watch(&watched), |_| ()).is_err() {
                lock(&shared.state).running = false;
            }
        }
    }

    /// Forgets this connection's deadlines: its exchanges still waiting are left to their
    /// owners. Never waits.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
    }
}

fn watch(shared: &Deadlines) {
    let mut guard = lock(&shared.state);
    let mut idle_since = Instant::now();
    // Every decision to wait is made under the lock the wait releases, so no new deadline can
    // slip in unseen between looking and waiting.
    loop {
        let now = Instant::now();
        let mut overdue = Vec::new();
        guard.deadlines.retain(|entry| {
            if entry.is_over() {
                return false;
            }
            if entry.deadline <= now {
                overdue.extend(entry.exchange.upgrade());
                return false;
            }
            true
        });
        if !overdue.is_empty() {
            // Abort outside the lock (it takes the exchange's own), then look again.
            drop(guard);
            overdue.iter().for_each(|exchange| exchange.abort());
            guard = lock(&shared.state);
            continue;
        }
        let next = match guard.deadlines.iter().map(|entry| entry.deadline).min() {
            Some(next) => {
                idle_since = now;
                next
            }
            None if now >= idle_since + KEEP_ALIVE => {
                guard.running = false;
                guard.sleeping_until = None;
                return;
            }
            None => idle_since + KEEP_ALIVE,
        };
        guard.sleeping_until = Some(next);
        let wait = next.saturating_duration_since(now);
        guard = shared
            .changed
            .wait_timeout(guard, wait)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn an_overdue_exchange_is_aborted() {
        let watchdog = Watchdog::default();
        let exchange = Exchange::with(None, false);
        watchdog.abort_at(Instant::now() + Duration::from_millis(20), &exchange);
        assert!(!exchange.is_aborted());
        let deadline = Instant::now() + Duration::from_secs(2);
        while !exchange.is_aborted() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        assert!(exchange.is_aborted());
        watchdog.stop();
    }

    /// A deadline per call, the calls long over before their deadlines: the list keeps only
    /// the live ones (and a margin), not one entry per call ever made.
    #[test]
    fn deadlines_of_ended_exchanges_do_not_pile_up() {
        let watchdog = Watchdog::default();
        let live = Exchange::with(None, false);
        watchdog.abort_at(Instant::now() + Duration::from_secs(3600), &live);
        for _ in 0..10_000 {
            let exchange = Exchange::with(None, false);
            watchdog.abort_at(Instant::now() + Duration::from_secs(3600), &exchange);
        }
        let kept = lock(&deadlines().state)
            .deadlines
            .iter()
            .filter(|entry| Arc::ptr_eq(&entry.stopped, &watchdog.stopped))
            .count();
        assert!(kept <= 128, "{kept} deadlines kept");
        assert!(!live.is_aborted());
        watchdog.stop();
    }

    #[test]
    fn stop_returns_promptly_whatever_is_pending() {
        // A far deadline whose exchange is already gone: the thread would wait with no
        // timeout at all, and only `stop` wakes it.
        let start = Instant::now();
        for _ in 0..300 {
            let watchdog = Watchdog::default();
            let exchange = Exchange::with(None, false);
            watchdog.abort_at(Instant::now() + Duration::from_secs(3600), &exchange);
            drop(exchange);
            watchdog.stop();
        }
        assert!(start.elapsed() < Duration::from_secs(10));
    }
}
