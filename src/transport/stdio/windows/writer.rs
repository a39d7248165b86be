//! Writing lines to the server's stdin on Windows: callers queue frames and return; the
//! writer thread writes them whole and in order. So no caller ever waits on a server that
//! does not read, and close ends a write blocked on the pipe at once (see `pipe`).
//!
//! A request whose call ended before its first byte went out is dropped unsent; a request's
//! send boundary is signalled once its last byte is written, so its cancel notice, queued
//! later, always comes after it. A frame once started is finished, or the connection fails.

use super::pipe::{Pipe, Stop, Transfer};
use crate::error::{Error, Result, Status};
use crate::sync::{lock, wait};
use crate::transport::{Inbound, SendBoundary};
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

pub struct StdinWriter {
    state: Mutex<State>,
    /// Signalled when a frame is queued and when close begins (the writer thread waits).
    queued: Condvar,
    /// Signalled when queued frames leave the queue, and when writing ends for good.
    progress: Condvar,
    /// Dropped (closing the server's stdin) once the writer thread has ended.
    pipe: Mutex<Option<Arc<Pipe>>>,
    stop: Stop,
    inbound: Arc<dyn Inbound>,
}

struct State {
    queue: VecDeque<Pending>,
    /// Frames ever queued and ever taken off the queue (written, or dropped unwanted).
    pushed: u64,
    done: u64,
    /// Why writing failed: every later frame fails with this.
    failed: Option<String>,
    closing: bool,
}

struct Pending {
    line: Vec<u8>,
    request: Option<(i64, SendBoundary)>,
}

impl StdinWriter {
    pub fn new(pipe: Pipe, inbound: Arc<dyn Inbound>) -> std::io::Result<StdinWriter> {
        Ok(StdinWriter {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                pushed: 0,
                done: 0,
                failed: None,
                closing: false,
            }),
            queued: Condvar::new(),
            progress: Condvar::new(),
            pipe: Mutex::new(Some(Arc::new(pipe))),
            stop: Stop::new()?,
            inbound,
        })
    }

    /// Queues a request line (with its newline); its boundary is signalled once it is written.
    pub fn send_request(&self, id: i64, line: Vec<u8>, sent: SendBoundary) -> Result<()> {
        self.push(line, Some((id, sent))).map(|_| ())
    }

    /// Queues a line with no send boundary and waits until it is written or writing ends.
    pub fn send_frame(&self, line: Vec<u8>) -> Result<()> {
        let number = self.push(line, None)?;
        let mut state = lock(&self.state);
        loop {
            if state.done >= number {
                return Ok(());
            }
            if let Some(error) = ended(&state) {
                return Err(error);
            }
            state = wait(&self.progress, state);
        }
    }

    fn push(&self, line: Vec<u8>, request: Option<(i64, SendBoundary)>) -> Result<u64> {
        let mut state = lock(&self.state);
        if let Some(error) = ended(&state) {
            if let Some((_, sent)) = request {
                sent.never_sent();
            }
            return Err(error);
        }
        state.queue.push_back(Pending { line, request });
        state.pushed += 1;
        self.queued.notify_one();
        Ok(state.pushed)
    }

    /// The writer thread: writes the queued frames in order until close or a failed write.
    pub fn run(&self) {
        let Some(pipe) = lock(&self.pipe).clone() else {
            return;
        };
        loop {
            let pending = {
                let mut state = lock(&self.state);
                loop {
                    if state.closing || state.failed.is_some() {
                        return;
                    }
                    if let Some(pending) = state.queue.pop_front() {
                        break pending;
                    }
                    state = wait(&self.queued, state);
                }
            };
            if let Some((_, sent)) = &pending.request {
                if !sent.start() {
                    // Its call ended while it waited: not a byte goes out.
                    self.finished();
                    if let Some((_, sent)) = pending.request {
                        sent.never_sent();
                    }
                    continue;
                }
            }
            match self.write_all(&pipe, &pending.line) {
                Ok(()) => {
                    self.finished();
                    if let Some((_, sent)) = pending.request {
                        sent.signal();
                    }
                }
                Err(message) => return self.fail(pending, message),
            }
        }
    }

    /// Writes a whole line; `Err` says why the connection cannot go on.
    fn write_all(&self, pipe: &Pipe, mut line: &[u8]) -> std::result::Result<(), String> {
        while !line.is_empty() {
            match pipe.write(line, &self.stop) {
                Ok(Transfer::Done(n)) => line = &line[n..],
                Ok(Transfer::Stopped | Transfer::Exited) => {
                    return Err("the connection to the server is closed".to_owned())
                }
                Err(e) => return Err(format!("cannot write to the server: {e}")),
            }
        }
        Ok(())
    }

    fn finished(&self) {
        lock(&self.state).done += 1;
        self.progress.notify_all();
    }

    /// Writing failed: the frame in hand and every queued one fail, and so does every later one.
    fn fail(&self, in_hand: Pending, message: String) {
        let queued: Vec<Pending> = {
            let mut state = lock(&self.state);
            state.failed = Some(message.clone());
            state.queue.drain(..).collect()
        };
        self.progress.notify_all();
        let closing = lock(&self.state).closing;
        for pending in std::iter::once(in_hand).chain(queued) {
            if let Some((id, sent)) = pending.request {
                sent.never_sent();
                if !closing {
                    self.inbound
                        .request_failed(id, Error::transport(message.clone()));
                }
            }
        }
    }

    /// Ends writing: queued frames are dropped, a write blocked on the pipe is cancelled, a
    /// sender waiting for its frame is released, and stdin is closed (the server's signal to
    /// leave). The caller joins the writer thread before that last step (`close_pipe`).
    pub fn close(&self) {
        let dropped: Vec<Pending> = {
            let mut state = lock(&self.state);
            state.closing = true;
            state.queue.drain(..).collect()
        };
        self.queued.notify_all();
        self.progress.notify_all();
        self.stop.stop();
        for pending in dropped {
            if let Some((_, sent)) = pending.request {
                sent.never_sent();
            }
        }
    }

    /// Closes our end of stdin, once the writer thread has ended.
    pub fn close_pipe(&self) {
        lock(&self.pipe).take();
    }
}

/// Why nothing more can be written, if that is so.
fn ended(state: &MutexGuard<'_, State>) -> Option<Error> {
    if state.closing {
        return Some(Error::new(
            Status::Closed,
            "the connection to the server is closed",
        ));
    }
    state.failed.clone().map(Error::transport)
}
