//! The thread that runs the host's callbacks, in the order their events arrived. It starts with
//! the first event, so a client that never gets a notification, a progress update or a server
//! request never has it (an idle stdio client is three threads, not four).

use crate::error::{Error, Result};
use crossbeam_channel::{Receiver, Sender};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::thread::{JoinHandle, ThreadId};

/// Work for the callback thread.
pub type Event = Box<dyn FnOnce() + Send>;

pub struct CallbackThread {
    /// `None` is the stop sign, sent by `stop` after everything queued before it.
    queue: Sender<Option<Event>>,
    state: Mutex<State>,
    /// Set once the thread runs; checked without the lock on every event.
    started: AtomicBool,
    thread_id: OnceLock<ThreadId>,
}

enum State {
    NotStarted(Receiver<Option<Event>>),
    Running(JoinHandle<()>),
    Stopped,
}

impl Default for CallbackThread {
    fn default() -> CallbackThread {
        let (queue, events) = crossbeam_channel::unbounded();
        CallbackThread {
            queue,
            state: Mutex::new(State::NotStarted(events)),
            started: AtomicBool::new(false),
            thread_id: OnceLock::new(),
        }
    }
}

impl CallbackThread {
    /// Queues `event` to run after those before it, starting the thread if this is the first.
    /// Fails only when the thread cannot be started, or after `stop`.
    pub fn send(&self, event: Event) -> Result<()> {
        if !self.started.load(Ordering::Acquire) {
            self.start()?;
        }
        self.queue
            .send(Some(event))
            .map_err(|_| Error::new(crate::error::Status::Closed, "the client is closed"))
    }

    /// Whether the current thread is the callback thread.
    pub fn is_current(&self) -> bool {
        self.thread_id.get() == Some(&std::thread::current().id())
    }

    /// Waits until everything queued so far has run. Returns at once when the thread never
    /// started (nothing was ever queued) or when called from the callback thread itself.
    pub fn flush(&self) {
        if !self.started.load(Ordering::Acquire) || self.is_current() {
            return;
        }
        let (done_tx, done_rx) = crossbeam_channel::bounded(1);
        let marker: Event = Box::new(move || {
            let _ = done_tx.send(());
        });
        if self.queue.send(Some(marker)).is_ok() {
            // Err: the thread has stopped (the client closed) and dropped the marker.
            let _ = done_rx.recv();
        }
    }

    /// Lets the thread run what is queued, then ends it and joins it, unless called from the
    /// thread itself (a callback that closes the client must not wait for itself). Later
    /// events are refused.
    pub fn stop(&self) {
        let state = std::mem::replace(&mut *self.lock(), State::Stopped);
        if let State::Running(handle) = state {
            let _ = self.queue.send(None);
            if handle.thread().id() != std::thread::current().id() {
                let _ = handle.join();
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
        let spawned = std::thread::Builder::new()
            .name("mcpc-callbacks".to_owned())
            .spawn(move || {
                while let Ok(Some(event)) = events.recv() {
                    // A panicking Rust callback must not take the other callbacks down with it.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(event));
                }
            })
            .map_err(|e| Error::transport(format!("cannot start the callback thread: {e}")))?;
        let _ = self.thread_id.set(spawned.thread().id());
        *state = State::Running(spawned);
        self.started.store(true, Ordering::Release);
        Ok(())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}
