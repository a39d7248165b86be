//! The stdio transport on Windows: the server runs in a job object (`job`), and its stdin,
//! stdout and stderr are overlapped named pipes (`pipe`) that close can interrupt at once.
//!
//! Threads: the reader thread reads stdout and routes every line to the engine by id; it
//! watches the server's process handle too, so the exit is seen even while a process the
//! server started keeps stdout open. Callers wait for their outcome on the engine, never on a
//! pipe, so a cancel, a timeout or a close frees them at once. The writer thread writes the
//! queued frames to stdin (`writer`). One thread drains stderr when it is kept.

mod event;
mod job;
mod pipe;
mod writer;

use super::config::{StderrCallback, StderrMode, StdioConfig, CLOSE_GRACE};
use super::frames::{Frames, Reader};
use super::lines::{Line, LineReader};
use super::stderr_tail::{StderrTail, STDERR_LINE_MAX};
use crate::error::{Error, Result};
use crate::sync::{join_until, lock, spawn};
use crate::transport::{Inbound, THREAD_WAIT_ON_CLOSE};
use job::Job;
use pipe::{Direction, Pipe, Stop, Transfer};
use std::io::{self, BufReader, Read};
use std::os::windows::io::{AsRawHandle, RawHandle};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use windows_sys::Win32::Foundation::{HANDLE, WAIT_OBJECT_0};
use windows_sys::Win32::System::Threading::WaitForSingleObject;
use writer::StdinWriter;

pub use event::Event;

/// The server's process and pipes (see the module's comment); `super::StdioTransport` is the
/// transport made of it.
pub struct ServerProcess {
    /// Written by the transport (`super::transport`), as are `pid` and `tail` read.
    pub(super) stdin: Arc<StdinWriter>,
    child: Arc<Mutex<Child>>,
    job: Option<Job>,
    pub(super) pid: u32,
    pub(super) tail: Arc<StderrTail>,
    /// Ends the stdout and stderr threads' reads, once the server is gone.
    readers_stop: Arc<Stop>,
    closing: Arc<AtomicBool>,
    writer_thread: Mutex<Option<JoinHandle<()>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl ServerProcess {
    /// Starts the server and its reader, writer and stderr threads.
    pub fn spawn(config: &StdioConfig, inbound: Arc<dyn Inbound>) -> Result<ServerProcess> {
        let (mut command, program) = config.command()?;
        let setup =
            |e: io::Error| Error::transport(format!("cannot set up the server's pipes: {e}"));
        let (stdin, their_stdin) = pipe::pair(Direction::ToServer).map_err(setup)?;
        let (stdout, their_stdout) = pipe::pair(Direction::FromServer).map_err(setup)?;
        let (stderr, their_stderr) = match config.stderr {
            StderrMode::Inherit => (None, Stdio::inherit()),
            StderrMode::Discard => (None, Stdio::null()),
            _ => {
                let (ours, theirs) = pipe::pair(Direction::FromServer).map_err(setup)?;
                (Some(ours), Stdio::from(theirs))
            }
        };
        command
            .stdin(Stdio::from(their_stdin))
            .stdout(Stdio::from(their_stdout))
            .stderr(their_stderr);
        // The Command (and with it the server's ends of the pipes) is dropped here, so our
        // reads see the end of the stream when the server's processes are gone.
        let (child, job) = job::spawn(command)
            .map_err(|e| Error::transport(format!("cannot start server `{program}`: {e}")))?;
        let pid = child.id();
        let process = child.as_raw_handle() as usize;
        let child = Arc::new(Mutex::new(child));
        let tail = Arc::new(StderrTail::default());
        let closing = Arc::new(AtomicBool::new(false));
        let stop = Stop::new().map_err(setup)?;
        let readers_stop = Arc::new(stop);
        let stdin = Arc::new(StdinWriter::new(stdin, inbound.clone()).map_err(setup)?);
        let transport = ServerProcess {
            stdin: stdin.clone(),
            child: child.clone(),
            job,
            pid,
            tail: tail.clone(),
            readers_stop: readers_stop.clone(),
            closing: closing.clone(),
            writer_thread: Mutex::new(None),
            threads: Mutex::new(Vec::new()),
        };
        // From here on, a failure closes what was started (Drop runs close).

        match stderr {
            None => tail.finish(),
            Some(stderr) => {
                let (tail, stop) = (tail.clone(), readers_stop.clone());
                let callback = match &config.stderr {
                    StderrMode::Callback(cb) => Some(cb.clone()),
                    _ => None,
                };
                let drain = move || drain_stderr(stderr, &stop, &tail, callback);
                lock(&transport.threads).push(spawn("mcpc-stderr", drain, |_| ())?);
            }
        }
        {
            let (writer, failed) = (stdin.clone(), inbound.clone());
            let thread = spawn(
                "mcpc-stdin-writer",
                move || writer.run(),
                move |error| failed.closed(error),
            )?;
            *lock(&transport.writer_thread) = Some(thread);
        }
        let exit_within: super::frames::ExitWithin = {
            let child = child.clone();
            Box::new(move |limit| exited_within(&mut lock(&child), limit))
        };
        let frames = Reader {
            inbound: inbound.clone(),
            exit_within,
            tail,
            closing,
            max_line_bytes: config.max_line_bytes,
        };
        let max_line_bytes = config.max_line_bytes;
        let read = move || {
            let stream = PipeStream {
                pipe: stdout,
                stop: readers_stop,
                exit: Some(process as RawHandle),
            };
            read_stdout(stream, max_line_bytes, &frames);
        };
        // Calls must not wait for a reader that is gone.
        let on_panic = move |error: Error| inbound.closed(error);
        lock(&transport.threads).push(spawn("mcpc-stdio-reader", read, on_panic)?);
        Ok(transport)
    }

    /// Never: the reader thread reads every answer on Windows.
    pub fn read_here(&self, _: &dyn Fn() -> bool, _: Option<Instant>, _: bool) -> bool {
        false
    }

    pub fn reader_waker(&self) -> Option<crate::transport::Waker> {
        None
    }

    pub fn close(&self) {
        if self.closing.swap(true, Ordering::AcqRel) {
            return;
        }
        let me = std::thread::current().id();
        let join = |thread: JoinHandle<()>| {
            // A host callback running on one of our threads may close the client: never
            // join the current thread.
            if thread.thread().id() != me {
                let _ = thread.join();
            }
        };
        // End of input is how a stdio server is asked to leave; a write blocked on a server
        // that does not read is cancelled first.
        self.stdin.close();
        if let Some(thread) = lock(&self.writer_thread).take() {
            join(thread);
        }
        self.stdin.close_pipe();
        {
            let mut child = lock(&self.child);
            if exited_within(&mut child, CLOSE_GRACE).is_none() {
                // No SIGTERM on Windows: the job ends the server and all it started.
                match &self.job {
                    Some(job) => job.terminate(),
                    None => drop(child.kill()),
                }
            }
            // Whatever the server started and left behind goes with it.
            if let Some(job) = &self.job {
                job.terminate();
            }
            let _ = child.wait();
        }
        // What is left on stdout and stderr can only come from processes outside the job. A
        // stderr callback that never returns is let go.
        self.readers_stop.stop();
        let deadline = std::time::Instant::now() + THREAD_WAIT_ON_CLOSE;
        for thread in std::mem::take(&mut *lock(&self.threads)) {
            join_until(thread, deadline);
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.close();
    }
}

/// The child's exit status if it exits within `limit` (waiting on its process handle).
fn exited_within(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let handle = child.as_raw_handle() as HANDLE;
    let ms = u32::try_from(limit.as_millis()).unwrap_or(u32::MAX - 1);
    // SAFETY: the process handle stays open while the Child lives.
    if unsafe { WaitForSingleObject(handle, ms) } != WAIT_OBJECT_0 {
        return None;
    }
    child.try_wait().ok().flatten()
}

/// A pipe from the server as a `Read`: the end of the stream once it ends, or once the server
/// has exited and what it wrote is read; an error once `stop` is set.
struct PipeStream {
    pipe: Pipe,
    stop: Arc<Stop>,
    /// The server's process handle (stdout only), valid while the transport lives.
    exit: Option<RawHandle>,
}

// SAFETY: the raw process handle is only waited on, from the one thread that owns the stream.
unsafe impl Send for PipeStream {}

impl Read for PipeStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.pipe.read(buf, &self.stop, self.exit)? {
            Transfer::Done(n) => Ok(n),
            Transfer::Exited => Ok(0),
            Transfer::Stopped => Err(io::Error::new(io::ErrorKind::ConnectionAborted, "stopped")),
        }
    }
}

/// The reader thread: routes every stdout line until stdout ends, the server exits, or close.
fn read_stdout(stream: PipeStream, max_line_bytes: usize, frames: &Reader) {
    let stop_error = |e: &io::Error| e.kind() == io::ErrorKind::ConnectionAborted;
    let mut stream = BufReader::with_capacity(64 * 1024, stream);
    let mut lines = LineReader::new(max_line_bytes);
    loop {
        match lines.read(&mut stream) {
            Ok(Line::Complete) => {
                frames.line(lines.line());
                lines.shrink();
            }
            Ok(Line::TooLong) => frames.too_long(),
            Ok(Line::Eof) => return frames.ended(None),
            Err(e) if stop_error(&e) => return,
            Err(e) => return frames.ended(Some(e)),
        }
    }
}

/// Reads stderr so the server never blocks on a full pipe: to its end, or until close stops
/// it (a process the server started may hold stderr open for ever).
fn drain_stderr(pipe: Pipe, stop: &Arc<Stop>, tail: &StderrTail, callback: Option<StderrCallback>) {
    let stream = PipeStream {
        pipe,
        stop: stop.clone(),
        exit: None,
    };
    let mut reader = BufReader::with_capacity(64 * 1024, stream);
    let mut lines = LineReader::new(STDERR_LINE_MAX);
    loop {
        match lines.read(&mut reader) {
            Ok(Line::Complete) => {
                let line = String::from_utf8_lossy(lines.line()).into_owned();
                if let Some(callback) = &callback {
                    callback(&line);
                }
                tail.push(line);
            }
            Ok(Line::TooLong) => tail.push(format!("[a stderr line over {STDERR_LINE_MAX} bytes]")),
            Ok(Line::Eof) | Err(_) => break,
        }
    }
    tail.finish();
}
