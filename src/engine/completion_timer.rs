//! The clock of started calls: one thread for the whole process (`mcpc-timer`) that rings each
//! client's completer when the earliest of its started calls' timeouts or pauses comes due.
//! The completer then does the work on its own strand of the completion pool; the clock runs
//! no library or host code of its own, so one slow completion never delays another client's
//! timeouts.
//!
//! The thread starts with the first alarm and ends once it has had none to wait for for
//! `KEEP_ALIVE`. An alarm holds its completer weakly: a client freed before its alarm rings
//! leaves nothing behind but the entry, which rings nobody.

use crate::sync::{lock, spawn, wait_until};
use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

/// How long the thread stays with no alarm to wait for before it ends.
const KEEP_ALIVE: Duration = Duration::from_secs(2);

/// What the clock rings.
pub trait Alarm: Send + Sync {
    /// `at`, the time this alarm was set for, has come. Runs on the clock's thread, with no
    /// lock of the clock held; must not block.
    fn ring(self: Arc<Self>, at: Instant);
}

#[derive(Default)]
struct Clock {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    /// Earliest first; the number tells apart alarms set for the same time.
    alarms: BTreeMap<(Instant, u64), Weak<dyn Alarm>>,
    next_number: u64,
    /// The thread runs (or is starting).
    running: bool,
    /// The alarm the thread sleeps until (`None`: it is awake, or has no alarm): only an
    /// earlier one needs to wake it.
    sleeping_until: Option<Instant>,
}

fn clock() -> &'static Arc<Clock> {
    static CLOCK: OnceLock<Arc<Clock>> = OnceLock::new();
    CLOCK.get_or_init(Arc::default)
}

/// Rings `alarm` at `at` (at once if it has passed), unless it is gone by then. Never blocks.
pub fn ring_at(at: Instant, alarm: Weak<dyn Alarm>) {
    let clock = clock();
    let mut state = lock(&clock.state);
    state.next_number += 1;
    let number = state.next_number;
    state.alarms.insert((at, number), alarm);
    if state.sleeping_until.is_none_or(|until| at < until) {
        clock.changed.notify_one();
    }
    if !state.running {
        state.running = true;
        drop(state);
        let ticking = clock.clone();
        // Without the thread, alarms wait for the next `ring_at`, which tries again.
        if spawn("mcpc-timer", move || tick(&ticking), |_| ()).is_err() {
            lock(&clock.state).running = false;
        }
    }
}

/// The thread: rings the alarms that are due, sleeps until the next.
fn tick(clock: &Clock) {
    let mut state = lock(&clock.state);
    let mut idle_since = Instant::now();
    // Every decision to wait is made under the lock the wait releases, so no alarm set
    // meanwhile goes unseen.
    loop {
        let now = Instant::now();
        let mut due = Vec::new();
        while let Some(entry) = state.alarms.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let ((at, _), alarm) = entry.remove_entry();
            due.push((at, alarm));
        }
        if !due.is_empty() {
            drop(state);
            for (at, alarm) in due {
                if let Some(alarm) = alarm.upgrade() {
                    alarm.ring(at);
                }
            }
            state = lock(&clock.state);
            idle_since = Instant::now();
            continue;
        }
        let next = state.alarms.first_key_value().map(|(&(at, _), _)| at);
        if next.is_none() && now >= idle_since + KEEP_ALIVE {
            state.running = false;
            return;
        }
        state.sleeping_until = next;
        let until = next.unwrap_or(idle_since + KEEP_ALIVE);
        state =
            wait_until(&clock.changed, state, Some(until)).unwrap_or_else(|| lock(&clock.state));
        state.sleeping_until = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossbeam_channel::{unbounded, Sender};

    struct Recorder(Sender<Instant>);

    impl Alarm for Recorder {
        fn ring(self: Arc<Self>, at: Instant) {
            let _ = self.0.send(at);
        }
    }

    #[test]
    fn alarms_ring_in_time_order_and_not_before_their_time() {
        let (tx, rx) = unbounded();
        let recorder: Arc<dyn Alarm> = Arc::new(Recorder(tx));
        let start = Instant::now();
        let times: Vec<Instant> = [300u64, 100, 200]
            .iter()
            .map(|ms| start + Duration::from_millis(*ms))
            .collect();
        for &at in &times {
            ring_at(at, Arc::downgrade(&recorder));
        }
        let mut rung = Vec::new();
        for _ in 0..3 {
            let at = rx
                .recv_timeout(Duration::from_secs(10))
                .expect("an alarm rings");
            assert!(Instant::now() >= at, "rung before its time");
            rung.push(at);
        }
        let mut sorted = times.clone();
        sorted.sort();
        assert_eq!(rung, sorted);
    }
}
