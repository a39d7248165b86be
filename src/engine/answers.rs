//! The bounded queue of answers to server requests, between the threads that make them (the
//! reader, the handlers) and the dispatcher that writes them. A server can send requests
//! faster than it reads our answers; this is where that stops (see `limits`).
//!
//! The queue grows on demand and its bound is counted beside it (`Room`): a bounded channel
//! would allocate all its slots up front, in every connection, idle or not.
//!
//! Cancel notices do not go through here: they have their own queue (`call::Outbound`), which
//! only the host's own calls fill, and the dispatcher writes them first. Every answer queued
//! wakes the dispatcher (it has no thread of its own waiting).

use super::limits::{MAX_QUEUED_ANSWERS, MAX_QUEUED_ANSWER_BYTES};
use crate::cancellation::CancellationToken;
use crate::sync::lock;
use crossbeam_channel::{Receiver, Sender};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// How often a handler waiting for room looks at its cancellation token.
const ROOM_CHECK: Duration = Duration::from_millis(20);

/// The producing side.
pub struct Answers {
    queue: Sender<String>,
    room: Arc<Room>,
    /// Wakes the dispatcher for each answer queued (`None` in tests that read the queue
    /// themselves).
    wake: Option<Arc<dyn Fn() + Send + Sync>>,
}

/// The dispatcher's side.
pub struct AnswerReceiver {
    pub queue: Receiver<String>,
    room: Arc<Room>,
}

/// What the queue holds, in answers and in bytes, and the wait of handlers for room.
#[derive(Default)]
struct Room {
    answers: AtomicUsize,
    bytes: AtomicUsize,
    /// The dispatcher's side is gone: nobody makes room any more.
    closed: AtomicBool,
    /// Held while a handler looks for room and when room is made, so that no wake-up is lost.
    waiting: Mutex<()>,
    made: Condvar,
}

pub fn bounded() -> (Answers, AnswerReceiver) {
    let (tx, rx) = crossbeam_channel::unbounded();
    let room = Arc::new(Room::default());
    let answers = Answers {
        queue: tx,
        room: room.clone(),
        wake: None,
    };
    (answers, AnswerReceiver { queue: rx, room })
}

impl Room {
    /// Takes the room for one answer of `len` bytes, if the count allows it and, unless
    /// `any_size`, the bytes too (one answer always fits an empty queue).
    fn take(&self, len: usize, any_size: bool) -> bool {
        if self.answers.fetch_add(1, Ordering::AcqRel) >= MAX_QUEUED_ANSWERS {
            self.answers.fetch_sub(1, Ordering::AcqRel);
            return false;
        }
        let before = self.bytes.fetch_add(len, Ordering::AcqRel);
        if !any_size && before > 0 && before + len > MAX_QUEUED_ANSWER_BYTES {
            self.answers.fetch_sub(1, Ordering::AcqRel);
            self.bytes.fetch_sub(len, Ordering::AcqRel);
            return false;
        }
        true
    }

    /// An answer left the queue (or never entered it): wakes the handlers waiting for room.
    fn give_back(&self, len: usize) {
        self.answers.fetch_sub(1, Ordering::AcqRel);
        self.bytes.fetch_sub(len, Ordering::AcqRel);
        drop(lock(&self.waiting));
        self.made.notify_all();
    }
}

impl Answers {
    /// The same queue, calling `wake` (the dispatcher's) for each answer.
    pub fn waking(self, wake: Arc<dyn Fn() + Send + Sync>) -> Answers {
        Answers {
            wake: Some(wake),
            ..self
        }
    }

    fn wake(&self) {
        if let Some(wake) = &self.wake {
            wake();
        }
    }

    /// Queues `frame` once its room is taken; false (and the room given back) when the
    /// dispatcher is gone.
    fn put(&self, frame: String) -> bool {
        let len = frame.len();
        if self.queue.send(frame).is_err() {
            self.room.give_back(len);
            return false;
        }
        self.wake();
        true
    }

    /// Queues `frame` if there is room, without ever waiting (the reader calls this). False:
    /// the queue is full (or closed) and the answer was dropped.
    pub fn offer(&self, frame: String) -> bool {
        self.room.take(frame.len(), false) && self.put(frame)
    }

    /// Queues a handler's answer, waiting for room (a handler thread is ours to hold up).
    /// Gives up when `token` is cancelled (the server cancelled the request, or the client is
    /// closing) or the dispatcher is gone; returns whether the answer was queued.
    pub fn send_waiting(&self, frame: String, token: &CancellationToken) -> bool {
        let room = &*self.room;
        let mut waiting = lock(&room.waiting);
        loop {
            if token.is_cancelled() || room.closed.load(Ordering::Acquire) {
                return false;
            }
            // Handlers are few (MAX_SERVER_REQUEST_HANDLERS); their answers count towards the
            // bytes but are not refused by them.
            if room.take(frame.len(), true) {
                drop(waiting);
                return self.put(frame);
            }
            waiting = room
                .made
                .wait_timeout(waiting, ROOM_CHECK)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

impl AnswerReceiver {
    /// The dispatcher took `frame` off the queue.
    pub fn taken(&self, frame: &str) {
        self.room.give_back(frame.len());
    }
}

impl Drop for AnswerReceiver {
    fn drop(&mut self) {
        self.room.closed.store(true, Ordering::Release);
        drop(lock(&self.room.waiting));
        self.room.made.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offers_past_the_count_are_dropped() {
        let (answers, receiver) = bounded();
        for _ in 0..MAX_QUEUED_ANSWERS {
            assert!(answers.offer("{}".into()));
        }
        assert!(!answers.offer("{}".into()), "the queue is full");
        let frame = receiver.queue.try_recv().unwrap();
        receiver.taken(&frame);
        assert!(answers.offer("{}".into()), "room again");
    }

    #[test]
    fn offers_past_the_bytes_are_dropped_but_one_always_fits() {
        let (answers, receiver) = bounded();
        let big = "x".repeat(MAX_QUEUED_ANSWER_BYTES + 1);
        assert!(answers.offer(big.clone()), "alone, any size fits");
        assert!(!answers.offer("{}".into()), "over the byte budget");
        let frame = receiver.queue.try_recv().unwrap();
        receiver.taken(&frame);
        assert!(answers.offer("{}".into()));
    }

    #[test]
    fn a_waiting_handler_gives_up_when_cancelled_or_closed() {
        let (answers, receiver) = bounded();
        while answers.offer("{}".into()) {}
        let token = CancellationToken::new();
        token.cancel(None);
        assert!(!answers.send_waiting("{}".into(), &token));
        drop(receiver);
        assert!(!answers.send_waiting("{}".into(), &CancellationToken::new()));
    }

    #[test]
    fn a_waiting_handler_gets_in_once_the_dispatcher_takes_an_answer() {
        let (answers, receiver) = bounded();
        while answers.offer("{}".into()) {}
        let answers = Arc::new(answers);
        let handler = {
            let answers = answers.clone();
            std::thread::spawn(move || {
                answers.send_waiting("last".into(), &CancellationToken::new())
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!handler.is_finished(), "waits while the queue is full");
        let frame = receiver.queue.try_recv().unwrap();
        receiver.taken(&frame);
        assert!(handler.join().unwrap(), "queued once there was room");
    }
}
