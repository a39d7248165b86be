//! Work a reactor handler may not do itself (host callbacks, anything that blocks), queued per
//! connection and run in order on the process's shared workers: one job at a time per queue,
//! so a connection's stderr lines reach its callback in the order the server wrote them.

use crate::sync::{lock, wait_until};
use crate::transport::workers::Workers;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

type Job = Box<dyn FnOnce() + Send>;

/// The workers every queue runs on, shared by the process.
fn shared_workers() -> &'static Arc<Workers> {
    static SHARED: OnceLock<Arc<Workers>> = OnceLock::new();
    SHARED.get_or_init(|| Arc::new(Workers::new("mcpc-io-worker")))
}

pub struct Serial {
    state: Mutex<State>,
    /// Signalled when the queue has no job running any more.
    idle: Condvar,
    /// At most this many jobs wait; more are dropped and counted.
    limit: usize,
    dropped: AtomicU64,
}

#[derive(Default)]
struct State {
    jobs: VecDeque<Job>,
    /// A worker runs this queue's jobs (or is about to).
    running: bool,
    /// The thread of that worker, once it has started.
    runner: Option<ThreadId>,
    closed: bool,
}

impl Serial {
    pub fn new(limit: usize) -> Arc<Serial> {
        Arc::new(Serial {
            state: Mutex::new(State::default()),
            idle: Condvar::new(),
            limit,
            dropped: AtomicU64::new(0),
        })
    }

    /// Queues `job` to run after those queued before. Never blocks; false when the job was
    /// dropped (the queue is full or closed).
    pub fn push(self: &Arc<Self>, job: impl FnOnce() + Send + 'static) -> bool {
        let start = {
            let mut state = lock(&self.state);
            if state.closed || state.jobs.len() >= self.limit {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                return false;
            }
            state.jobs.push_back(Box::new(job));
            !std::mem::replace(&mut state.running, true)
        };
        if start {
            let queue = self.clone();
            let on_failure = self.clone();
            let started = shared_workers().run(move || queue.run(), move |_| on_failure.stop());
            if started.is_err() {
                self.stop();
            }
        }
        true
    }

    /// Whether a job pushed now would be dropped for want of room.
    pub fn is_full(&self) -> bool {
        lock(&self.state).jobs.len() >= self.limit
    }

    /// How many jobs were dropped because the queue was full.
    #[cfg(test)]
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Drops the jobs not started and waits, at most `limit`, for the one running to end
    /// (not when called from it). No job starts after this.
    pub fn close(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        let mut state = lock(&self.state);
        state.closed = true;
        let dropped = std::mem::take(&mut state.jobs);
        let me = Some(std::thread::current().id());
        while state.running && state.runner != me {
            state = match wait_until(&self.idle, state, Some(deadline)) {
                Some(state) => state,
                None => break,
            };
        }
        // Dropped outside the lock (the jobs own host data).
        drop(dropped);
    }

    /// A worker's run: the queued jobs in order, until none is left.
    fn run(&self) {
        loop {
            let job = {
                let mut state = lock(&self.state);
                match state.jobs.pop_front() {
                    Some(job) => {
                        state.runner = Some(std::thread::current().id());
                        job
                    }
                    None => {
                        state.running = false;
                        state.runner = None;
                        self.idle.notify_all();
                        return;
                    }
                }
            };
            // A job's panic is its own (each job catches what it must report).
            let _ = crate::panic_guard::catch(job);
        }
    }

    /// No worker runs the queue (it could not start, or failed): what is queued is dropped.
    fn stop(&self) {
        let dropped = {
            let mut state = lock(&self.state);
            state.running = false;
            state.runner = None;
            std::mem::take(&mut state.jobs)
        };
        self.idle.notify_all();
        drop(dropped);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_run_in_order_and_a_full_queue_drops_and_counts() {
        let queue = Serial::new(4);
        let (gate_tx, gate_rx) = std::sync::mpsc::channel::<()>();
        let (ran_tx, ran_rx) = std::sync::mpsc::channel();
        assert!(queue.push(move || gate_rx.recv().unwrap()));
        for n in 0..3 {
            let ran = ran_tx.clone();
            assert!(queue.push(move || ran.send(n).unwrap()));
        }
        // The first job may not have been taken off the queue yet: one more may fit.
        let pushed = (0..2).filter(|_| queue.push(|| ())).count();
        assert!(pushed <= 1);
        assert!(queue.dropped() >= 1);
        gate_tx.send(()).unwrap();
        let got: Vec<i32> = (0..3)
            .map(|_| ran_rx.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        assert_eq!(got, vec![0, 1, 2]);
        queue.close(Duration::from_secs(10));
        assert!(!queue.push(|| ()), "a closed queue takes no job");
    }
}
