//! The bounded queue of answers to server requests, between the threads that make them (the
//! reader, the handlers) and the dispatcher that writes them. A server can send requests
//! faster than it reads our answers; this is where that stops (see `limits`).
//!
//! Cancel notices do not go through here: they have their own queue (`call::Outbound`), which
//! only the host's own calls fill, and the dispatcher writes them first. Every answer queued
//! wakes the dispatcher (it has no thread of its own waiting).

use super::limits::{MAX_QUEUED_ANSWERS, MAX_QUEUED_ANSWER_BYTES};
use crate::cancellation::CancellationToken;
use crossbeam_channel::{Receiver, SendTimeoutError, Sender, TrySendError};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often a handler waiting for room looks at its cancellation token.
const ROOM_CHECK: Duration = Duration::from_millis(20);

/// The producing side.
pub struct Answers {
    queue: Sender<String>,
    bytes: Arc<AtomicUsize>,
    /// Wakes the dispatcher for each answer queued (`None` in tests that read the queue
    /// themselves).
    wake: Option<Arc<dyn Fn() + Send + Sync>>,
}

/// The dispatcher's side.
pub struct AnswerReceiver {
    pub queue: Receiver<String>,
    bytes: Arc<AtomicUsize>,
}

pub fn bounded() -> (Answers, AnswerReceiver) {
    let (tx, rx) = crossbeam_channel::bounded(MAX_QUEUED_ANSWERS);
    let bytes = Arc::new(AtomicUsize::new(0));
    let answers = Answers {
        queue: tx,
        bytes: bytes.clone(),
        wake: None,
    };
    (answers, AnswerReceiver { queue: rx, bytes })
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

    /// Queues `frame` if there is room, without ever waiting (the reader calls this). False:
    /// the queue is full (or closed) and the answer was dropped.
    pub fn offer(&self, frame: String) -> bool {
        let len = frame.len();
        let before = self.bytes.fetch_add(len, Ordering::AcqRel);
        if before > 0 && before + len > MAX_QUEUED_ANSWER_BYTES {
            self.bytes.fetch_sub(len, Ordering::AcqRel);
            return false;
        }
        match self.queue.try_send(frame) {
            Ok(()) => {
                self.wake();
                true
            }
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.bytes.fetch_sub(len, Ordering::AcqRel);
                false
            }
        }
    }

    /// Queues a handler's answer, waiting for room (a handler thread is ours to hold up).
    /// Gives up when `token` is cancelled (the server cancelled the request, or the client is
    /// closing) or the dispatcher is gone; returns whether the answer was queued.
    pub fn send_waiting(&self, mut frame: String, token: &CancellationToken) -> bool {
        let len = frame.len();
        // Handlers are few (MAX_SERVER_REQUEST_HANDLERS); their answers count towards the
        // bytes but are not refused by them.
        self.bytes.fetch_add(len, Ordering::AcqRel);
        loop {
            if token.is_cancelled() {
                break;
            }
            match self.queue.send_timeout(frame, ROOM_CHECK) {
                Ok(()) => {
                    self.wake();
                    return true;
                }
                Err(SendTimeoutError::Timeout(back)) => frame = back,
                Err(SendTimeoutError::Disconnected(_)) => break,
            }
        }
        self.bytes.fetch_sub(len, Ordering::AcqRel);
        false
    }
}

impl AnswerReceiver {
    /// The dispatcher took `frame` off the queue.
    pub fn taken(&self, frame: &str) {
        self.bytes.fetch_sub(frame.len(), Ordering::AcqRel);
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
}
