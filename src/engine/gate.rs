//! The gate every host callback passes through (notifications, progress, the library log,
//! stderr lines, server-request handlers). Closing the client shuts it: no callback starts after
//! that, and close waits, within a bound, for those running to return, so that a host may free
//! the callbacks' userdata as soon as close (or free) has returned.
//!
//! A callback may itself close the client: close never waits for the thread it runs on, and a
//! close made from inside a callback does not wait for other callbacks that are closing too
//! (two callbacks closing at once would otherwise wait for each other until the bound).

use crate::sync::{lock, wait_until};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::ThreadId;
use std::time::Instant;

#[derive(Default)]
pub struct Gate {
    state: Mutex<State>,
    idle: Condvar,
}

#[derive(Default)]
struct State {
    closed: bool,
    /// One entry per callback running now (a thread may nest: a callback that makes a call
    /// that logs).
    running: Vec<Running>,
    /// Closers waiting on `idle`: only they need waking when a callback returns (a notify is
    /// a system call even with nobody waiting, and every completion passes the gate).
    waiting: usize,
}

struct Running {
    thread: ThreadId,
    /// This callback is closing the client.
    closing: bool,
}

/// A callback in progress; dropping it marks the callback returned.
pub struct Entered<'a>(&'a Gate);

impl Gate {
    /// Marks a callback as running on this thread, or `None` once the gate is shut.
    pub fn enter(&self) -> Option<Entered<'_>> {
        let mut state = self.lock();
        if state.closed {
            return None;
        }
        state.running.push(Running {
            thread: std::thread::current().id(),
            closing: false,
        });
        Some(Entered(self))
    }

    /// Runs `callback` unless the gate is shut (then `None`).
    pub fn run<R>(&self, callback: impl FnOnce() -> R) -> Option<R> {
        let _entered = self.enter()?;
        Some(callback())
    }

    /// Shuts the gate: no callback starts from now on.
    pub fn shut(&self) {
        self.lock().closed = true;
    }

    /// Waits until no callback runs on another thread, or until `deadline`. Returns false when
    /// the deadline passed with callbacks still running.
    pub fn wait_until(&self, deadline: Instant) -> bool {
        let me = std::thread::current().id();
        let mut state = self.lock();
        let mut inside = false;
        for entry in state.running.iter_mut().filter(|r| r.thread == me) {
            entry.closing = true;
            inside = true;
        }
        loop {
            let busy = state
                .running
                .iter()
                .any(|r| r.thread != me && !(inside && r.closing));
            if !busy {
                return true;
            }
            state.waiting += 1;
            let woken = wait_until(&self.idle, state, Some(deadline));
            let passed = woken.is_none();
            state = woken.unwrap_or_else(|| self.lock());
            state.waiting -= 1;
            if passed {
                return false;
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        let me = std::thread::current().id();
        let mut state = self.0.lock();
        if let Some(at) = state.running.iter().rposition(|r| r.thread == me) {
            state.running.swap_remove(at);
        }
        if state.waiting > 0 {
            self.0.idle.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn nothing_runs_once_shut() {
        let gate = Gate::default();
        assert_eq!(gate.run(|| 1), Some(1));
        gate.shut();
        assert_eq!(gate.run(|| 2), None);
    }

    #[test]
    fn waits_for_other_threads_but_not_its_own() {
        let gate = Arc::new(Gate::default());
        let (started_tx, started) = crossbeam_channel::bounded(0);
        let other = {
            let gate = gate.clone();
            std::thread::spawn(move || {
                gate.run(|| {
                    started_tx.send(()).unwrap();
                    std::thread::sleep(Duration::from_millis(100));
                })
            })
        };
        started.recv().unwrap();
        gate.run(|| {
            gate.shut();
            let start = Instant::now();
            assert!(gate.wait_until(start + Duration::from_secs(10)));
            assert!(start.elapsed() >= Duration::from_millis(50), "it waited");
            assert!(other.is_finished() || gate.lock().running.len() == 1);
        });
        other.join().unwrap();
    }

    #[test]
    fn gives_up_at_the_deadline() {
        let gate = Arc::new(Gate::default());
        let (started_tx, started) = crossbeam_channel::bounded(0);
        let (release_tx, release) = crossbeam_channel::bounded::<()>(0);
        let other = {
            let gate = gate.clone();
            std::thread::spawn(move || {
                gate.run(|| {
                    started_tx.send(()).unwrap();
                    let _ = release.recv();
                })
            })
        };
        started.recv().unwrap();
        gate.shut();
        assert!(!gate.wait_until(Instant::now() + Duration::from_millis(30)));
        drop(release_tx);
        other.join().unwrap();
        assert!(gate.wait_until(Instant::now()));
    }
}
