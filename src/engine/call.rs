//! One pending call: the completion race and the send-boundary latch.
//!
//! This is where the cancellation invariants live. The first of response, error, cancel,
//! timeout or close to reach `finish` wins; everything after it is dropped. A cancel that wins
//! leads to exactly one `notifications/cancelled`, and only once the request's bytes are on the
//! wire. The cancelling thread only decides and wakes the caller (one wake-up, no I/O, so
//! `cancel` returns at once); the caller queues the notice when it takes the outcome, or, if the
//! boundary has not been reached yet, the thread that reaches it does. Queuing never blocks.
//! Where the cancel aborts the exchange instead (modern HTTP), the caller aborts it itself when
//! it takes the outcome: that never blocks either, and saves waking the dispatcher.

use crate::error::Error;
use crate::protocol::jsonrpc;
use crate::protocol::reply::Reply;
use crate::sync::{lock, wait_until};
use crate::transport::WireCancel;
use crate::transport::{Transport, Waker};
use serde_json::Value;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::thread::ThreadId;
use std::time::Instant;

impl Outcome {
    /// Whether the server answered (rather than a cancel, timeout or failure ending the call).
    pub fn is_answer(&self) -> bool {
        matches!(self, Outcome::Response(_) | Outcome::Answer(_))
    }
}

/// How a call ended.
#[derive(Debug)]
pub enum Outcome {
    /// The server's response frame, with `result` or `error`.
    Response(Value),
    /// The server's successful result, kept as its text (see `protocol::reply`).
    Answer(Reply),
    /// The transport failed or the client closed.
    Failed(Error),
    Cancelled {
        reason: Option<String>,
        timed_out: bool,
    },
}

pub use super::dispatcher::{Outbound, Outgoing};

pub struct Call {
    pub id: i64,
    wire: WireCancel,
    outbound: Outbound,
    state: Mutex<State>,
    finished: Condvar,
    /// Wakes the caller when it is reading the transport itself (see `start_reading`).
    reader_waker: Option<Waker>,
    /// With `WireCancel::Abort`: the transport, told to abort the exchange by the thread that
    /// takes the cancel (aborting never blocks) instead of by the dispatcher, whose
    /// wake-up would come before the caller's return on a busy core.
    abandon_here: Option<Weak<dyn Transport>>,
    /// For a call nobody blocks on (started without blocking): tells the completion thread
    /// that the outcome is decided. Runs on the thread that decided it, after the call's lock
    /// is released (it may take the outcome there).
    notify: Option<Notify>,
}

/// Tells the completion thread that a started call has its outcome (see `engine::completer`):
/// the watcher, held weakly (a call must not keep its client's completer alive), and the key it
/// knows the call by. A pointer and a number, so watching a call allocates nothing.
pub struct Notify {
    pub watcher: Weak<dyn Watcher>,
    pub key: u64,
}

/// What watches started calls (the completion thread's side of `Notify`).
pub trait Watcher: Send + Sync {
    /// The call under `key` has its outcome; `answered` says whether it is the server's
    /// response (routed by the thread that reads the transport) rather than a cancel, timeout
    /// or failure.
    fn decided(self: Arc<Self>, key: u64, answered: bool);
}

impl Notify {
    fn tell(&self, answered: bool) {
        if let Some(watcher) = self.watcher.upgrade() {
            watcher.decided(self.key, answered);
        }
    }
}

#[derive(Default)]
struct State {
    outcome: Option<Outcome>,
    /// Set once the outcome has been taken by the waiting caller.
    taken: bool,
    /// The send boundary has been reached (or the send finished or failed).
    sent: bool,
    notice: Notice,
    /// When progress for this call last arrived (a timeout may restart from it).
    last_progress: Option<Instant>,
    /// The caller's thread, while it reads the transport for its own response.
    reading: Option<ThreadId>,
    /// Whether the request went, or will go, to the wire.
    sending: Sending,
    /// The caller sleeps on `finished`: only then does deciding the outcome need a wake-up.
    waiting: bool,
}

/// Where the request stands with the wire. Once the caller has taken an outcome without a
/// response, a request the transport has not started to write is withdrawn: it is never
/// written, the server hears nothing of it, and the caller's error carries no request id.
#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum Sending {
    /// Not started yet.
    #[default]
    Pending,
    /// The transport began writing it (or sent it some other way): it will be written whole.
    Started,
    /// Never to be written.
    Withdrawn,
}

#[derive(Default)]
enum Notice {
    #[default]
    None,
    /// A cancel won before the boundary: send this reason once the request is on the wire.
    WaitingForSend(Option<String>),
    Queued,
}

impl Call {
    pub fn new(id: i64, wire: WireCancel, outbound: Outbound) -> Self {
        Call {
            id,
            wire,
            outbound,
            state: Mutex::new(State::default()),
            finished: Condvar::new(),
            reader_waker: None,
            abandon_here: None,
            notify: None,
        }
    }

    /// Where a cancel with `WireCancel::Abort` aborts the exchange directly (see
    /// `abandon_here`); without it, the dispatcher does.
    pub fn with_transport(mut self, transport: Weak<dyn Transport>) -> Self {
        if self.wire == WireCancel::Abort {
            self.abandon_here = Some(transport);
        }
        self
    }

    /// The call is watched by the completion thread rather than by a blocked caller.
    pub fn with_notify(mut self, notify: Option<Notify>) -> Self {
        self.notify = notify;
        self
    }

    /// How to wake the caller while it reads the transport itself.
    pub fn with_reader_waker(mut self, waker: Option<Waker>) -> Self {
        self.reader_waker = waker;
        self
    }

    /// The caller is about to read the transport for its own response: from now on, an outcome
    /// decided on another thread also wakes it through the reader waker. False when the call
    /// already has its outcome (nothing to read for).
    pub fn start_reading(&self) -> bool {
        let mut state = self.lock();
        if state.outcome.is_some() || state.taken {
            return false;
        }
        state.reading = Some(std::thread::current().id());
        true
    }

    pub fn stop_reading(&self) {
        self.lock().reading = None;
    }

    /// Offers an outcome. Returns true if it won the race.
    pub fn finish(&self, outcome: Outcome) -> bool {
        let mut state = self.lock();
        if state.outcome.is_some() || state.taken {
            return false;
        }
        let answered = outcome.is_answer();
        state.outcome = Some(outcome);
        if let Some(notify) = &self.notify {
            drop(state);
            notify.tell(answered);
            return true;
        }
        self.wake_caller(state);
        true
    }

    /// Cancels the call. Returns true if the cancel won. Only wakes the caller: what the wire
    /// needs (the notice, or dropping the exchange) is queued by the caller when it takes the
    /// outcome (see `wait`), or at the send boundary if that comes later.
    pub fn cancel(&self, reason: Option<&str>, timed_out: bool) -> bool {
        let mut state = self.lock();
        if state.outcome.is_some() || state.taken {
            return false;
        }
        state.outcome = Some(Outcome::Cancelled {
            reason: reason.map(str::to_owned),
            timed_out,
        });
        if self.wire == WireCancel::Notify {
            state.notice = Notice::WaitingForSend(reason.map(str::to_owned));
        }
        if let Some(notify) = &self.notify {
            drop(state);
            notify.tell(false);
            return true;
        }
        self.wake_caller(state);
        true
    }

    /// The call ended before its request was handed to the transport, which therefore never
    /// hears of it: no notice, nothing to abandon.
    pub fn never_sent(&self) {
        self.lock().sending = Sending::Withdrawn;
    }

    /// The transport is about to write the request's first byte (the claim of its
    /// `SendBoundary`). False when the call has already ended without a response: the request
    /// is withdrawn instead, never to be written.
    pub fn try_start_sending(&self) -> bool {
        let mut state = self.lock();
        if state.sending == Sending::Pending && (state.taken || state.outcome.is_some()) {
            state.sending = Sending::Withdrawn;
        }
        if state.sending == Sending::Withdrawn {
            return false;
        }
        state.sending = Sending::Started;
        true
    }

    /// Whether the request never reached, and never will reach, the wire.
    pub fn was_withdrawn(&self) -> bool {
        self.lock().sending == Sending::Withdrawn
    }

    /// The send boundary: the request's bytes are on the wire (or its send has ended).
    pub fn mark_sent(&self) {
        let mut state = self.lock();
        if state.sending == Sending::Withdrawn {
            return;
        }
        state.sending = Sending::Started;
        if !state.sent {
            state.sent = true;
            self.queue_notice(&mut state);
        }
    }

    /// Progress for this call arrived.
    pub fn saw_progress(&self) {
        self.lock().last_progress = Some(Instant::now());
    }

    pub fn last_progress(&self) -> Option<Instant> {
        self.lock().last_progress
    }

    /// Whether an outcome has been decided (used to skip sending a request cancelled before it
    /// was written).
    pub fn is_finished(&self) -> bool {
        let state = self.lock();
        state.outcome.is_some() || state.taken
    }

    /// Takes the outcome if it is decided, without waiting.
    pub fn try_take(&self) -> Option<Outcome> {
        self.wait(Some(Instant::now()))
    }

    /// Blocks until an outcome is decided or the deadline passes (then `None`).
    pub fn wait(&self, deadline: Option<Instant>) -> Option<Outcome> {
        let mut state = self.lock();
        loop {
            if let Some(outcome) = state.outcome.take() {
                state.taken = true;
                if state.sending == Sending::Pending && !outcome.is_answer() {
                    state.sending = Sending::Withdrawn;
                }
                let abandon_here = match outcome {
                    Outcome::Cancelled { .. } => self.tell_the_wire(&mut state),
                    _ => false,
                };
                drop(state);
                if abandon_here {
                    if let Some(transport) = self.abandon_here.as_ref().and_then(Weak::upgrade) {
                        transport.abandon(self.id);
                    }
                }
                return Some(outcome);
            }
            if deadline.is_some_and(|d| d <= Instant::now()) {
                return None;
            }
            // Left set if the deadline passes in between (then one wake-up is spent for
            // nothing); cleared by every wait that sleeps.
            state.waiting = true;
            state = wait_until(&self.finished, state, deadline)?;
            state.waiting = false;
        }
    }

    /// Wakes the caller where it waits: on `finished`, or, while it reads the transport for
    /// its own response, in the transport (unless this is its own thread, which routed its own
    /// response). One wake-up either way: a cancel costs the canceller as little as possible.
    ///
    /// Takes the call's lock, just used to decide the outcome, and lets it go before the
    /// reader waker runs: the waker takes the transport's locks, and the reading thread may
    /// hold one of those while it waits for this lock (an HTTP exchange claims its request for
    /// the wire under its own lock), so waking under it could deadlock both threads.
    fn wake_caller(&self, state: MutexGuard<'_, State>) {
        match (state.reading, &self.reader_waker) {
            (Some(reader), Some(_)) if reader == std::thread::current().id() => {}
            (Some(_), Some(wake)) => {
                drop(state);
                wake();
            }
            // Not reading (or a transport that never lets it): it waits on the condvar, or
            // will look at the outcome under the lock before it does.
            _ if state.waiting => self.finished.notify_all(),
            _ => {}
        }
    }

    /// A cancel won and the caller has taken it: the notice goes now if the request is on the
    /// wire (else `mark_sent` sends it), or the exchange is dropped. True when the caller is
    /// to drop it itself, once the call's lock is released (see `abandon_here`).
    fn tell_the_wire(&self, state: &mut State) -> bool {
        if state.sending == Sending::Withdrawn {
            return false;
        }
        match self.wire {
            WireCancel::Notify if state.sent => self.queue_notice(state),
            WireCancel::Notify => {}
            WireCancel::Abort if self.abandon_here.is_some() => return true,
            WireCancel::Silent | WireCancel::Abort => self.queue(Outgoing::Abandon(self.id)),
        }
        false
    }

    fn queue_notice(&self, state: &mut State) {
        if let Notice::WaitingForSend(reason) = std::mem::take(&mut state.notice) {
            let frame = jsonrpc::encode_cancelled(self.id, reason.as_deref());
            self.queue(Outgoing::Frame(frame));
            self.queue(Outgoing::Abandon(self.id));
            state.notice = Notice::Queued;
        }
    }

    fn queue(&self, outgoing: Outgoing) {
        self.outbound.send(outgoing);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }
}

/// The call is its request's send boundary (`transport::SendBoundary`).
impl crate::transport::SendHooks for Call {
    fn claim(&self) -> bool {
        self.try_start_sending()
    }

    fn sent(&self) {
        self.mark_sent()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossbeam_channel::{unbounded, Receiver};
    use std::sync::Arc;
    use std::time::Duration;

    fn call(wire: WireCancel) -> (Arc<Call>, Receiver<Outgoing>) {
        let (tx, rx) = unbounded();
        (Arc::new(Call::new(5, wire, Outbound::new(tx, None))), rx)
    }

    fn notice(rx: &Receiver<Outgoing>) -> String {
        match rx.try_recv() {
            Ok(Outgoing::Frame(frame)) => frame,
            other => panic!("expected a notice, got {other:?}"),
        }
    }

    /// The reader waker takes the transport's locks, and a thread holding one of them may be
    /// waiting for this call's lock (an HTTP exchange claiming its request for the wire:
    /// `Exchange::start_sending` calls `try_start_sending` under the exchange's lock). So the
    /// waker runs after the call's lock is let go, for a cancel and for any other outcome:
    /// here it claims the call itself, as that thread would.
    #[test]
    fn the_reader_waker_runs_outside_the_calls_lock() {
        for cancel in [true, false] {
            let claim: Arc<std::sync::OnceLock<Weak<Call>>> = Arc::default();
            let waker: Waker = {
                let claim = claim.clone();
                Arc::new(move || {
                    if let Some(call) = claim.get().and_then(Weak::upgrade) {
                        call.try_start_sending();
                    }
                })
            };
            let (tx, _rx) = unbounded();
            let call = Arc::new(
                Call::new(5, WireCancel::Notify, Outbound::new(tx, None))
                    .with_reader_waker(Some(waker)),
            );
            let _ = claim.set(Arc::downgrade(&call));
            // The caller reads for its response on a thread of its own.
            let reading = call.clone();
            std::thread::spawn(move || assert!(reading.start_reading()))
                .join()
                .unwrap();
            let (done, finished) = std::sync::mpsc::channel();
            let deciding = call.clone();
            std::thread::spawn(move || {
                let won = match cancel {
                    true => deciding.cancel(Some("r"), false),
                    false => deciding.finish(Outcome::Failed(Error::transport("closed"))),
                };
                let _ = done.send(won);
            });
            assert_eq!(
                finished.recv_timeout(Duration::from_secs(10)),
                Ok(true),
                "cancel: {cancel}: the outcome's wake-up deadlocked on the call's lock"
            );
        }
    }

    #[test]
    fn first_outcome_wins() {
        let (c, rx) = call(WireCancel::Notify);
        assert!(c.finish(Outcome::Response(Value::Null)));
        assert!(!c.cancel(Some("late"), false));
        assert!(!c.finish(Outcome::Failed(Error::transport("x"))));
        assert!(matches!(c.wait(None), Some(Outcome::Response(_))));
        c.mark_sent();
        assert!(rx.try_recv().is_err(), "no notice for a finished request");
    }

    #[test]
    fn cancel_before_boundary_waits_for_it() {
        let (c, rx) = call(WireCancel::Notify);
        assert!(c.try_start_sending(), "the request is being written");
        assert!(c.cancel(Some("r"), false));
        assert!(matches!(c.wait(None), Some(Outcome::Cancelled { .. })));
        assert!(
            rx.try_recv().is_err(),
            "notice must wait for the send boundary"
        );
        c.mark_sent();
        let frame = notice(&rx);
        assert!(frame.contains(r#""requestId":5"#) && frame.contains(r#""reason":"r""#));
        assert_eq!(
            rx.try_recv(),
            Ok(Outgoing::Abandon(5)),
            "the exchange is dropped after the notice"
        );
        c.mark_sent();
        assert!(rx.try_recv().is_err(), "at most one notice");
    }

    #[test]
    fn cancel_after_boundary_queues_when_the_caller_wakes_and_only_once() {
        let (c, rx) = call(WireCancel::Notify);
        c.mark_sent();
        assert!(c.cancel(None, false));
        assert!(!c.cancel(Some("again"), false));
        assert!(
            rx.try_recv().is_err(),
            "the cancelling thread only wakes the caller"
        );
        assert!(matches!(c.wait(None), Some(Outcome::Cancelled { .. })));
        let frame = notice(&rx);
        assert!(!frame.contains("reason"));
        assert_eq!(rx.try_recv(), Ok(Outgoing::Abandon(5)));
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn calls_never_cancelled_on_wire_send_no_notice() {
        let (c, rx) = call(WireCancel::Silent);
        c.mark_sent();
        assert!(c.cancel(Some("t"), true));
        assert!(c.wait(None).is_some());
        assert_eq!(
            rx.try_recv(),
            Ok(Outgoing::Abandon(5)),
            "only the exchange is dropped"
        );
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn abort_style_drops_the_exchange_at_once_without_a_notice() {
        let (c, rx) = call(WireCancel::Abort);
        assert!(c.try_start_sending(), "the exchange is under way");
        assert!(c.cancel(Some("r"), false));
        assert!(c.wait(None).is_some());
        assert_eq!(
            rx.try_recv(),
            Ok(Outgoing::Abandon(5)),
            "no need to wait for the boundary"
        );
        c.mark_sent();
        assert!(rx.try_recv().is_err());
    }

    /// Records which call each `abandon` was for, and on which thread.
    #[derive(Default)]
    struct Abandons(Mutex<Vec<(i64, ThreadId)>>);

    impl Transport for Abandons {
        fn send_request(&self, _: crate::transport::OutgoingRequest) -> crate::error::Result<()> {
            Ok(())
        }
        fn send_notification(&self, _: &str) -> crate::error::Result<()> {
            Ok(())
        }
        fn abandon(&self, id: i64) {
            lock(&self.0).push((id, std::thread::current().id()));
        }
        fn close(&self) {}
    }

    #[test]
    fn abort_style_with_its_transport_is_dropped_by_the_thread_that_takes_the_cancel() {
        let transport = Arc::new(Abandons::default());
        let weak = Arc::downgrade(&transport) as Weak<dyn Transport>;
        let (tx, rx) = unbounded();
        let c =
            Arc::new(Call::new(5, WireCancel::Abort, Outbound::new(tx, None)).with_transport(weak));
        assert!(c.try_start_sending());
        let canceller = {
            let c = c.clone();
            std::thread::spawn(move || assert!(c.cancel(Some("r"), false)))
        };
        canceller.join().unwrap();
        assert!(lock(&transport.0).is_empty(), "the canceller only wakes");
        assert!(matches!(c.wait(None), Some(Outcome::Cancelled { .. })));
        let me = std::thread::current().id();
        assert_eq!(*lock(&transport.0), vec![(5, me)]);
        assert!(rx.try_recv().is_err(), "nothing for the dispatcher");
        c.mark_sent();
        assert!(c.try_take().is_none());
        assert_eq!(lock(&transport.0).len(), 1, "dropped once");

        // A call that never reached the wire has nothing to drop.
        let (tx, _rx) = unbounded();
        let weak = Arc::downgrade(&transport) as Weak<dyn Transport>;
        let c = Call::new(6, WireCancel::Abort, Outbound::new(tx, None)).with_transport(weak);
        assert!(c.cancel(None, false));
        assert!(c.wait(None).is_some());
        assert!(c.was_withdrawn());
        assert_eq!(lock(&transport.0).len(), 1);

        // Other wires keep the dispatcher's order (notice first), whatever the transport.
        let (tx, rx) = unbounded();
        let weak = Arc::downgrade(&transport) as Weak<dyn Transport>;
        let c = Call::new(7, WireCancel::Notify, Outbound::new(tx, None)).with_transport(weak);
        c.mark_sent();
        assert!(c.cancel(None, false));
        assert!(c.wait(None).is_some());
        notice(&rx);
        assert_eq!(rx.try_recv(), Ok(Outgoing::Abandon(7)));
        assert_eq!(lock(&transport.0).len(), 1);
    }

    #[test]
    fn a_boundary_between_the_cancel_and_the_wake_sends_one_notice() {
        let (c, rx) = call(WireCancel::Notify);
        assert!(c.cancel(Some("r"), false));
        c.mark_sent();
        assert!(
            notice(&rx).contains(r#""requestId":5"#),
            "the boundary sends it"
        );
        assert_eq!(rx.try_recv(), Ok(Outgoing::Abandon(5)));
        assert!(matches!(c.wait(None), Some(Outcome::Cancelled { .. })));
        assert!(
            rx.try_recv().is_err(),
            "and the caller does not send it again"
        );
    }

    #[test]
    fn a_call_never_handed_to_the_transport_tells_the_wire_nothing() {
        for wire in [WireCancel::Notify, WireCancel::Abort, WireCancel::Silent] {
            let (c, rx) = call(wire);
            assert!(c.cancel(Some("r"), false));
            c.never_sent();
            assert!(matches!(c.wait(None), Some(Outcome::Cancelled { .. })));
            assert!(rx.try_recv().is_err(), "{wire:?}: nothing queued");
        }
    }

    #[test]
    fn a_request_not_started_when_its_cancel_is_taken_is_withdrawn() {
        let (c, rx) = call(WireCancel::Notify);
        assert!(c.cancel(Some("r"), false));
        assert!(matches!(c.wait(None), Some(Outcome::Cancelled { .. })));
        assert!(!c.try_start_sending(), "the transport must drop it");
        assert!(c.was_withdrawn(), "the caller is told it was never sent");
        c.mark_sent();
        assert!(
            rx.try_recv().is_err(),
            "no notice for a request never written"
        );
    }

    #[test]
    fn a_request_started_before_its_cancel_is_taken_gets_its_notice() {
        let (c, rx) = call(WireCancel::Notify);
        assert!(c.try_start_sending());
        assert!(c.cancel(Some("r"), false));
        assert!(matches!(c.wait(None), Some(Outcome::Cancelled { .. })));
        assert!(!c.was_withdrawn());
        assert!(c.try_start_sending(), "started stays started");
        c.mark_sent();
        assert!(notice(&rx).contains(r#""requestId":5"#));
    }

    #[test]
    fn a_transport_starting_after_the_cancel_won_withdraws_the_request() {
        let (c, rx) = call(WireCancel::Notify);
        assert!(c.cancel(Some("r"), false));
        assert!(
            !c.try_start_sending(),
            "the outcome is decided: nothing to send"
        );
        assert!(matches!(c.wait(None), Some(Outcome::Cancelled { .. })));
        assert!(c.was_withdrawn());
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn wait_times_out_then_late_outcomes_are_dropped() {
        let (c, _rx) = call(WireCancel::Notify);
        let start = Instant::now();
        assert!(c.wait(Some(start + Duration::from_millis(20))).is_none());
        assert!(start.elapsed() >= Duration::from_millis(20));
        assert!(c.cancel(Some("timeout"), true));
        assert!(matches!(
            c.wait(None),
            Some(Outcome::Cancelled {
                timed_out: true,
                ..
            })
        ));
        assert!(
            !c.finish(Outcome::Response(Value::Null)),
            "taken calls accept nothing"
        );
    }

    #[test]
    fn cancel_from_another_thread_wakes_the_waiter() {
        let (c, _rx) = call(WireCancel::Notify);
        let c2 = c.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            c2.cancel(Some("bye"), false)
        });
        match c.wait(None) {
            Some(Outcome::Cancelled { reason, .. }) => assert_eq!(reason.as_deref(), Some("bye")),
            other => panic!("unexpected {other:?}"),
        }
        assert!(t.join().unwrap());
    }
}
