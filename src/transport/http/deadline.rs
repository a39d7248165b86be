//! A watchdog that aborts exchanges still running past their deadline.
//!
//! After a response arrives, its worker keeps reading the stream to its end, so the connection
//! can go back to the pool. A server should close the stream then; one that keeps it open would
//! keep the worker blocked, so each such read gets a deadline, and one thread (started on first
//! use, ended by `stop`) aborts the exchanges that pass theirs.

use super::connector::Exchange;
use crate::engine::limits::THREAD_WAIT_ON_CLOSE;
use crate::sync::{join_until, lock, spawn, wait};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::Instant;

#[derive(Default)]
pub struct Watchdog {
    state: Arc<(Mutex<State>, Condvar)>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

#[derive(Default)]
struct State {
    deadlines: Vec<(Instant, Weak<Exchange>)>,
    stopped: bool,
    /// When the thread will next look, if it sleeps with a deadline (`None`: until woken).
    sleeping_until: Option<Instant>,
    /// At this many deadlines, those of exchanges already over are dropped: a call's deadline
    /// is registered for every call that has one, and the thread only looks at the earliest.
    prune_at: usize,
}

impl Watchdog {
    /// Aborts `exchange` at `deadline` unless it has ended (been dropped) by then.
    pub fn abort_at(&self, deadline: Instant, exchange: &Arc<Exchange>) {
        let (state, changed) = &*self.state;
        let mut guard = lock(state);
        if guard.stopped {
            return;
        }
        if guard.deadlines.len() >= guard.prune_at {
            guard
                .deadlines
                .retain(|(_, exchange)| exchange.strong_count() > 0);
            guard.prune_at = (guard.deadlines.len() * 2).max(64);
        }
        guard.deadlines.push((deadline, Arc::downgrade(exchange)));
        // The thread sleeps until the earliest deadline it knows; only an earlier one needs
        // to wake it (deadlines mostly come in rising order, so this saves a wake-up per call).
        if guard.sleeping_until.is_none_or(|until| deadline < until) {
            changed.notify_all();
        }
        drop(guard);
        self.start();
    }

    /// Ends the thread; exchanges still waiting are left to their owners. One busy aborting
    /// an exchange past close's bound for threads is let go.
    pub fn stop(&self) {
        let (state, changed) = &*self.state;
        lock(state).stopped = true;
        changed.notify_all();
        if let Some(thread) = lock(&self.thread).take() {
            join_until(thread, Instant::now() + THREAD_WAIT_ON_CLOSE);
        }
    }

    fn start(&self) {
        let mut thread = lock(&self.thread);
        if thread.is_some() {
            return;
        }
        let state = self.state.clone();
        // Without the thread, streams that stay open keep their worker until close: not fatal.
        *thread = spawn("mcpc-http-watchdog", move || watch(&state), |_| ()).ok();
    }
}

fn watch(state: &(Mutex<State>, Condvar)) {
    let (state, changed) = state;
    let mut guard = lock(state);
    // Every decision to wait is made under the lock the wait releases, so neither `stop` nor a
    // new deadline can slip in unseen between looking and waiting.
    while !guard.stopped {
        let now = Instant::now();
        let mut overdue = Vec::new();
        guard.deadlines.retain(|(deadline, exchange)| {
            if exchange.strong_count() == 0 {
                return false;
            }
            if *deadline <= now {
                overdue.extend(exchange.upgrade());
                return false;
            }
            true
        });
        if !overdue.is_empty() {
            // Abort outside the lock (it takes the exchange's own), then look again.
            drop(guard);
            overdue.iter().for_each(|exchange| exchange.abort());
            guard = lock(state);
            continue;
        }
        let next = guard.deadlines.iter().map(|(deadline, _)| *deadline).min();
        guard.sleeping_until = next;
        guard = match next {
            Some(next) => {
                let wait = next.saturating_duration_since(now);
                changed
                    .wait_timeout(guard, wait)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
            None => wait(changed, guard),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn an_overdue_exchange_is_aborted() {
        let watchdog = Watchdog::default();
        let exchange = Exchange::new(None);
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
        let live = Exchange::new(None);
        watchdog.abort_at(Instant::now() + Duration::from_secs(3600), &live);
        for _ in 0..10_000 {
            let exchange = Exchange::new(None);
            watchdog.abort_at(Instant::now() + Duration::from_secs(3600), &exchange);
        }
        let kept = lock(&watchdog.state.0).deadlines.len();
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
            let exchange = Exchange::new(None);
            watchdog.abort_at(Instant::now() + Duration::from_secs(3600), &exchange);
            drop(exchange);
            watchdog.stop();
        }
        assert!(start.elapsed() < Duration::from_secs(10));
    }
}
