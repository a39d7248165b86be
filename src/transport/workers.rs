//! The worker threads that run blocking exchanges off the caller's thread, for the transports
//! that need them: HTTP (one exchange per request in flight, and the standalone stream) and
//! custom transports (one host round trip per request in flight). A worker that finishes waits a while for the next job before it ends, so a steady stream of
//! calls reuses threads instead of paying a thread start and end per request (a large share of
//! a sequential HTTP call's CPU, see docs/benchmarks.md). Close waits for the jobs in progress, then lets the idle workers go.

use crate::error::{Error, Result};
use crate::sync::{lock, spawn, wait_until};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long a worker with nothing to do stays for the next job.
const KEEP_IDLE: Duration = Duration::from_secs(5);

type Job = Box<dyn FnOnce() + Send>;

pub struct Workers {
    /// The name of every worker thread.
    name: &'static str,
    /// Jobs in progress, so close can wait for them.
    running: Mutex<usize>,
    finished: Condvar,
    /// Workers waiting for a job, the one that went idle last on top: a steady stream of
    /// calls keeps using the same one or two threads. A job is handed to a worker under this
    /// lock, so a worker leaving on its timeout either is still here or has its job.
    idle: Mutex<Vec<Arc<Slot>>>,
}

/// Where an idle worker waits for its next job: `Some(None)` tells it to end.
#[derive(Default)]
struct Slot {
    next: Mutex<Option<Option<Job>>>,
    handed: Condvar,
}

impl Workers {
    /// A pool whose threads are all called `name`.
    pub fn new(name: &'static str) -> Workers {
        Workers {
            name,
            running: Mutex::new(0),
            finished: Condvar::new(),
            idle: Mutex::new(Vec::new()),
        }
    }

    /// Runs `job` on an idle worker, or on a new one when none is idle. If `job` panics,
    /// `on_panic` gets the INTERNAL_ERROR, to end the call the job leaves pending.
    pub fn run(
        self: &Arc<Self>,
        job: impl FnOnce() + Send + 'static,
        on_panic: impl FnOnce(Error) + Send + 'static,
    ) -> Result<()> {
        *lock(&self.running) += 1;
        let job: Job = Box::new(move || {
            if let Err(error) = crate::panic_guard::catch(job) {
                // Library code too: if it panics as well, the worker still goes on.
                let _ = crate::panic_guard::catch(|| on_panic(error));
            }
        });
        {
            let mut idle = lock(&self.idle);
            if let Some(worker) = idle.pop() {
                *lock(&worker.next) = Some(Some(job));
                worker.handed.notify_one();
                return Ok(());
            }
        }
        let workers = self.clone();
        // Jobs catch their own panics (above); nothing else here can panic.
        spawn(self.name, move || workers.work(job), |_| ())
            .map(|_| ())
            .inspect_err(|_| self.finish())
    }

    /// Waits until no job is in progress, at most `limit` (`None`: as long as it takes).
    pub fn wait(&self, limit: Option<Duration>) {
        // A limit too long to represent (Duration::MAX) is none.
        let deadline = limit.and_then(|limit| Instant::now().checked_add(limit));
        let mut running = lock(&self.running);
        while *running > 0 {
            running = match wait_until(&self.finished, running, deadline) {
                Some(running) => running,
                None => return,
            };
        }
    }

    /// Ends the idle workers now rather than when they time out.
    pub fn stop_idle(&self) {
        for worker in lock(&self.idle).drain(..) {
            *lock(&worker.next) = Some(None);
            worker.handed.notify_one();
        }
    }

    fn work(&self, first: Job) {
        let me = Arc::new(Slot::default());
        let mut job = first;
        loop {
            job();
            self.finish();
            lock(&self.idle).push(me.clone());
            job = match self.next_job(&me) {
                Some(next) => next,
                None => return,
            };
        }
    }

    /// Waits for a job handed to `me`; `None` when told to end or idle for too long.
    fn next_job(&self, me: &Arc<Slot>) -> Option<Job> {
        let deadline = Instant::now() + KEEP_IDLE;
        let mut next = lock(&me.next);
        loop {
            if let Some(handed) = next.take() {
                return handed;
            }
            next = match wait_until(&me.handed, next, Some(deadline)) {
                Some(next) => next,
                None => break,
            };
        }
        // Timed out: leave, unless a job was handed over meanwhile (then we are off the list).
        let mut idle = lock(&self.idle);
        match idle.iter().position(|worker| Arc::ptr_eq(worker, me)) {
            Some(at) => {
                idle.remove(at);
                None
            }
            None => lock(&me.next).take().flatten(),
        }
    }

    fn finish(&self) {
        *lock(&self.running) -= 1;
        self.finished.notify_all();
    }
}
