//! One flow at a time: the calls that meet a 401 together take turns, and the first one's
//! token serves the others. A call waiting for its turn leaves as soon as it is cancelled (its
//! timeout, a cancel, close), however long the flow ahead of it takes.

use crate::cancellation::CancellationToken;
use crate::sync::{lock, wait};
use std::sync::{Arc, Condvar, Mutex};

#[derive(Default)]
pub struct Turns {
    busy: Mutex<bool>,
    freed: Condvar,
}

/// The turn, held until dropped.
pub struct Turn<'a>(&'a Turns);

impl Turns {
    /// Waits for the turn; `None` if `cancel` fires first.
    pub fn take<'a>(self: &'a Arc<Self>, cancel: &CancellationToken) -> Option<Turn<'a>> {
        let hook = cancel.on_cancel({
            let turns = self.clone();
            move |_| {
                // Taking the lock orders this wake-up after the waiter's check.
                let _busy = lock(&turns.busy);
                turns.freed.notify_all();
            }
        });
        let mut busy = lock(&self.busy);
        while *busy && !cancel.is_cancelled() {
            busy = wait(&self.freed, busy);
        }
        let taken = !cancel.is_cancelled();
        if taken {
            *busy = true;
        }
        drop(busy);
        if let Some(hook) = hook {
            cancel.off_cancel(hook);
        }
        taken.then_some(Turn(self))
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        *lock(&self.0.busy) = false;
        self.0.freed.notify_all();
    }
}
