//! The last lines of the server's stderr, kept to quote when the server exits unexpectedly
//! (and for `Client::stderr_tail`).

use crate::sync::lock;
use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// How much of the server's stderr is kept when nobody else takes it.
pub const STDERR_TAIL_LINES: usize = 50;
pub const STDERR_LINE_MAX: usize = 8 * 1024;

/// The last lines of the server's stderr.
#[derive(Default)]
pub(super) struct StderrTail {
    state: Mutex<TailState>,
    ended: Condvar,
}

#[derive(Default)]
struct TailState {
    lines: VecDeque<String>,
    /// stderr reached its end (or is not ours to read).
    done: bool,
}

impl StderrTail {
    pub(super) fn push(&self, line: String) {
        let mut state = lock(&self.state);
        if state.lines.len() == STDERR_TAIL_LINES {
            state.lines.pop_front();
        }
        state.lines.push_back(line);
    }

    pub(super) fn lines(&self) -> Vec<String> {
        lock(&self.state).lines.iter().cloned().collect()
    }

    pub(super) fn finish(&self) {
        lock(&self.state).done = true;
        self.ended.notify_all();
    }

    /// The lines once stderr has ended, waiting at most `limit` for its last lines.
    pub(super) fn final_lines(&self, limit: Duration) -> Vec<String> {
        let state = lock(&self.state);
        let (state, _) = self
            .ended
            .wait_timeout_while(state, limit, |s| !s.done)
            .unwrap_or_else(|e| e.into_inner());
        state.lines.iter().cloned().collect()
    }
}
