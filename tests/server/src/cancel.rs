//! A request's cancel: a flag its handler can also sleep on. A handler that waits for nothing
//! but its cancel (a tool that never answers, a listen between events) blocks until it comes,
//! instead of waking every few milliseconds to look: with a thousand of them open, those
//! wake-ups alone would keep the machine busy.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

/// Nothing is ever sent on the channel: `set` drops its only sender, and every receiver
/// waiting on it wakes up to find it disconnected.
enum Never {}

pub struct Cancel {
    set: AtomicBool,
    sender: Mutex<Option<Sender<Never>>>,
    signal: Receiver<Never>,
}

impl Cancel {
    pub fn new() -> Self {
        let (sender, signal) = crossbeam_channel::bounded(0);
        Cancel {
            set: AtomicBool::new(false),
            sender: Mutex::new(Some(sender)),
            signal,
        }
    }

    /// Cancels, waking everyone waiting; later calls change nothing.
    pub fn set(&self) {
        self.set.store(true, Ordering::SeqCst);
        drop(self.sender.lock().unwrap().take());
    }

    pub fn is_set(&self) -> bool {
        self.set.load(Ordering::SeqCst)
    }

    /// Blocks until cancelled.
    pub fn wait(&self) {
        let _ = self.signal.recv();
    }

    /// Blocks until cancelled or `limit` has passed; whether cancelled.
    pub fn wait_for(&self, limit: Duration) -> bool {
        match self.signal.recv_timeout(limit) {
            Ok(never) => match never {},
            Err(RecvTimeoutError::Disconnected) => true,
            Err(RecvTimeoutError::Timeout) => self.is_set(),
        }
    }

    /// Ready (disconnected) once cancelled: for `crossbeam_channel::select!` alongside another
    /// channel. What it yields means nothing.
    pub fn signal(&self) -> &Receiver<impl Sized> {
        &self.signal
    }
}
