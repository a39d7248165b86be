//! The queue of the host's callbacks for one connection: they run in the order their events
//! arrived, one at a time, on the connection's strand of the shared pool (`crate::pool`). A
//! connection holds no thread for its callbacks, busy or idle; "the callback thread" in the
//! rest of the library means "whichever pool thread runs this strand now".
//!
//! The queue is bounded in events ([`QUEUE_LIMIT`]) and in bytes ([`QUEUE_BYTES_LIMIT`], what
//! the events carry from the server): a server that sends faster than the callbacks return
//! cannot grow it without limit, whether it sends many small notifications or a few large
//! ones. Past either limit, events are dropped (never blocking the reader) and counted; the
//! next time a callback of the queue runs, it says how many through the library log, once for
//! the whole run of drops.

use super::gate::Gate;
use crate::error::{Error, Result, Status};
use crate::handlers::{LogHandler, LogLevel};
use crate::pool::Strand;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// How many callbacks may wait to run; more are dropped, with a log message.
pub const QUEUE_LIMIT: usize = 1024;

/// How many bytes the callbacks waiting to run may carry (their data as JSON text); more are
/// dropped, with a log message. One event is always let in when none waits, whatever its size.
pub const QUEUE_BYTES_LIMIT: usize = 16 * 1024 * 1024;

/// Work for the callback queue.
pub type Event = Box<dyn FnOnce() + Send>;

pub struct CallbackQueue {
    strand: Strand,
    shared: Arc<Shared>,
    /// Something was queued once: before that, draining and stopping have nothing to wait for.
    used: AtomicBool,
    stopped: AtomicBool,
}

/// What the queued events use.
struct Shared {
    gate: Arc<Gate>,
    log: Option<LogHandler>,
    /// Events dropped since a callback last said so.
    unreported_drops: AtomicU64,
    drops: AtomicU64,
    /// Events queued and not started yet.
    queued: AtomicUsize,
    /// What the events in the queue carry, in bytes.
    queued_bytes: AtomicUsize,
}

impl CallbackQueue {
    /// Events run through `gate`; `log` hears about dropped events.
    pub fn new(gate: Arc<Gate>, log: Option<LogHandler>) -> CallbackQueue {
        CallbackQueue {
            strand: Strand::on(crate::pool::callbacks()),
            shared: Arc::new(Shared {
                gate,
                log,
                unreported_drops: AtomicU64::new(0),
                drops: AtomicU64::new(0),
                queued: AtomicUsize::new(0),
                queued_bytes: AtomicUsize::new(0),
            }),
            used: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
        }
    }

    /// Queues `event`, which carries `bytes` of the server's data, to run after those before
    /// it. Never blocks: a full queue (in events or in bytes) drops the event (counted, and
    /// logged later). Fails only after `stop`.
    pub fn send(&self, event: Event, bytes: usize) -> Result<()> {
        if self.stopped.load(Ordering::Acquire) {
            return Err(Error::new(Status::Closed, "the client is closed"));
        }
        if !self.shared.take_room(bytes) {
            self.shared.count_drop();
            return Ok(());
        }
        if self.shared.queued.fetch_add(1, Ordering::AcqRel) >= QUEUE_LIMIT {
            self.shared.queued.fetch_sub(1, Ordering::AcqRel);
            self.shared.give_room(bytes);
            self.shared.count_drop();
            return Ok(());
        }
        self.used.store(true, Ordering::Release);
        let shared = self.shared.clone();
        // Err: the pool has no thread now; the event stays queued and runs once it has one.
        let _ = self.strand.submit(move || {
            shared.queued.fetch_sub(1, Ordering::AcqRel);
            shared.give_room(bytes);
            shared.run(event);
            shared.report_drops();
        });
        Ok(())
    }

    /// Runs `callback` on this thread through the gate (`None`: the client is closing).
    pub fn run_here<R>(&self, callback: impl FnOnce() -> R) -> Option<R> {
        self.shared.gate.run(callback)
    }

    /// How many events were dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.shared.drops.load(Ordering::Relaxed)
    }

    /// Whether the current thread is running one of this queue's callbacks (a callback that
    /// calls back into its client).
    pub fn is_current(&self) -> bool {
        self.strand.is_current()
    }

    /// Waits until what is queued now has run, or until `deadline`. Returns at once when
    /// nothing was ever queued, or from a callback of this queue (it cannot wait for itself).
    pub fn drain(&self, deadline: Instant) {
        // Idle: every callback queued so far has run already.
        if !self.used.load(Ordering::Acquire) || self.is_current() || self.strand.is_idle() {
            return;
        }
        let (done_tx, done) = crossbeam_channel::bounded(1);
        let marker = move || {
            let _ = done_tx.send(());
        };
        if self.strand.submit(marker).is_ok() {
            // Err: the deadline, or the marker was dropped.
            let _ = done.recv_deadline(deadline);
        }
    }

    /// Refuses later events and waits, until `deadline`, for those queued: they are dropped if
    /// the gate is shut (the client is closing) and run otherwise. A callback that never
    /// returns is given up on at the deadline (it must not hold close forever); a callback
    /// that stops its own queue (closes its client) does not wait for itself.
    pub fn stop(&self, deadline: Instant) {
        if self.stopped.swap(true, Ordering::AcqRel) {
            return;
        }
        self.drain(deadline);
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
    use std::sync::Mutex;
    use std::time::Duration;

    #[test]
    fn a_full_queue_drops_and_says_so_once() {
        let logged: Arc<Mutex<Vec<String>>> = Arc::default();
        let log: LogHandler = {
            let logged = logged.clone();
            Arc::new(move |_, message: &str| logged.lock().unwrap().push(message.to_owned()))
        };
        let thread = CallbackQueue::new(Arc::default(), Some(log));
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
        let thread = CallbackQueue::new(Arc::default(), None);
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
        let thread = CallbackQueue::new(Arc::default(), None);
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
