//! A call's own progress callback, and which of its runs are still queued or running, so that
//! the call waits for its own callbacks only (never for unrelated ones) and its callback never
//! runs after the call has returned (its userdata may be gone by then).

use crate::handlers::{Progress, ProgressHandler};
use crate::sync::{lock, wait};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::ThreadId;

/// The per-call progress callback with its bookkeeping.
#[derive(Clone)]
pub struct OwnProgress {
    handler: ProgressHandler,
    pending: Arc<Pending>,
}

#[derive(Default)]
struct Pending {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    queued: usize,
    running: Option<ThreadId>,
    /// The call has ended: queued runs are skipped.
    dropped: bool,
}

/// One queued run of the callback. Dropped without running (the queue was full, the client
/// closed), it is no longer waited for.
pub struct Ticket {
    own: OwnProgress,
    counted: bool,
}

impl OwnProgress {
    pub fn new(handler: ProgressHandler) -> Self {
        OwnProgress {
            handler,
            pending: Arc::default(),
        }
    }

    /// Counts one run as queued.
    pub fn ticket(&self) -> Ticket {
        self.pending.lock().queued += 1;
        Ticket {
            own: self.clone(),
            counted: true,
        }
    }

    /// Called as the call returns. A call that ended by itself (`wait_for_queued`: answered, or
    /// failed by the server) waits for its runs still queued (unless `can_wait` is false: the
    /// call runs on the callback thread, behind them), then they are dropped. A cancelled,
    /// timed-out or closed call drops the queued runs at once and waits only for a run already
    /// in progress on another thread.
    pub fn finish(&self, wait_for_queued: bool, can_wait: bool) {
        let me = std::thread::current().id();
        let mut state = self.pending.lock();
        if wait_for_queued && can_wait {
            while state.queued > 0 || state.running.is_some_and(|t| t != me) {
                state = self.pending.wait(state);
            }
        }
        state.dropped = true;
        while state.running.is_some_and(|t| t != me) {
            state = self.pending.wait(state);
        }
    }
}

impl Ticket {
    /// Runs the callback, unless its call has ended.
    pub fn run(mut self, progress: &Progress) {
        let pending = self.own.pending.clone();
        {
            let mut state = pending.lock();
            state.queued -= 1;
            self.counted = false;
            if state.dropped {
                pending.changed.notify_all();
                return;
            }
            state.running = Some(std::thread::current().id());
        }
        // Marks the run over even if the callback panics.
        let _over = RunOver(&pending);
        (self.own.handler)(progress);
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if self.counted {
            self.own.pending.lock().queued -= 1;
            self.own.pending.changed.notify_all();
        }
    }
}

struct RunOver<'a>(&'a Pending);

impl Drop for RunOver<'_> {
    fn drop(&mut self) {
        self.0.lock().running = None;
        self.0.changed.notify_all();
    }
}

impl Pending {
    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    fn wait<'a>(&self, state: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        wait(&self.changed, state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    fn counting() -> (OwnProgress, Arc<AtomicUsize>) {
        let runs = Arc::new(AtomicUsize::new(0));
        let counter = runs.clone();
        let handler: ProgressHandler = Arc::new(move |_: &Progress| {
            counter.fetch_add(1, Ordering::SeqCst);
        });
        (OwnProgress::new(handler), runs)
    }

    fn progress() -> Progress {
        Progress {
            token: serde_json::Value::Null,
            progress: 1.0,
            total: None,
            message: None,
        }
    }

    #[test]
    fn a_cancelled_call_drops_its_queued_runs() {
        let (own, runs) = counting();
        let ticket = own.ticket();
        own.finish(false, true);
        ticket.run(&progress());
        assert_eq!(runs.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn an_answered_call_waits_for_its_queued_runs() {
        let (own, runs) = counting();
        let ticket = own.ticket();
        let runner = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            ticket.run(&progress());
        });
        own.finish(true, true);
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        runner.join().unwrap();
    }

    #[test]
    fn a_dropped_ticket_is_not_waited_for() {
        let (own, _runs) = counting();
        drop(own.ticket());
        let start = Instant::now();
        own.finish(true, true);
        assert!(start.elapsed() < Duration::from_secs(5));
    }
}
