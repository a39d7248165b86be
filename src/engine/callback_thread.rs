//! The thread that runs the host's callbacks, in the order their events arrived. It starts with
//! the first event, so a client that never gets a notification, a progress update or a server
//! request never has it (an idle stdio client is three threads, not four).
//!
//! The queue is bounded ([`QUEUE_LIMIT`] events): a server that sends faster than the callbacks
//! return cannot grow it without limit. Past the limit, events are dropped (never blocking the
//! reader) and counted; the next time the thread gets to run, it says how many through the
//! library log, once for the whole run of drops.

use super::gate::Gate;
use crate::error::{Error, Result};
use crate::handlers::{LogHandler, LogLevel};
use crate::sync::{lock, spawn};
use crossbeam_channel::{Receiver, Sender, TrySendError};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread::{JoinHandle, ThreadId};
use std::time::Instant;

/// How many callbacks may wait to run; more are dropped, with a log message.
pub const QUEUE_LIMIT: usize = 1024;

/// Work for the callback thread.
pub type Event = Box<dyn FnOnce() + Send>;

pub struct CallbackThread {
    /// `None` is the stop sign, sent by `stop`.
    queue: Sender<Option<Event>>,
    state: Mutex<State>,
    /// Set once the thread runs; checked without the lock on every event.
    started: AtomicBool,
    thread_id: OnceLock<ThreadId>,
    shared: Arc<Shared>,
}

/// What the thread itself uses.
struct Shared {
    gate: Arc<Gate>,
    log: Option<LogHandler>,
    /// Events dropped since the thread last said so.
    unreported_drops: AtomicU64,
    drops: AtomicU64,
}

enum State {
    NotStarted(Receiver<Option<Event>>),
    Running(JoinHandle<()>, Receiver<()>),
    Stopped,
}

impl CallbackThread {
    /// Events run through `gate`; `log` hears about dropped events.
    pub fn new(gate: Arc<Gate>, log: Option<LogHandler>) -> CallbackThread {
        let (queue, events) = crossbeam_channel::bounded(QUEUE_LIMIT);
        CallbackThread {
            queue,
            state: Mutex::new(State::NotStarted(events)),
            started: AtomicBool::new(false),
            thread_id: OnceLock::new(),
            shared: Arc::new(Shared {
                gate,
                log,
                unreported_drops: AtomicU64::new(0),
                drops: AtomicU64::new(0),
            }),
        }
    }

    /// Queues `event` to run after those before it, starting the thread if this is the first.
    /// Never blocks: a full queue drops the event (counted, and logged later). Fails only when
    /// the thread cannot be started, or after `stop`.
    pub fn send(&self, event: Event) -> Result<()> {
        if !self.started.load(Ordering::Acquire) {
            self.start()?;
        }
        match self.queue.try_send(Some(event)) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_)) => {
                self.shared.drops.fetch_add(1, Ordering::Relaxed);
                self.shared.unreported_drops.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(TrySendError::Disconnected(_)) => Err(Error::new(
                crate::error::Status::Closed,
                "the client is closed",
            )),
        }
    }

    /// Runs `callback` on this thread through the gate (`None`: the client is closing).
    pub fn run_here<R>(&self, callback: impl FnOnce() -> R) -> Option<R> {
        self.shared.gate.run(callback)
    }

    /// How many events were dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.shared.drops.load(Ordering::Relaxed)
    }

    /// Whether the current thread is the callback thread.
    pub fn is_current(&self) -> bool {
        self.thread_id.get() == Some(&std::thread::current().id())
    }

    /// Waits until what is queued now has run, or until `deadline`. Returns at once when the
    /// thread never started, or on the callback thread itself (it cannot wait for itself).
    pub fn drain(&self, deadline: Instant) {
        if !self.started.load(Ordering::Acquire) || self.is_current() {
            return;
        }
        let (done_tx, done) = crossbeam_channel::bounded(1);
        let marker: Event = Box::new(move || {
            let _ = done_tx.send(());
        });
        if self.queue.send_deadline(Some(marker), deadline).is_ok() {
            // Err: the deadline, or the thread has stopped and dropped the marker.
            let _ = done.recv_deadline(deadline);
        }
    }

    /// Ends the thread: what is queued is dropped if the gate is shut (the client is closing)
    /// and run otherwise. Waits for the thread to end until `deadline`, then lets it go (a host
    /// callback that never returns must not hold close forever); never waits for itself (a
    /// callback that closes the client runs on it). Later events are refused.
    pub fn stop(&self, deadline: Instant) {
        let state = std::mem::replace(&mut *self.lock(), State::Stopped);
        if let State::Running(handle, ended) = state {
            let _ = self.queue.send_deadline(None, deadline);
            if handle.thread().id() != std::thread::current().id() {
                // Err(Disconnected) is the thread's end; Err(Timeout), a callback still running.
                if ended
                    .recv_deadline(deadline)
                    .is_err_and(|e| e.is_disconnected())
                {
                    let _ = handle.join();
                }
            }
        }
    }

    fn start(&self) -> Result<()> {
        let mut state = self.lock();
        let events = match std::mem::replace(&mut *state, State::Stopped) {
            State::NotStarted(events) => events,
            other => {
                // Another thread started it first (or it was stopped): nothing to do.
                *state = other;
                return Ok(());
            }
        };
        let shared = self.shared.clone();
        // Dropped when the thread ends, which is how `stop` learns it has.
        let (ended_tx, ended) = crossbeam_channel::bounded::<()>(0);
        let run = move || {
            let _ended = ended_tx;
            while let Ok(Some(event)) = events.recv() {
                shared.run(event);
                shared.report_drops();
            }
        };
        let spawned = spawn("mcpc-callbacks", run, |_| ())?;
        let _ = self.thread_id.set(spawned.thread().id());
        *state = State::Running(spawned, ended);
        self.started.store(true, Ordering::Release);
        Ok(())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }
}

impl Shared {
    fn run(&self, event: Event) {
        // A panicking Rust callback must not take the other callbacks down with it.
        let _ = crate::panic_guard::catch(|| self.gate.run(event));
    }

    fn report_drops(&self) {
        let dropped = self.unreported_drops.swap(0, Ordering::Relaxed);
        if let (true, Some(log)) = (dropped > 0, &self.log) {
            let message = format!(
                "dropped {dropped} callback(s): {QUEUE_LIMIT} were already waiting to run \
                 (the server sends faster than the callbacks return)"
            );
            self.run(Box::new({
                let log = log.clone();
                move || log(LogLevel::Warning, &message)
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    #[test]
    fn a_full_queue_drops_and_says_so_once() {
        let logged: Arc<Mutex<Vec<String>>> = Arc::default();
        let log: LogHandler = {
            let logged = logged.clone();
            Arc::new(move |_, message: &str| logged.lock().unwrap().push(message.to_owned()))
        };
        let thread = CallbackThread::new(Arc::default(), Some(log));
        let (release_tx, release) = crossbeam_channel::bounded::<()>(0);
        let (started_tx, started) = crossbeam_channel::bounded(0);
        thread
            .send(Box::new(move || {
                started_tx.send(()).unwrap();
                let _ = release.recv();
            }))
            .unwrap();
        started.recv().unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        for _ in 0..QUEUE_LIMIT + 10 {
            let ran = ran.clone();
            thread
                .send(Box::new(move || {
                    ran.fetch_add(1, Ordering::Relaxed);
                }))
                .unwrap();
        }
        assert_eq!(thread.dropped(), 10);
        drop(release_tx);
        thread.stop(Instant::now() + Duration::from_secs(10));
        assert_eq!(ran.load(Ordering::Relaxed), QUEUE_LIMIT);
        let logged = logged.lock().unwrap();
        assert_eq!(logged.len(), 1, "{logged:?}");
        assert!(
            logged[0].starts_with("dropped 10 callback(s)"),
            "{logged:?}"
        );
    }

    #[test]
    fn stop_gives_up_on_a_callback_that_does_not_return() {
        let thread = CallbackThread::new(Arc::default(), None);
        let (started_tx, started) = crossbeam_channel::bounded(0);
        let (release_tx, release) = crossbeam_channel::bounded::<()>(0);
        thread
            .send(Box::new(move || {
                started_tx.send(()).unwrap();
                let _ = release.recv();
            }))
            .unwrap();
        started.recv().unwrap();
        let start = Instant::now();
        thread.stop(start + Duration::from_millis(50));
        assert!(start.elapsed() < Duration::from_secs(5));
        drop(release_tx);
    }
}
