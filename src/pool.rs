//! The process-wide pools of threads that run the library's work off the caller's and the
//! reader's threads: one for host callbacks ([`callbacks`], threads named `mcpc-pool`), one for
//! started requests' completions ([`completions`], `mcpc-complete`), one for
//! the library's own writes, cancel notices and answers to the server ([`io`], `mcpc-io`), so
//! that callbacks blocked in host code can never hold up a cancel notice or an answer the
//! server waits for. A connection holds no thread of its own for that; it holds strands.
//!
//! A [`Strand`] is a serial queue: its jobs run in the order they were submitted, one at a
//! time, each on whichever pool thread is free. Different strands run at the same time. A
//! thread takes a strand, runs a few of its jobs, and puts it back at the end of the line if
//! more are waiting, so one busy strand does not starve the others.
//!
//! Threads start when work arrives and no thread is free (a host callback may block for as
//! long as it likes: the others' work goes on on other threads), up to [`MAX_THREADS`]. At the
//! cap, work waits in line until a thread is free again. A thread with nothing to do for
//! [`KEEP_ALIVE`] ends, so an idle process holds no pool thread at all.
//!
//! A job that panics is caught and the thread goes on with the next one.

use crate::error::{Error, Result};
use crate::sync::{lock, spawn, wait_until};
use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The most threads each shared pool runs at once. Past it, work waits for a thread to be
/// free: a host with this many callbacks blocked at once holds up the callbacks of other
/// connections (never their cancel notices or answers, which have a pool of their own).
pub const MAX_THREADS: usize = 64;

/// How long a pool thread with nothing to do waits for work before it ends.
pub const KEEP_ALIVE: Duration = Duration::from_secs(2);

/// How many jobs of one strand a thread runs before it lets the next strand in line run.
const JOBS_PER_TURN: usize = 16;

type Job = Box<dyn FnOnce() + Send>;

thread_local! {
    /// The strand whose job runs on this thread now (0: none).
    static CURRENT_STRAND: Cell<usize> = const { Cell::new(0) };
}

/// A set of threads that run strands.
pub struct Pool {
    /// The name of every thread of the pool.
    name: &'static str,
    state: Mutex<PoolState>,
    work_ready: Condvar,
    max_threads: usize,
    keep_alive: Duration,
}

#[derive(Default)]
struct PoolState {
    /// Strands with jobs waiting and no thread on them, in the order they got work.
    ready: VecDeque<Arc<Queue>>,
    threads: usize,
    /// Threads waiting for work.
    idle: usize,
}

/// One strand's jobs.
struct Queue {
    id: usize,
    jobs: Mutex<Jobs>,
}

#[derive(Default)]
struct Jobs {
    waiting: VecDeque<Job>,
    /// In the pool's line or on a thread: a strand is never run by two threads at once.
    scheduled: bool,
}

/// A serial queue of jobs on a pool.
pub struct Strand {
    queue: Arc<Queue>,
    pool: Arc<Pool>,
}

/// The pool that runs every connection's host callbacks.
pub fn callbacks() -> &'static Arc<Pool> {
    static CALLBACKS: OnceLock<Arc<Pool>> = OnceLock::new();
    CALLBACKS.get_or_init(|| Pool::new("mcpc-pool", MAX_THREADS, KEEP_ALIVE))
}

/// The pool that runs every client's started requests' completions, continuations and input
/// handlers (its strands are the clients' completion threads, `engine::completer`): apart from
/// the callbacks' pool, as a client's own completion thread was, so that callbacks blocked in
/// host code never hold up a completion, nor a completion a callback.
pub fn completions() -> &'static Arc<Pool> {
    static COMPLETIONS: OnceLock<Arc<Pool>> = OnceLock::new();
    COMPLETIONS.get_or_init(|| Pool::new("mcpc-complete", MAX_THREADS, KEEP_ALIVE))
}

/// The pool that runs every connection's cancel notices and answers (no host code but a
/// custom transport's, which is expected to return promptly).
pub fn io() -> &'static Arc<Pool> {
    static IO: OnceLock<Arc<Pool>> = OnceLock::new();
    IO.get_or_init(|| Pool::new("mcpc-io", MAX_THREADS, KEEP_ALIVE))
}

impl Pool {
    pub fn new(name: &'static str, max_threads: usize, keep_alive: Duration) -> Arc<Pool> {
        Arc::new(Pool {
            name,
            state: Mutex::new(PoolState::default()),
            work_ready: Condvar::new(),
            max_threads: max_threads.max(1),
            keep_alive,
        })
    }

    /// How many threads the pool has now.
    #[cfg(test)]
    pub fn threads(&self) -> usize {
        lock(&self.state).threads
    }

    /// Puts `queue` in line; starts a thread when none is free to take it.
    fn schedule(self: &Arc<Self>, queue: Arc<Queue>) -> Result<()> {
        let mut state = lock(&self.state);
        state.ready.push_back(queue);
        // Idle threads already woken for earlier strands still count as idle until they take
        // one: a thread is started only when the line is longer than the threads free for it.
        if state.ready.len() <= state.idle || state.threads >= self.max_threads {
            self.work_ready.notify_one();
            return Ok(());
        }
        state.threads += 1;
        drop(state);
        let pool = self.clone();
        // Jobs catch their own panics; nothing else on the thread can panic.
        let started = spawn(self.name, move || pool.work(), |_| ());
        if let Err(error) = started {
            let mut state = lock(&self.state);
            state.threads -= 1;
            if state.threads == 0 {
                // Nobody will take the work: it waits for the next strand that starts a thread.
                return Err(error);
            }
        }
        Ok(())
    }

    /// A pool thread: runs strands until none has come for `keep_alive`.
    fn work(&self) {
        while let Some(queue) = self.next_strand() {
            CURRENT_STRAND.with(|current| current.set(queue.id));
            let more = queue.run_turn();
            CURRENT_STRAND.with(|current| current.set(0));
            if more {
                lock(&self.state).ready.push_back(queue);
            }
        }
    }

    /// The next strand in line, waiting up to `keep_alive` for one; `None`: the thread ends.
    fn next_strand(&self) -> Option<Arc<Queue>> {
        let mut state = lock(&self.state);
        let mut deadline = Instant::now() + self.keep_alive;
        loop {
            if let Some(queue) = state.ready.pop_front() {
                return Some(queue);
            }
            state.idle += 1;
            let woken = wait_until(&self.work_ready, state, Some(deadline));
            let timed_out = woken.is_none();
            state = woken.unwrap_or_else(|| lock(&self.state));
            state.idle -= 1;
            if timed_out && state.ready.is_empty() {
                state.threads -= 1;
                return None;
            }
            if timed_out {
                deadline = Instant::now() + self.keep_alive;
            }
        }
    }
}

impl Queue {
    /// Runs up to `JOBS_PER_TURN` jobs; true when more are waiting (the strand stays
    /// scheduled and goes back in line), false when it ran dry (it is no longer scheduled).
    fn run_turn(&self) -> bool {
        for _ in 0..JOBS_PER_TURN {
            let job = {
                let mut jobs = lock(&self.jobs);
                match jobs.waiting.pop_front() {
                    Some(job) => job,
                    None => {
                        jobs.scheduled = false;
                        return false;
                    }
                }
            };
            // A panicking job must not take the strand, or the thread, down with it.
            let _ = crate::panic_guard::catch(job);
        }
        let mut jobs = lock(&self.jobs);
        jobs.scheduled = !jobs.waiting.is_empty();
        jobs.scheduled
    }
}

impl Strand {
    /// A strand on `pool`.
    pub fn on(pool: &Arc<Pool>) -> Strand {
        static NEXT_ID: AtomicUsize = AtomicUsize::new(1);
        Strand {
            queue: Arc::new(Queue {
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                jobs: Mutex::default(),
            }),
            pool: pool.clone(),
        }
    }

    /// Queues `job` to run after the jobs submitted before it. Never waits for a job to run.
    /// Fails only when the pool has no thread and cannot start one (the job stays queued and
    /// runs once a thread is started for any strand).
    pub fn submit(&self, job: impl FnOnce() + Send + 'static) -> Result<()> {
        let needs_a_thread = {
            let mut jobs = lock(&self.queue.jobs);
            jobs.waiting.push_back(Box::new(job));
            !std::mem::replace(&mut jobs.scheduled, true)
        };
        if needs_a_thread {
            return self.pool.schedule(self.queue.clone()).map_err(|error| {
                Error::transport(format!("no thread to run the library's work: {error}"))
            });
        }
        Ok(())
    }

    /// Whether every job submitted so far has run: none is waiting and none is running (one
    /// may be submitted right after, by another thread).
    pub fn is_idle(&self) -> bool {
        !lock(&self.queue.jobs).scheduled
    }

    /// Whether the current thread is running one of this strand's jobs.
    pub fn is_current(&self) -> bool {
        CURRENT_STRAND.with(Cell::get) == self.queue.id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossbeam_channel::{bounded, unbounded};

    const WAIT: Duration = Duration::from_secs(10);

    #[test]
    fn a_strand_runs_its_jobs_in_order_one_at_a_time() {
        let pool = Pool::new("mcpc-test", 8, KEEP_ALIVE);
        let strand = Strand::on(&pool);
        let (tx, rx) = unbounded();
        let running = Arc::new(AtomicUsize::new(0));
        for n in 0..1000 {
            let (tx, running) = (tx.clone(), running.clone());
            strand
                .submit(move || {
                    assert_eq!(running.fetch_add(1, Ordering::SeqCst), 0, "one at a time");
                    tx.send(n).unwrap();
                    running.fetch_sub(1, Ordering::SeqCst);
                })
                .unwrap();
        }
        let seen: Vec<i32> = (0..1000).map(|_| rx.recv_timeout(WAIT).unwrap()).collect();
        assert_eq!(seen, (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn a_strand_is_idle_only_once_every_job_submitted_has_run() {
        let pool = Pool::new("mcpc-test", 2, KEEP_ALIVE);
        let strand = Strand::on(&pool);
        assert!(strand.is_idle());
        let (release_tx, release) = bounded::<()>(0);
        let (done_tx, done) = bounded(1);
        strand.submit(move || release.recv().unwrap()).unwrap();
        strand.submit(move || done_tx.send(()).unwrap()).unwrap();
        assert!(!strand.is_idle(), "a job runs and one waits");
        release_tx.send(()).unwrap();
        done.recv_timeout(WAIT).unwrap();
        let deadline = Instant::now() + WAIT;
        while !strand.is_idle() && Instant::now() < deadline {
            std::thread::yield_now();
        }
        assert!(strand.is_idle(), "both jobs ran");
    }

    #[test]
    fn strands_run_at_the_same_time_and_a_blocked_one_holds_no_other_up() {
        let pool = Pool::new("mcpc-test", 8, KEEP_ALIVE);
        let (blocked, other) = (Strand::on(&pool), Strand::on(&pool));
        let (release_tx, release) = bounded::<()>(0);
        let (started_tx, started) = bounded(1);
        blocked
            .submit(move || {
                started_tx.send(()).unwrap();
                let _ = release.recv();
            })
            .unwrap();
        started.recv_timeout(WAIT).unwrap();
        // Queued behind the blocked job: it waits.
        let (behind_tx, behind) = bounded(1);
        blocked.submit(move || behind_tx.send(()).unwrap()).unwrap();
        // Another strand's jobs run meanwhile.
        let (ran_tx, ran) = bounded(1);
        other.submit(move || ran_tx.send(()).unwrap()).unwrap();
        ran.recv_timeout(WAIT)
            .expect("another strand runs while one is blocked");
        assert!(
            behind.try_recv().is_err(),
            "the blocked strand's next job waits"
        );
        drop(release_tx);
        behind.recv_timeout(WAIT).unwrap();
    }

    #[test]
    fn is_current_only_inside_the_strands_own_jobs() {
        let pool = Pool::new("mcpc-test", 2, KEEP_ALIVE);
        let (mine, theirs) = (Arc::new(Strand::on(&pool)), Arc::new(Strand::on(&pool)));
        assert!(!mine.is_current());
        let (tx, rx) = bounded(1);
        let (inside, other) = (mine.clone(), theirs.clone());
        mine.submit(move || tx.send((inside.is_current(), other.is_current())).unwrap())
            .unwrap();
        assert_eq!(rx.recv_timeout(WAIT).unwrap(), (true, false));
    }

    #[test]
    fn idle_threads_end_and_come_back_with_work() {
        let pool = Pool::new("mcpc-test", 4, Duration::from_millis(50));
        let strands: Vec<Strand> = (0..4).map(|_| Strand::on(&pool)).collect();
        let (tx, rx) = unbounded();
        for strand in &strands {
            let tx = tx.clone();
            strand.submit(move || tx.send(()).unwrap()).unwrap();
        }
        (0..4).for_each(|_| rx.recv_timeout(WAIT).unwrap());
        assert!(pool.threads() >= 1);
        let deadline = Instant::now() + WAIT;
        while pool.threads() > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(pool.threads(), 0, "idle threads end");
        strands[0].submit(move || tx.send(()).unwrap()).unwrap();
        rx.recv_timeout(WAIT)
            .expect("work after the threads ended runs");
    }

    #[test]
    fn at_the_cap_work_waits_for_a_free_thread() {
        let pool = Pool::new("mcpc-test", 2, KEEP_ALIVE);
        let strands: Vec<Strand> = (0..3).map(|_| Strand::on(&pool)).collect();
        let (release_tx, release) = bounded::<()>(0);
        let (started_tx, started) = unbounded();
        for strand in &strands[..2] {
            let (release, started_tx) = (release.clone(), started_tx.clone());
            strand
                .submit(move || {
                    started_tx.send(()).unwrap();
                    let _ = release.recv();
                })
                .unwrap();
        }
        (0..2).for_each(|_| started.recv_timeout(WAIT).unwrap());
        let (ran_tx, ran) = bounded(1);
        strands[2].submit(move || ran_tx.send(()).unwrap()).unwrap();
        assert!(ran.recv_timeout(Duration::from_millis(100)).is_err());
        assert_eq!(pool.threads(), 2, "no thread past the cap");
        drop(release_tx);
        ran.recv_timeout(WAIT).expect("runs once a thread is free");
    }

    #[test]
    fn a_panicking_job_is_contained() {
        let pool = Pool::new("mcpc-test", 1, KEEP_ALIVE);
        let strand = Strand::on(&pool);
        strand.submit(|| panic!("a bug in a job")).unwrap();
        let (tx, rx) = bounded(1);
        strand.submit(move || tx.send(()).unwrap()).unwrap();
        rx.recv_timeout(WAIT)
            .expect("the strand goes on after a panic");
        assert_eq!(pool.threads(), 1, "on the same thread");
    }
}
