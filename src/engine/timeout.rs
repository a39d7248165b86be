//! A call's timeout, shared by the two ways of waiting for a call (a blocked caller, and the
//! completion thread for calls started without blocking). The timeout is a cancel with a
//! reason; with `reset_timeout_on_progress` it restarts from the last progress, never past
//! `max_total`.

use super::call::Call;
use super::CallOptions;
use std::time::{Duration, Instant};

pub struct Timeout {
    /// The `max_total` limit; `None` for none (or too far out to represent).
    hard: Option<Instant>,
    /// When the call times out, unless progress moves it.
    deadline: Option<Instant>,
    timeout: Option<Duration>,
    max_total: Option<Duration>,
    reset_on_progress: bool,
}

impl Timeout {
    /// Starts counting now.
    pub fn start(opts: &CallOptions) -> Timeout {
        let start = Instant::now();
        // A limit too far out to represent as an Instant (Duration::MAX) is no limit.
        let hard = opts.max_total.and_then(|max| start.checked_add(max));
        Timeout {
            hard,
            deadline: earliest(opts.timeout.and_then(|t| start.checked_add(t)), hard),
            timeout: opts.timeout,
            max_total: opts.max_total,
            reset_on_progress: opts.reset_timeout_on_progress,
        }
    }

    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The deadline has passed: `None` when progress moved it (wait again until
    /// `deadline()`), else the reason to cancel the call with.
    pub fn expired(&mut self, call: &Call) -> Option<String> {
        if let (true, Some(timeout), Some(last)) =
            (self.reset_on_progress, self.timeout, call.last_progress())
        {
            let restarted = earliest(last.checked_add(timeout), self.hard);
            if restarted.is_some_and(|d| d > Instant::now()) {
                self.deadline = restarted;
                return None;
            }
        }
        Some(match (self.hard, self.timeout) {
            (Some(hard), _) if Instant::now() >= hard => format!(
                "exceeded the maximum of {} ms",
                self.max_total.unwrap_or_default().as_millis()
            ),
            (_, timeout) => format!(
                "timed out after {} ms",
                timeout.unwrap_or_default().as_millis()
            ),
        })
    }
}

fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
