//! The worker threads that run blocking exchanges off the caller's thread, for the transports
//! that need them: HTTP (one exchange per request in flight, and the standalone stream's turns
//! of reading, between which it waits on the reactor) and
//! custom transports (one host round trip per request in flight). A worker that finishes waits a while for the next job before it ends, so a steady stream of
//! calls reuses threads instead of paying a thread start and end per request (a large share of
//! a sequential HTTP call's CPU, see docs/benchmarks.md). Close waits for the jobs in progress, then lets the idle workers go.
//!
//! Idle workers are shared by every connection of the process that uses the same thread name:
//! a thousand clients that made a call each a moment ago hold the few workers the calls needed
//! at once, not one each. Each connection still counts its own jobs in progress.

use crate::error::{Error, Result};
use crate::sync::{lock, spawn, wait_until};
use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
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
    /// Workers waiting for a job (shared by every pool of the same name), the one that went
    /// idle last on top: a steady stream of calls keeps using the same one or two threads. A
    /// job is handed to a worker under this lock, so a worker leaving on its timeout either is
    /// still here or has its job.
    idle: Arc<Idle>,
}

type Idle = Mutex<Vec<Arc<Slot>>>;

/// The idle workers of the process named `name`.
fn idle_named(name: &'static str) -> Arc<Idle> {
    static BY_NAME: OnceLock<Mutex<HashMap<&'static str, Arc<Idle>>>> = OnceLock::new();
    let mut by_name = lock(BY_NAME.get_or_init(Mutex::default));
    by_name.entry(name).or_default().clone()
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
            idle: idle_named(name),
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
        // The job counts itself done in its own pool: the worker may serve any pool next.
        let pool = self.clone();
        let job: Job = Box::new(move || {
            if let Err(error) = crate::panic_guard::catch(job) {
                // Library code too: if it panics as well, the worker still goes on.
                let _ = crate::panic_guard::catch(|| on_panic(error));
            }
            pool.finish();
        });
        {
            let mut idle = lock(&self.idle);
            if let Some(worker) = idle.pop() {
                *lock(&worker.next) = Some(Some(job));
                worker.handed.notify_one();
                return Ok(());
            }
        }
        let idle = self.idle.clone();
        // Jobs catch their own panics (above); nothing else here can panic.
        spawn(self.name, move || work(&idle, job), |_| ())
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

    /// Ends the idle workers now rather than when they time out (those of the other pools of
    /// the same name too: they start again when needed).
    pub fn stop_idle(&self) {
        for worker in lock(&self.idle).drain(..) {
            *lock(&worker.next) = Some(None);
            worker.handed.notify_one();
        }
    }

    fn finish(&self) {
        *lock(&self.running) -= 1;
        self.finished.notify_all();
    }
}

/// A worker: runs its first job, then the jobs handed to it while it is idle in `idle`.
fn work(idle: &Idle, first: Job) {
    let me = Arc::new(Slot::default());
    let mut job = first;
    loop {
        job();
        lock(idle).push(me.clone());
        job = match next_job(idle, &me) {
            Some(next) => next,
            None => return,
        };
    }
}

/// Waits for a job handed to `me`; `None` when told to end or idle for too long.
fn next_job(idle_workers: &Idle, me: &Arc<Slot>) -> Option<Job> {
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
    let mut idle = lock(idle_workers);
    match idle.iter().position(|worker| Arc::ptr_eq(worker, me)) {
        Some(at) => {
            idle.remove(at);
            None
        }
        None => lock(&me.next).take().flatten(),
    }
}
