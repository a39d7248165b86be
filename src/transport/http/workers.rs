//! The threads that run HTTP exchanges (one per request in flight, and the standalone stream).
//! A worker that finishes waits a while for the next job before it ends, so a steady stream of
//! calls reuses threads: starting and ending a thread per request was 13% of a sequential HTTP
//! call's CPU. Close waits for the jobs in progress, then lets the idle workers go.

use crate::error::{Error, Result};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long a worker with nothing to do stays for the next job.
const KEEP_IDLE: Duration = Duration::from_secs(5);

type Job = Box<dyn FnOnce() + Send>;

pub struct Workers {
    /// Jobs in progress, so close can wait for them.
    running: Mutex<usize>,
    finished: Condvar,
    /// Workers waiting for a job and not yet handed one. A job is queued for an idle worker
    /// under this lock, so a worker leaving on its timeout either sees the job or was not
    /// counted on for it.
    idle: Mutex<usize>,
    /// `None` tells an idle worker to end.
    jobs: Sender<Option<Job>>,
    waiting: Receiver<Option<Job>>,
}

impl Default for Workers {
    fn default() -> Workers {
        let (jobs, waiting) = crossbeam_channel::unbounded();
        Workers {
            running: Mutex::new(0),
            finished: Condvar::new(),
            idle: Mutex::new(0),
            jobs,
            waiting,
        }
    }
}

impl Workers {
    /// Runs `job` on an idle worker, or on a new one when none is idle.
    pub fn run(self: &Arc<Self>, job: impl FnOnce() + Send + 'static) -> Result<()> {
        *lock(&self.running) += 1;
        let job: Job = Box::new(job);
        {
            let mut idle = lock(&self.idle);
            if *idle > 0 {
                *idle -= 1;
                // Unbounded: never blocks, and an idle worker is there to take it.
                let _ = self.jobs.send(Some(job));
                return Ok(());
            }
        }
        let workers = self.clone();
        std::thread::Builder::new()
            .name("mcpc-http".into())
            .spawn(move || workers.work(job))
            .map(|_| ())
            .map_err(|e| {
                self.finish();
                Error::transport(format!("cannot start a thread: {e}"))
            })
    }

    /// Waits until no job is in progress, at most `limit`.
    pub fn wait(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        let mut running = lock(&self.running);
        while *running > 0 {
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            running = self
                .finished
                .wait_timeout(running, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Ends the idle workers now rather than when they time out.
    pub fn stop_idle(&self) {
        let mut idle = lock(&self.idle);
        for _ in 0..*idle {
            let _ = self.jobs.send(None);
        }
        *idle = 0;
    }

    fn work(&self, first: Job) {
        let mut job = first;
        loop {
            job();
            self.finish();
            *lock(&self.idle) += 1;
            job = match self.waiting.recv_timeout(KEEP_IDLE) {
                Ok(Some(next)) => next,
                Ok(None) | Err(RecvTimeoutError::Disconnected) => return,
                Err(RecvTimeoutError::Timeout) => {
                    let mut idle = lock(&self.idle);
                    match self.waiting.try_recv() {
                        // Queued for us as the wait ran out: ours to run.
                        Ok(Some(next)) => next,
                        Ok(None) => return,
                        Err(_) => {
                            *idle -= 1;
                            return;
                        }
                    }
                }
            };
        }
    }

    fn finish(&self) {
        *lock(&self.running) -= 1;
        self.finished.notify_all();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
