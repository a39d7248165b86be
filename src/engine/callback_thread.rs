//! The thread that runs the host's callbacks, in the order their events arrived. It starts with
//! the first event, so a client that never gets a notification, a progress update or a server
//! request never has it (an idle stdio client is three threads, not four).
//!
//! The queue is bounded in events ([`QUEUE_LIMIT`]) and in bytes ([`QUEUE_BYTES_LIMIT`], what
//! the events carry from the server): a server that sends faster than the callbacks return
//! cannot grow it without limit, whether it sends many small notifications or a few large
//! ones. Past either limit, events are dropped (never blocking the reader) and counted; the
//! next time the thread gets to run, it says how many through the library log, once for the
//! whole run of drops.

use super::gate::Gate;
use crate::error::{Error, Result};
use crate::handlers::{LogHandler, LogLevel};
use crate::sync::{lock, spawn};
use crossbeam_channel::{Receiver, Sender, TrySendError};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread::{JoinHandle, ThreadId};
use std::time::Instant;

/// How many callbacks may wait to run; more are dropped, with a log message.
pub const QUEUE_LIMIT: usize = 1024;

/// How many bytes the callbacks waiting to run may carry (their data as JSON text); more are
/// dropped, with a log message. One event is always let in when none waits, whatever its size.
pub const QUEUE_BYTES_LIMIT: usize = 16 * 1024 * 1024;

/// Work for the callback thread.
pub type Event = Box<dyn FnOnce() + Send>;

/// An event in the queue, with the bytes it carries.
type Queued = (Event, usize);

pub struct CallbackThread {
    /// `None` is the stop sign, sent by `stop`.
    queue: Sender<Option<Queued>>,
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
    /// What the events in the queue carry, in bytes.
    queued_bytes: AtomicUsize,
}

enum State {
    NotStarted(Receiver<Option<Queued>>),
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
                queued_bytes: AtomicUsize::new(0),
            }),
        }
    }

    /// Queues `event`, which carries `bytes` of the server's data, to run after those before
    /// it, starting the thread if this is the first. Never blocks: a full queue (in events or
    /// in bytes) drops the event (counted, and logged later). Fails only when the thread cannot
    /// be started, or after `stop`.
    pub fn send(&self, event: Event, bytes: usize) -> Result<()> {
        if !self.started.load(Ordering::Acquire) {
            self.start()?;
        }
        if !self.shared.take_room(bytes) {
            self.shared.count_drop();
            return Ok(());
        }
        match self.queue.try_send(Some((event, bytes))) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_)) => {
                self.shared.give_room(bytes);
                self.shared.count_drop();
                Ok(())
            }
            Err(TrySendError::Disconnected(_)) => {
                self.shared.give_room(bytes);
                Err(Error::new(
                    crate::error::Status::Closed,
                    "the client is closed",
                ))
            }
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
        if self
            .queue
            .send_deadline(Some((marker, 0)), deadline)
            .is_ok()
        {
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
            while let Ok(Some((event, bytes))) = events.recv() {
                shared.give_room(bytes);
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
    /// Counts `bytes` into the queue if they fit: always when the queue carries nothing (one
    /// event of any size gets through), else up to `QUEUE_BYTES_LIMIT`.
    fn take_room(&self, bytes: usize) -> bool {
        self.queued_bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |queued| {
                let fits = queued == 0 || queued.saturating_add(bytes) <= QUEUE_BYTES_LIMIT;
                fits.then(|| queued.saturating_add(bytes))
            })
            .is_ok()
    }

    fn give_room(&self, bytes: usize) {
        self.queued_bytes.fetch_sub(bytes, Ordering::AcqRel);
    }

    fn count_drop(&self) {
        self.drops.fetch_add(1, Ordering::Relaxed);
        self.unreported_drops.fetch_add(1, Ordering::Relaxed);
    }

    fn run(&self, event: Event) {
        // A panicking Rust callback must not take the other callbacks down with it.
        let _ = crate::panic_guard::catch(|| self.gate.run(event));
    }

    fn report_drops(&self) {
        let dropped = self.unreported_drops.swap(0, Ordering::Relaxed);
        if let (true, Some(log)) = (dropped > 0, &self.log) {
            let message = format!(
                "dropped {dropped} callback(s): {QUEUE_LIMIT} callbacks or {} MiB were already \
                 waiting to run (the server sends faster than the callbacks return)",
                QUEUE_BYTES_LIMIT / (1024 * 1024)
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
            .send(
                Box::new(move || {
                    started_tx.send(()).unwrap();
                    let _ = release.recv();
                }),
                0,
            )
            .unwrap();
        started.recv().unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        for _ in 0..QUEUE_LIMIT + 10 {
            let ran = ran.clone();
            thread
                .send(
                    Box::new(move || {
                        ran.fetch_add(1, Ordering::Relaxed);
                    }),
                    0,
                )
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
    fn the_queue_is_bounded_in_bytes_and_lets_one_event_of_any_size_in() {
        let thread = CallbackThread::new(Arc::default(), None);
        let (release_tx, release) = crossbeam_channel::bounded::<()>(0);
        let (started_tx, started) = crossbeam_channel::bounded(0);
        let blocker = Box::new(move || {
            started_tx.send(()).unwrap();
            let _ = release.recv();
        });
        thread.send(blocker, 0).unwrap();
        started.recv().unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let event = |ran: &Arc<AtomicUsize>| -> Event {
            let ran = ran.clone();
            Box::new(move || {
                ran.fetch_add(1, Ordering::Relaxed);
            })
        };
        // Half the bound twice fits; a third does not, nor does anything after it.
        for _ in 0..3 {
            thread.send(event(&ran), QUEUE_BYTES_LIMIT / 2).unwrap();
        }
        thread.send(event(&ran), 1).unwrap();
        assert_eq!(thread.dropped(), 2);
        drop(release_tx);
        thread.drain(Instant::now() + Duration::from_secs(10));
        assert_eq!(ran.load(Ordering::Relaxed), 2);
        // Once the queue is empty, one event larger than the bound gets in.
        thread.send(event(&ran), 3 * QUEUE_BYTES_LIMIT).unwrap();
        thread.stop(Instant::now() + Duration::from_secs(10));
        assert_eq!(ran.load(Ordering::Relaxed), 3);
        assert_eq!(thread.dropped(), 2);
    }

    #[test]
    fn stop_gives_up_on_a_callback_that_does_not_return() {
        let thread = CallbackThread::new(Arc::default(), None);
        let (started_tx, started) = crossbeam_channel::bounded(0);
        let (release_tx, release) = crossbeam_channel::bounded::<()>(0);
        thread
            .send(
                Box::new(move || {
                    started_tx.send(()).unwrap();
                    let _ = release.recv();
                }),
                0,
            )
            .unwrap();
        started.recv().unwrap();
        let start = Instant::now();
        thread.stop(start + Duration::from_millis(50));
        assert!(start.elapsed() < Duration::from_secs(5));
        drop(release_tx);
    }
}
