//! Writing lines to the server's stdin without ever blocking a caller on the pipe.
//!
//! stdin is non-blocking. Every frame goes through the queue, and whoever finds nobody writing
//! becomes the writer: it takes every frame queued (its own and those of callers that arrived
//! meanwhile), writes them with one `writev()` without holding the lock, and looks again. A
//! sender that finds a writer at work only queues its frame and returns: frames from concurrent
//! callers leave in one system call, and nobody waits on a lock held across a write. A lone
//! sequential caller's frame costs one `write()` and no hand-off. What does not fit in the pipe
//! (a server that reads slowly or not at all, a frame larger than the pipe buffer) stays queued,
//! with the part already written remembered, and the connection's writer thread (started the
//! first time it is needed) finishes it while `poll` says the pipe has room. So a caller never
//! waits for the server to read: a cancel, a timeout or a close frees it at once.
//!
//! Requests started together ([`coalesce_requests`], the C API's batch start) are only queued
//! while they are being made, and leave in one `writev()` when the last is: a host refilling its
//! window of calls wakes the server once, not once per call.
//!
//! Frames never interleave: they leave the queue whole and in order. A frame once started is
//! always finished (or the connection fails): half a line followed by another frame would
//! corrupt the stream. A request no longer wanted (its call ended) before a writer takes it off
//! the queue is dropped and never sent; one taken (claimed for the wire: a `writev()` may take
//! more than the pipe then holds) is written whole. A request's send boundary is signalled
//! once its last byte is written, so its cancel notice, written later, always comes after it.

use super::sigpipe::{self, block_sigpipe};
use crate::error::{Error, Result, Status};
use crate::sync::{lock, spawn, wait};
use crate::transport::wake::{self, WakePipe};
use crate::transport::{Inbound, SendBoundary};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::process::ChildStdin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;

thread_local! {
    /// Inside [`coalesce_requests`]: the writers that hold this thread's requests, to be
    /// written when it ends. `None` outside.
    static HELD: RefCell<Option<Vec<Arc<StdinWriter>>>> = const { RefCell::new(None) };
}

/// Runs `starts` with the requests this thread sends queued instead of written, then writes
/// each writer's queue: requests started together leave together, in one `writev()` each.
/// `starts` must not wait for the server (its requests are not on the wire until it returns):
/// it only starts requests. Other threads' frames are not held (a thread that writes meanwhile
/// takes the held ones along), and a notification or an answer sent inside is written at once,
/// the held requests before it.
pub fn coalesce_requests<R>(starts: impl FnOnce() -> R) -> R {
    if HELD.with(|held| held.borrow().is_some()) {
        return starts(); // nested: the outer scope writes them
    }
    HELD.with(|held| *held.borrow_mut() = Some(Vec::new()));
    /// Writes what is held also when `starts` panics.
    struct WriteHeld;
    impl Drop for WriteHeld {
        fn drop(&mut self) {
            let writers = HELD
                .with(|held| held.borrow_mut().take())
                .unwrap_or_default();
            for writer in writers {
                writer.write_held();
            }
        }
    }
    let _write_held = WriteHeld;
    starts()
}

/// At most this many frames go in one `writev()` (far below any system's IOV_MAX).
const BATCH: usize = 64;

pub struct StdinWriter {
    state: Mutex<State>,
    /// Signalled whenever queued frames leave the queue, and when writing ends for good.
    progress: Condvar,
    /// Wakes the writer thread from `poll`: made with the thread, so that a connection whose
    /// server always takes its input at once holds no descriptor for it.
    wake: OnceLock<WakePipe>,
    fd: RawFd,
    /// A host thread's write keeps SIGPIPE from the host (false when the host promised it is
    /// ignored).
    guard_sigpipe: bool,
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
    /// A sender is writing frames it took off the queue, without the lock: nobody else
    /// writes meanwhile (the writer thread included), and stdin stays open until it is done.
    writing: bool,
    /// The pipe was full when a sender last wrote: the rest is the writer thread's.
    pipe_full: bool,
    /// The writing sender's batch, kept between batches so that sending allocates nothing.
    spare: Vec<Pending>,
    /// Threads waiting on `progress`: with none, a write skips the wake-up (a system call).
    waiters: usize,
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
    sent: Boundaries,
    dropped: Boundaries,
    failed: Vec<i64>,
}

/// Send boundaries to tell, in order. The first is kept inline: a lone caller's frame (every
/// sequential call) is reported without an allocation.
#[derive(Default)]
struct Boundaries {
    first: Option<SendBoundary>,
    rest: Vec<SendBoundary>,
}

impl Boundaries {
    fn push(&mut self, boundary: SendBoundary) {
        match self.first {
            None => self.first = Some(boundary),
            Some(_) => self.rest.push(boundary),
        }
    }
}

impl IntoIterator for Boundaries {
    type Item = SendBoundary;
    type IntoIter =
        std::iter::Chain<std::option::IntoIter<SendBoundary>, std::vec::IntoIter<SendBoundary>>;

    fn into_iter(self) -> Self::IntoIter {
        self.first.into_iter().chain(self.rest)
    }
}

impl StdinWriter {
    pub fn new(
        stdin: ChildStdin,
        inbound: Arc<dyn Inbound>,
        guard_sigpipe: bool,
    ) -> io::Result<StdinWriter> {
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
                writing: false,
                pipe_full: false,
                spare: Vec::new(),
                waiters: 0,
            }),
            progress: Condvar::new(),
            wake: OnceLock::new(),
            fd,
            guard_sigpipe,
            inbound,
            thread: Mutex::new(None),
        })
    }

    /// Writes or queues a request line (with its newline) and returns without waiting for the
    /// server to read it. Its boundary is signalled once the whole line is written; a request
    /// whose call ended before its turn is claimed by nobody and never written.
    pub fn send_request(
        self: &Arc<Self>,
        id: i64,
        line: Vec<u8>,
        sent: SendBoundary,
    ) -> Result<()> {
        let state = self.lock();
        if let Some(error) = ended(&state) {
            sent.never_sent();
            return Err(error);
        }
        let (_, mut report) = self.queue_and_write(state, line, Some((id, sent)));
        // Our own frame failing is our caller's error, told here (its boundary is dropped in
        // the report); only the others' go to the engine.
        let ours = report.failed.iter().position(|&failed| failed == id);
        let error = ours.map(|at| {
            report.failed.swap_remove(at);
            Error::transport(self.lock().failed.clone().unwrap_or_default())
        });
        self.deliver(report);
        error.map_or(Ok(()), Err)
    }

    /// Writes a line (with its newline) that has no send boundary (a notification, an answer),
    /// waiting until it is written or writing ends (close, or a broken pipe).
    pub fn send_frame(self: &Arc<Self>, line: Vec<u8>) -> Result<()> {
        let state = self.lock();
        if let Some(error) = ended(&state) {
            return Err(error);
        }
        let (number, report) = self.queue_and_write(state, line, None);
        self.deliver(report);
        let mut state = self.lock();
        loop {
            if state.done >= number {
                return Ok(());
            }
            if let Some(error) = ended(&state) {
                return Err(error);
            }
            state = self.wait_for_progress(state);
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
        self.wake_writer();
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
        let mut state = self.lock();
        // A sender still writing uses the descriptor: it is closed once that write returns.
        while state.writing {
            state = self.wait_for_progress(state);
        }
        state.pipe.take();
    }

    /// Queues a frame and, when nobody is writing, writes every queued frame on this thread
    /// (see the module comment). Returns the frame's number in the queue and what happened to
    /// the frames written here, for `deliver` once the caller has the lock no more.
    fn queue_and_write<'a>(
        self: &'a Arc<Self>,
        mut state: MutexGuard<'a, State>,
        line: Vec<u8>,
        request: Option<(i64, SendBoundary)>,
    ) -> (u64, Report) {
        let is_request = request.is_some();
        state.queue.push_back(Pending {
            line,
            written: 0,
            request,
        });
        state.queued += 1;
        let number = state.queued;
        if is_request && self.hold() {
            return (number, Report::default());
        }
        (number, self.write_queued(state))
    }

    /// Whether this thread holds its requests (inside [`coalesce_requests`]); if so, this
    /// writer is remembered, to be written when the scope ends.
    fn hold(self: &Arc<Self>) -> bool {
        HELD.with(|held| match &mut *held.borrow_mut() {
            Some(writers) => {
                if !writers.iter().any(|w| Arc::ptr_eq(w, self)) {
                    writers.push(self.clone());
                }
                true
            }
            None => false,
        })
    }

    /// Writes the requests held by [`coalesce_requests`] (unless another writer took them).
    fn write_held(self: &Arc<Self>) {
        let state = self.lock();
        if ended(&state).is_some() {
            return; // close() or the failure dealt with the queue
        }
        let report = self.write_queued(state);
        self.deliver(report);
    }

    /// When nobody is writing, writes every queued frame on this thread (see the module
    /// comment), and returns what happened to them, for `deliver` once the lock is let go.
    fn write_queued<'a>(self: &'a Arc<Self>, mut state: MutexGuard<'a, State>) -> Report {
        let mut report = Report::default();
        if state.writing || state.pipe_full {
            // The writer at work takes it; or the pipe is full and the writer thread waits
            // for room, and takes it then.
            return report;
        }
        state.writing = true;
        let mut batch = std::mem::take(&mut state.spare);
        loop {
            while batch.len() < BATCH {
                let Some(pending) = state.queue.pop_front() else {
                    break;
                };
                if pending.unwanted() {
                    state.done += 1;
                    if let Some((_, sent)) = pending.request {
                        report.dropped.push(sent);
                    }
                    continue;
                }
                batch.push(pending);
            }
            if batch.is_empty() {
                break;
            }
            drop(state);
            let result = match self.guard_sigpipe {
                true => write_batch(self.fd, &mut batch, sigpipe::writev_from_host),
                false => write_batch(self.fd, &mut batch, sigpipe::writev),
            };
            state = self.lock();
            // Written whole: done. The rest goes back to the front of the queue, in order.
            let whole = batch
                .iter()
                .take_while(|p| p.written == p.line.len())
                .count();
            for pending in batch.drain(..whole) {
                state.done += 1;
                if let Some((_, sent)) = pending.request {
                    report.sent.push(sent);
                }
                crate::frame_buffers::give_back(pending.line);
            }
            for pending in batch.drain(..).rev() {
                state.queue.push_front(pending);
            }
            match result {
                Ok(true) => {}
                Ok(false) => {
                    state.pipe_full = true;
                    break;
                }
                Err(e) => {
                    fail(&mut state, &e, &mut report);
                    break;
                }
            }
            if state.closing {
                break;
            }
        }
        if state.closing {
            // close() emptied the queue before we put our rest back: never to be written.
            for pending in state.queue.drain(..) {
                if let Some((_, sent)) = pending.request {
                    report.dropped.push(sent);
                }
            }
        }
        state.writing = false;
        state.spare = batch;
        let need_thread = state.pipe_full && !state.closing && state.failed.is_none();
        if need_thread {
            self.start_thread(&mut state, &mut report);
        }
        let waiters = state.waiters > 0;
        drop(state);
        if waiters {
            self.progress.notify_all();
        }
        if need_thread {
            self.wake_writer();
        }
        report
    }

    /// Starts the writer thread, the first time the pipe is full. If it cannot start, writing
    /// fails for good: every queued frame fails, in `report`.
    fn start_thread(self: &Arc<Self>, state: &mut MutexGuard<'_, State>, report: &mut Report) {
        if state.thread_started {
            return;
        }
        if self.wake.get().is_none() {
            match WakePipe::new() {
                Ok(wake) => {
                    let _ = self.wake.set(wake);
                }
                Err(e) => {
                    // As when the thread cannot start (below).
                    let message = format!("cannot start the mcpc-stdin-writer thread: {e}");
                    fail(state, &io::Error::other(message.clone()), report);
                    state.failed = Some(message);
                    return;
                }
            }
        }
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
        match spawn("mcpc-stdin-writer", move || writer.run(), on_panic) {
            Ok(handle) => {
                *lock(&self.thread) = Some(handle);
                state.thread_started = true;
            }
            Err(e) => {
                // What is queued can never be written now (and a frame may be half written:
                // nothing can follow it any more).
                let error = io::Error::other(e.message.clone());
                fail(state, &error, report);
                state.failed = Some(e.message);
            }
        }
    }

    /// The writer thread: writes the queued frames in order as the pipe takes them.
    fn run(&self) {
        // Blocked for good on this thread (ours alone), so its writes need no per-write mask:
        // a SIGPIPE they raise stays pending here and goes when the thread ends.
        block_sigpipe();
        loop {
            let mut report = Report::default();
            let (closing, wait_for_room, waiters) = {
                let mut state = self.lock();
                let wait_for_room = self.write_queue(&mut state, &mut report);
                (state.closing, wait_for_room, state.waiters > 0)
            };
            if waiters {
                self.progress.notify_all();
            }
            self.deliver(report);
            if closing {
                return;
            }
            self.poll(wait_for_room);
        }
    }

    /// Writes queued frames until the queue is empty (false) or the pipe is full (true).
    /// Nothing while a sender writes: the frames it took would be overtaken.
    fn write_queue(&self, state: &mut State, report: &mut Report) -> bool {
        if state.writing {
            return false;
        }
        let full = self.write_queue_now(state, report);
        state.pipe_full = full;
        full
    }

    fn write_queue_now(&self, state: &mut State, report: &mut Report) -> bool {
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
                Err(e) => fail(state, &e, report),
            }
        }
        false
    }

    /// Waits on `progress`, counted in `waiters` meanwhile so that writers know to wake it.
    fn wait_for_progress<'a>(&'a self, mut state: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        state.waiters += 1;
        let mut state = wait(&self.progress, state);
        state.waiters -= 1;
        state
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
                fd: self.wake.get().map_or(-1, WakePipe::read_fd),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: `fds` is a valid array of two pollfd for the length given.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if ready > 0 && fds[1].revents != 0 {
            if let Some(wake) = self.wake.get() {
                wake.drain();
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Wakes the writer thread, if it was ever started.
    fn wake_writer(&self) {
        if let Some(wake) = self.wake.get() {
            wake.wake();
        }
    }
}

/// Writing failed for good: every queued frame fails with it.
fn fail(state: &mut State, error: &io::Error, report: &mut Report) {
    state.failed = Some(format!("cannot write to the server: {error}"));
    for pending in state.queue.drain(..) {
        if let Some((id, sent)) = pending.request {
            report.failed.push(id);
            report.dropped.push(sent);
        }
    }
}

/// Writes the frames of `batch` in order with `writev` (one of [`sigpipe`]'s) until all are
/// written (true) or the pipe is full (false), recording in each how much of it went out.
fn write_batch(
    fd: RawFd,
    batch: &mut [Pending],
    writev: fn(RawFd, &[io::IoSlice<'_>]) -> io::Result<usize>,
) -> io::Result<bool> {
    let mut first = 0;
    while first < batch.len() {
        let mut slices = [io::IoSlice::new(&[]); BATCH];
        let count = (batch.len() - first).min(BATCH);
        for (slice, p) in slices.iter_mut().zip(&batch[first..first + count]) {
            *slice = io::IoSlice::new(&p.line[p.written..]);
        }
        let mut n = match writev(fd, &slices[..count]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        while n > 0 {
            let pending = &mut batch[first];
            let step = n.min(pending.line.len() - pending.written);
            pending.written += step;
            n -= step;
            if pending.written == pending.line.len() {
                first += 1;
            }
        }
    }
    Ok(true)
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
