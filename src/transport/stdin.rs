//! Writing lines to the server's stdin without ever blocking a caller on the pipe.
//!
//! stdin is non-blocking. A frame is written at once, on the sender's thread, when nothing is
//! queued ahead of it: a small frame costs one `write()` and no hand-off. What does not fit in
//! the pipe (a server that reads slowly or not at all, a frame larger than the pipe buffer)
//! is queued, with the part already written remembered, and the connection's writer thread
//! (started the first time it is needed) finishes it while `poll` says the pipe has room.
//! So a caller never waits for the server to read: a cancel, a timeout or a close frees it
//! at once, and other callers queue their frames instead of waiting for a lock.
//!
//! Frames never interleave: they leave the queue whole and in order. A frame once started is
//! always finished (or the connection fails): half a line followed by another frame would
//! corrupt the stream. A request no longer wanted (its call ended) before its first byte is
//! dropped from the queue and never sent. A request's send boundary is signalled once its
//! last byte is written, so its cancel notice, written later, always comes after it.

use super::sigpipe::{block_sigpipe, no_sigpipe};
use super::wake::{self, WakePipe};
use super::{Inbound, SendBoundary};
use crate::error::{Error, Result, Status};
use crate::sync::{lock, spawn, wait};
use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::process::ChildStdin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

pub struct StdinWriter {
    state: Mutex<State>,
    /// Signalled whenever queued frames leave the queue, and when writing ends for good.
    progress: Condvar,
    /// Wakes the writer thread from `poll`.
    wake: WakePipe,
    fd: RawFd,
    inbound: Arc<dyn Inbound>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

struct State {
    /// Closed (dropped) only once the writer thread has ended, so it never polls a stale fd.
    pipe: Option<ChildStdin>,
    queue: VecDeque<Pending>,
    /// Frames ever queued and ever taken off the queue (written, or dropped unwanted): a
    /// sender waiting for its frame waits for its number to be passed.
    queued: u64,
    done: u64,
    /// Why writing failed (the pipe broke): every later frame fails with this.
    failed: Option<String>,
    closing: bool,
    thread_started: bool,
}

struct Pending {
    line: Vec<u8>,
    written: usize,
    /// For a request: its id and send boundary.
    request: Option<(i64, SendBoundary)>,
}

impl Pending {
    /// A request whose call ended before its first byte was written is not sent at all.
    fn unwanted(&self) -> bool {
        self.written == 0 && matches!(&self.request, Some((_, sent)) if !sent.start())
    }
}

/// What the writer thread has to report once it has let go of the lock.
#[derive(Default)]
struct Report {
    sent: Vec<SendBoundary>,
    dropped: Vec<SendBoundary>,
    failed: Vec<i64>,
}

impl StdinWriter {
    pub fn new(stdin: ChildStdin, inbound: Arc<dyn Inbound>) -> io::Result<StdinWriter> {
        let fd = stdin.as_raw_fd();
        wake::set_flags(fd)?;
        Ok(StdinWriter {
            state: Mutex::new(State {
                pipe: Some(stdin),
                queue: VecDeque::new(),
                queued: 0,
                done: 0,
                failed: None,
                closing: false,
                thread_started: false,
            }),
            progress: Condvar::new(),
            wake: WakePipe::new()?,
            fd,
            inbound,
            thread: Mutex::new(None),
        })
    }

    /// Writes or queues a request line (with its newline) and returns without waiting for the
    /// server to read it. Its boundary is signalled once the whole line is written.
    pub fn send_request(
        self: &Arc<Self>,
        id: i64,
        line: Vec<u8>,
        sent: SendBoundary,
    ) -> Result<()> {
        let mut state = self.lock();
        // Written now (the queue is empty): claimed now. Queued: claimed when its turn comes.
        if state.queue.is_empty() && !sent.start() {
            // Its call has ended already: not a byte goes out.
            sent.never_sent();
            return Ok(());
        }
        let written = match self.write_now(&mut state, &line) {
            Ok(written) => written,
            Err(error) => {
                // Not sent (or not whole, on a pipe now broken): no boundary, no cancel notice.
                sent.never_sent();
                return Err(error);
            }
        };
        if written == line.len() {
            drop(state);
            sent.signal();
            return Ok(());
        }
        self.enqueue(state, line, written, Some((id, sent)))
            .map(|_| ())
    }

    /// Writes a line (with its newline) that has no send boundary (a notification, an answer),
    /// waiting until it is written or writing ends (close, or a broken pipe).
    pub fn send_frame(self: &Arc<Self>, line: Vec<u8>) -> Result<()> {
        let mut state = self.lock();
        let written = self.write_now(&mut state, &line)?;
        if written == line.len() {
            return Ok(());
        }
        let number = self.enqueue(state, line, written, None)?;
        let mut state = self.lock();
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

    /// Ends writing: queued frames are dropped, a sender waiting for its frame is released,
    /// the writer thread ends, and stdin is closed (the server's signal to leave).
    pub fn close(&self) {
        let dropped: Vec<Pending> = {
            let mut state = self.lock();
            state.closing = true;
            state.queue.drain(..).collect()
        };
        self.progress.notify_all();
        self.wake.wake();
        for pending in dropped {
            if let Some((_, sent)) = pending.request {
                sent.never_sent();
            }
        }
        let thread = lock(&self.thread).take();
        if let Some(thread) = thread {
            if thread.thread().id() != std::thread::current().id() {
                let _ = thread.join();
            }
        }
        self.lock().pipe.take();
    }

    /// Writes as much of `line` as the pipe takes now, when nothing is queued ahead of it.
    /// Returns how much was written (0 when it must wait its turn).
    fn write_now(&self, state: &mut State, line: &[u8]) -> Result<usize> {
        if let Some(error) = ended(state) {
            return Err(error);
        }
        if !state.queue.is_empty() {
            return Ok(0);
        }
        let mut written = 0;
        let result = no_sigpipe(|| loop {
            match write(self.fd, &line[written..]) {
                Ok(n) => {
                    written += n;
                    if written == line.len() {
                        return Ok(());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        });
        match result {
            Ok(()) => Ok(written),
            Err(e) => {
                let message = format!("cannot write to the server: {e}");
                state.failed = Some(message.clone());
                Err(Error::transport(message))
            }
        }
    }

    /// Queues the rest of a line for the writer thread; returns its number in the queue.
    fn enqueue(
        self: &Arc<Self>,
        mut state: MutexGuard<'_, State>,
        line: Vec<u8>,
        written: usize,
        request: Option<(i64, SendBoundary)>,
    ) -> Result<u64> {
        if !state.thread_started {
            let writer = self.clone();
            // Without its writer nothing more reaches the server: a bug there fails the
            // connection rather than leaving every call waiting.
            let on_panic = {
                let writer = self.clone();
                move |error: Error| {
                    writer.lock().failed = Some(error.message.clone());
                    writer.progress.notify_all();
                    writer.inbound.closed(error);
                }
            };
            let spawned = spawn("mcpc-stdin-writer", move || writer.run(), on_panic);
            match spawned {
                Ok(handle) => {
                    *lock(&self.thread) = Some(handle);
                    state.thread_started = true;
                }
                Err(e) => {
                    let message = e.message;
                    if written > 0 {
                        // Half a line is on the wire: nothing can follow it any more.
                        state.failed = Some(message.clone());
                    }
                    if let Some((_, sent)) = request {
                        sent.never_sent();
                    }
                    return Err(Error::transport(message));
                }
            }
        }
        state.queue.push_back(Pending {
            line,
            written,
            request,
        });
        state.queued += 1;
        let number = state.queued;
        drop(state);
        self.wake.wake();
        Ok(number)
    }

    /// The writer thread: writes the queued frames in order as the pipe takes them.
    fn run(&self) {
        // Blocked for good on this thread (ours alone), so its writes need no per-write mask:
        // a SIGPIPE they raise stays pending here and goes when the thread ends.
        block_sigpipe();
        loop {
            let mut report = Report::default();
            let (closing, wait_for_room) = {
                let mut state = self.lock();
                let wait_for_room = self.write_queue(&mut state, &mut report);
                (state.closing, wait_for_room)
            };
            self.progress.notify_all();
            self.deliver(report);
            if closing {
                return;
            }
            self.poll(wait_for_room);
        }
    }

    /// Writes queued frames until the queue is empty (false) or the pipe is full (true).
    fn write_queue(&self, state: &mut State, report: &mut Report) -> bool {
        while !state.closing && state.failed.is_none() {
            let Some(front) = state.queue.front_mut() else {
                return false;
            };
            if front.unwanted() {
                let pending = state.queue.pop_front().expect("front exists");
                state.done += 1;
                if let Some((_, sent)) = pending.request {
                    report.dropped.push(sent);
                }
                continue;
            }
            match write(self.fd, &front.line[front.written..]) {
                Ok(n) => {
                    front.written += n;
                    if front.written == front.line.len() {
                        let pending = state.queue.pop_front().expect("front exists");
                        state.done += 1;
                        if let Some((_, sent)) = pending.request {
                            report.sent.push(sent);
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    state.failed = Some(format!("cannot write to the server: {e}"));
                    for pending in state.queue.drain(..) {
                        if let Some((id, sent)) = pending.request {
                            report.failed.push(id);
                            report.dropped.push(sent);
                        }
                    }
                }
            }
        }
        false
    }

    /// Tells the engine what happened, in queue order, without holding the lock.
    fn deliver(&self, report: Report) {
        for sent in report.sent {
            sent.signal();
        }
        for sent in report.dropped {
            sent.never_sent();
        }
        if !report.failed.is_empty() {
            let message = self.lock().failed.clone().unwrap_or_default();
            for id in report.failed {
                self.inbound
                    .request_failed(id, Error::transport(message.clone()));
            }
        }
    }

    /// Waits for a wake-up, and for room in the pipe when `for_room`.
    fn poll(&self, for_room: bool) {
        let mut fds = [
            libc::pollfd {
                // poll ignores a negative fd: with nothing to write, only a wake-up counts.
                fd: if for_room { self.fd } else { -1 },
                events: libc::POLLOUT,
                revents: 0,
            },
            libc::pollfd {
                fd: self.wake.read_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: `fds` is a valid array of two pollfd for the length given.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if ready > 0 && fds[1].revents != 0 {
            self.wake.drain();
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }
}

/// Why nothing more can be written, if that is so.
fn ended(state: &State) -> Option<Error> {
    if state.closing || state.pipe.is_none() {
        return Some(Error::new(
            Status::Closed,
            "the connection to the server is closed",
        ));
    }
    state.failed.clone().map(Error::transport)
}

/// One `write()` to a non-blocking descriptor.
fn write(fd: RawFd, bytes: &[u8]) -> io::Result<usize> {
    // SAFETY: writes from a live slice of the given length.
    let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
    match n {
        n if n >= 0 => Ok(n as usize),
        _ => Err(io::Error::last_os_error()),
    }
}
