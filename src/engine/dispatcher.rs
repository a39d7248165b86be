//! The dispatcher: writes cancel notices, drops abandoned exchanges and writes answers to server
//! requests, so that neither a cancelling thread nor the reader ever waits for a write. It has
//! no thread: it runs on the connection's own strand of the shared I/O pool (`crate::pool::io`),
//! and only while something is queued.
//!
//! Notices come first: one waiting is written before the next answer. On stop it first writes
//! the notices queued; answers still queued are dropped (the connection is closing, and there
//! may be a whole queue of them).

use super::answers::AnswerReceiver;
use crate::pool::Strand;
use crate::sync::{lock, wait_until};
use crate::transport::Transport;
use crossbeam_channel::{Receiver, Sender};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::Instant;

/// What the dispatcher does for the engine, in queue order.
#[derive(Debug, PartialEq)]
pub enum Outgoing {
    /// Write a frame: a cancel notice, or an answer to a server request.
    Frame(String),
    /// Tell the transport that call `id` ended without its response, so it can drop what it
    /// holds for it (an HTTP exchange). Queued after the call's cancel notice, if any.
    Abandon(i64),
}

pub struct Dispatcher {
    notices: Receiver<Outgoing>,
    answers: AnswerReceiver,
    /// Set once the transport is connected; weak, since the transport's reader reaches the
    /// queues that hold the dispatcher.
    transport: OnceLock<Weak<dyn Transport>>,
    strand: Strand,
    /// A run is queued on the strand and has not begun looking at the queues yet.
    scheduled: AtomicBool,
    stopped: AtomicBool,
    /// Set by the last run, the one `stop` queues (a flag, not a channel: every connection has
    /// one, and a channel's slots and padding cost more than the rest of the dispatcher).
    done: Mutex<bool>,
    done_signal: Condvar,
}

/// The connection's queue of cancel notices and abandons, which wakes the dispatcher.
#[derive(Clone)]
pub struct Outbound {
    queue: Sender<Outgoing>,
    dispatcher: Option<Arc<Dispatcher>>,
}

impl Dispatcher {
    pub fn new(notices: Receiver<Outgoing>, answers: AnswerReceiver) -> Arc<Dispatcher> {
        Arc::new(Dispatcher {
            notices,
            answers,
            transport: OnceLock::new(),
            strand: Strand::on(crate::pool::io()),
            scheduled: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            done: Mutex::new(false),
            done_signal: Condvar::new(),
        })
    }

    /// Starts writing to `transport` what is queued and what will be.
    pub fn serve(self: &Arc<Self>, transport: &Arc<dyn Transport>) {
        let _ = self.transport.set(Arc::downgrade(transport));
        // What was queued before could not be written yet (a run without a transport writes
        // nothing); once it is set, later work wakes the dispatcher itself. Nothing queued (every
        // connect): no run, so no hand-off to a pool thread.
        if !self.notices.is_empty() || !self.answers.queue.is_empty() {
            self.wake();
        }
    }

    /// Something was queued: makes sure a run is coming on the strand.
    pub fn wake(self: &Arc<Self>) {
        if self.stopped.load(Ordering::Acquire) || self.scheduled.swap(true, Ordering::AcqRel) {
            return;
        }
        let dispatcher = self.clone();
        // No thread to run it: what is queued waits for the next wake (or is dropped by close).
        if self.strand.submit(move || dispatcher.run()).is_err() {
            self.scheduled.store(false, Ordering::Release);
        }
    }

    /// Stops taking work: queues a last run that writes the notices queued, and waits for it
    /// until `deadline`. Returns whether it ran.
    pub fn stop(self: &Arc<Self>, deadline: Instant) -> bool {
        if self.stopped.swap(true, Ordering::AcqRel) {
            return self.wait_stopped(deadline);
        }
        // Nothing left to write and no run under way (the common close of an idle
        // connection): done here, without a hand-off to a pool thread and back.
        if self.notices.is_empty() && self.strand.is_idle() {
            *lock(&self.done) = true;
            return true;
        }
        let dispatcher = self.clone();
        let last = move || {
            if let Some(transport) = dispatcher.transport() {
                dispatcher
                    .notices
                    .try_iter()
                    .for_each(|notice| handle(&*transport, notice));
            }
            *lock(&dispatcher.done) = true;
            dispatcher.done_signal.notify_all();
        };
        if self.strand.submit(last).is_err() {
            return false;
        }
        self.wait_stopped(deadline)
    }

    /// Waits until `deadline` for the last run queued by `stop` to end.
    pub fn wait_stopped(&self, deadline: Instant) -> bool {
        let mut done = lock(&self.done);
        while !*done {
            match wait_until(&self.done_signal, done, Some(deadline)) {
                Some(waited) => done = waited,
                None => return false,
            }
        }
        true
    }

    fn transport(&self) -> Option<Arc<dyn Transport>> {
        self.transport.get().and_then(Weak::upgrade)
    }

    /// Writes what is queued, notices first, until the queues are empty or the dispatcher
    /// stops.
    fn run(&self) {
        // From here on, what is queued is ours to write; a wake after this queues a new run
        // (taken with Acquire: what was queued before the wake is seen below).
        self.scheduled.swap(false, Ordering::AcqRel);
        let Some(transport) = self.transport() else {
            return;
        };
        while !self.stopped.load(Ordering::Acquire) {
            if let Ok(notice) = self.notices.try_recv() {
                handle(&*transport, notice);
            } else if let Ok(answer) = self.answers.queue.try_recv() {
                self.answers.taken(&answer);
                // A failed write means the connection is going away; the reader reports that.
                let _ = transport.send_notification(&answer);
            } else {
                return;
            }
        }
    }
}

fn handle(transport: &dyn Transport, outgoing: Outgoing) {
    match outgoing {
        // A failed write means the connection is going away; the reader reports that.
        Outgoing::Frame(frame) => {
            let _ = transport.send_notification(&frame);
        }
        Outgoing::Abandon(id) => transport.abandon(id),
    }
}

impl Outbound {
    /// A queue that wakes `dispatcher` (`None`: one that nobody serves, for tests).
    pub fn new(queue: Sender<Outgoing>, dispatcher: Option<Arc<Dispatcher>>) -> Outbound {
        Outbound { queue, dispatcher }
    }

    pub fn send(&self, outgoing: Outgoing) {
        // A closed queue means the connection is gone; there is nobody left to tell.
        if self.queue.send(outgoing).is_ok() {
            if let Some(dispatcher) = &self.dispatcher {
                dispatcher.wake();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{answers, limits};
    use crate::error::Result;
    use crate::transport::OutgoingRequest;
    use std::sync::Mutex;
    use std::time::Duration;

    /// Records the frames the dispatcher writes.
    #[derive(Default)]
    struct Recorder(Mutex<Vec<String>>);

    impl Transport for Recorder {
        fn send_request(&self, _: OutgoingRequest) -> Result<()> {
            Ok(())
        }
        fn send_notification(&self, frame: &str) -> Result<()> {
            self.0.lock().unwrap().push(frame.to_owned());
            Ok(())
        }
        fn close(&self) {}
    }

    #[test]
    fn cancel_notices_go_before_queued_answers() {
        let (notices_tx, notices_rx) = crossbeam_channel::unbounded();
        let (answers_tx, answers_rx) = answers::bounded();
        while answers_tx.offer("answer".into()) {}
        notices_tx.send(Outgoing::Frame("notice".into())).unwrap();
        let dispatcher = Dispatcher::new(notices_rx, answers_rx);
        let recorder = Arc::new(Recorder::default());
        let transport: Arc<dyn Transport> = recorder.clone();
        dispatcher.serve(&transport);
        let deadline = Instant::now() + Duration::from_secs(10);
        while recorder.0.lock().unwrap().len() < limits::MAX_QUEUED_ANSWERS + 1 {
            assert!(Instant::now() < deadline, "everything queued is written");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(recorder.0.lock().unwrap()[0], "notice");
        assert!(dispatcher.stop(Instant::now() + Duration::from_secs(10)));
    }

    #[test]
    fn stop_writes_the_notices_queued_and_nothing_after() {
        let (notices_tx, notices_rx) = crossbeam_channel::unbounded();
        let (_answers_tx, answers_rx) = answers::bounded();
        let dispatcher = Dispatcher::new(notices_rx, answers_rx);
        let outbound = Outbound::new(notices_tx, Some(dispatcher.clone()));
        let recorder = Arc::new(Recorder::default());
        let transport: Arc<dyn Transport> = recorder.clone();
        // Queued before the transport is there: written once it is.
        outbound.send(Outgoing::Frame("early".into()));
        dispatcher.serve(&transport);
        assert!(dispatcher.stop(Instant::now() + Duration::from_secs(10)));
        outbound.send(Outgoing::Frame("late".into()));
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(*recorder.0.lock().unwrap(), vec!["early".to_owned()]);
        assert!(
            dispatcher.wait_stopped(Instant::now()),
            "a second wait returns"
        );
    }
}
