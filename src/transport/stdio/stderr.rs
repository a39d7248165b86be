//! Reading the server's stderr on the reactor (unix), so the server never blocks on a full
//! pipe: each line goes to the tail, and to the host's stderr callback if there is one. The
//! callback is host code, so it never runs on the reactor: its lines are queued and run in
//! order on a shared worker. The queue is bounded: while it is full, stderr is not read (as
//! when a callback held the old stderr thread), so a slow callback slows the server's stderr
//! rather than losing lines or memory.

use super::config::StderrCallback;
use super::lines::{Line, LineReader};
use super::read_buffer::ReadBuffer;
use super::serial::Serial;
use super::stderr_tail::{StderrTail, STDERR_LINE_MAX};
use crate::error::Error;
use crate::sync::lock;
use crate::transport::reactor::{self, Event, Handle, Reactor, Registration};
use std::io;
use std::os::fd::AsRawFd;
use std::process::ChildStderr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// At most this many lines wait for a slow stderr callback.
const CALLBACK_QUEUE_LINES: usize = 1024;

/// At most this many lines are read per turn of the reactor.
const LINES_PER_TURN: usize = 256;

pub struct StderrReader {
    /// Read through a buffer that is allocated on the server's first stderr output (most
    /// servers of an idle host write none) and given back after a burst.
    stream: Mutex<(ReadBuffer<ChildStderr>, LineReader)>,
    tail: Arc<StderrTail>,
    callback: Option<(StderrCallback, Arc<Serial>)>,
    /// Reading waits for room in the callback's queue.
    paused: AtomicBool,
    /// stderr's registration on the reactor, to read again once there is room.
    watch: OnceLock<Handle>,
}

impl StderrReader {
    /// Starts reading `stderr` (made non-blocking) on `reactor`, until its end or until the
    /// registration is dropped. The reader must outlive the registration: it owns the
    /// descriptor.
    pub(super) fn start(
        stderr: ChildStderr,
        tail: Arc<StderrTail>,
        callback: Option<StderrCallback>,
        reactor: &Arc<Reactor>,
    ) -> io::Result<(Arc<StderrReader>, Registration)> {
        crate::transport::wake::set_flags(stderr.as_raw_fd())?;
        let fd = stderr.as_raw_fd();
        let reader = Arc::new(StderrReader {
            stream: Mutex::new((ReadBuffer::new(stderr), LineReader::new(STDERR_LINE_MAX))),
            tail,
            callback: callback.map(|cb| (cb, Serial::new(CALLBACK_QUEUE_LINES))),
            paused: AtomicBool::new(false),
            watch: OnceLock::new(),
        });
        let registration = reactor.register(Some(fd), Arc::new(reader.clone()))?;
        let _ = reader.watch.set(registration.handle().clone());
        Ok((reader, registration))
    }

    /// No callback starts after this; one running is waited for, at most `limit` (not when
    /// close runs in it).
    pub fn close(&self, limit: Duration) {
        if let Some((_, queue)) = &self.callback {
            queue.close(limit);
        }
    }

    fn line(self: &Arc<Self>, line: String) {
        if let Some((callback, queue)) = &self.callback {
            let (callback, reader, copy) = (callback.clone(), self.clone(), line.clone());
            queue.push(move || {
                callback(&copy);
                reader.resume_if_room();
            });
        }
        self.tail.push(line);
    }

    /// Whether reading must wait for the callback's queue to have room; if so, the next job
    /// that leaves room resumes it.
    fn must_pause(&self) -> bool {
        let Some((_, queue)) = &self.callback else {
            return false;
        };
        if !queue.is_full() {
            return false;
        }
        self.paused.store(true, Ordering::SeqCst);
        // The queue may have drained between the look and the mark: then read on.
        if !queue.is_full() && self.paused.swap(false, Ordering::SeqCst) {
            return false;
        }
        true
    }

    fn resume_if_room(&self) {
        let Some((_, queue)) = &self.callback else {
            return;
        };
        if self.paused.load(Ordering::SeqCst)
            && !queue.is_full()
            && self.paused.swap(false, Ordering::SeqCst)
        {
            if let Some(watch) = self.watch.get() {
                watch.wake_now();
            }
        }
    }
}

impl reactor::Source for Arc<StderrReader> {
    fn ready(&self, handle: &Handle, _event: Event) {
        let mut stream = lock(&self.stream);
        let (reader, lines) = &mut *stream;
        for _ in 0..LINES_PER_TURN {
            if self.must_pause() {
                return;
            }
            match lines.read(reader) {
                Ok(Line::Complete) => {
                    let line = String::from_utf8_lossy(lines.line()).into_owned();
                    lines.shrink();
                    self.line(line);
                }
                Ok(Line::TooLong) => self
                    .tail
                    .push(format!("[a stderr line over {STDERR_LINE_MAX} bytes]")),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    reader.shrink();
                    return handle.arm();
                }
                Ok(Line::Eof) | Err(_) => return self.tail.finish(),
            }
        }
        // A server that writes without pause: the other connections get their turn first.
        handle.wake_now();
    }

    fn panicked(&self, _error: Error) {
        // Nobody waits for stderr but the end's message, which waits a bounded while.
        self.tail.finish();
    }
}
