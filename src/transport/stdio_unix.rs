//! The stdio transport on unix (Linux, macOS): the server runs in its own process group.
//!
//! Threads: stdout is read by a caller waiting alone for its response, or else by the reader
//! thread (`stdout`); either routes every line to the engine by id, and watches the server's
//! exit as well (a process the server started may keep stdout open after it exits). One thread
//! drains stderr until it ends or close abandons it. Frames go to stdin whole and in order
//! (`stdin`): written at once when the pipe has room, else queued for a writer thread, so no
//! caller ever blocks on a server that does not read. A request's send boundary is signalled
//! once its last byte is written, and its cancel notice is queued only then, so the server
//! always reads a request line before its cancel line.

use super::child::{self, ExitWatch};
use super::lines::{Line, LineReader};
use super::stdin::StdinWriter;
use super::stdio::{
    check_env_name, Reader, StderrCallback, StderrMode, StderrTail, StdioConfig, CLOSE_GRACE,
    STDERR_LINE_MAX,
};
use super::stdout::StdoutReader;
use super::wake::{self, WakePipe};
use super::{Inbound, OutgoingRequest, Transport, Waker};
use crate::engine::limits::THREAD_WAIT_ON_CLOSE;
use crate::error::{Error, Result};
use crate::sync::{join_until, lock, spawn};
use std::io::{self, BufReader};
use std::os::fd::AsRawFd;
use std::process::{Child, ChildStderr, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

pub struct StdioTransport {
    stdin: Arc<StdinWriter>,
    stdout: Arc<StdoutReader>,
    child: Arc<Mutex<Child>>,
    pid: u32,
    tail: Arc<StderrTail>,
    /// Tells the stderr thread to stop, once the server is gone.
    stderr_stop: Arc<StopSignal>,
    closing: Arc<AtomicBool>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl StdioTransport {
    /// Starts the server and its reader and stderr threads.
    pub fn spawn(config: &StdioConfig, inbound: Arc<dyn Inbound>) -> Result<StdioTransport> {
        let program = config
            .argv
            .first()
            .ok_or_else(|| Error::invalid("argv is empty: no program to run"))?;
        for (name, _) in &config.env {
            check_env_name(name)?;
        }
        if config.sigpipe_ignored && !super::sigpipe::is_ignored() {
            return Err(Error::invalid(
                "sigpipe_ignored is set, but SIGPIPE is not ignored in this process: ignore it \
                 first (signal(SIGPIPE, SIG_IGN)) or leave the option off",
            ));
        }
        let mut command = Command::new(program);
        command
            .args(&config.argv[1..])
            .envs(config.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(match config.stderr {
                StderrMode::Inherit => Stdio::inherit(),
                StderrMode::Discard => Stdio::null(),
                _ => Stdio::piped(),
            });
        if let Some(cwd) = &config.cwd {
            command.current_dir(cwd);
        }
        let mut spawned = child::spawn(command)
            .map_err(|e| Error::transport(format!("cannot start server `{program}`: {e}")))?;

        let stdin = spawned.stdin.take().expect("stdin is piped");
        let stdout = spawned.stdout.take().expect("stdout is piped");
        let stderr = spawned.stderr.take();
        let pid = spawned.id();
        let exit = ExitWatch::new(&spawned);
        let child = Arc::new(Mutex::new(spawned));
        let tail = Arc::new(StderrTail::default());
        let closing = Arc::new(AtomicBool::new(false));
        let stderr_stop = Arc::new(
            StopSignal::new()
                .map_err(|e| Error::transport(format!("cannot set up reading stderr: {e}")))?,
        );
        let mut threads = Vec::new();

        if stderr.is_none() {
            tail.finish();
        }
        if let Some(stderr) = stderr {
            let (tail, stop, callback) = (
                tail.clone(),
                stderr_stop.clone(),
                match &config.stderr {
                    StderrMode::Callback(cb) => Some(cb.clone()),
                    _ => None,
                },
            );
            wake::set_flags(stderr.as_raw_fd())
                .map_err(|e| Error::transport(format!("cannot set up reading stderr: {e}")))?;
            let drain = move || drain_stderr(stderr, &stop, &tail, callback);
            threads.push(spawn("mcpc-stderr", drain, |_| ())?);
        }
        super::sigpipe::prepare(stdin.as_raw_fd())
            .map_err(|e| Error::transport(format!("cannot set up writing to the server: {e}")))?;
        let stdin = StdinWriter::new(stdin, inbound.clone(), !config.sigpipe_ignored)
            .map(Arc::new)
            .map_err(|e| Error::transport(format!("cannot set up writing to the server: {e}")))?;
        let exit_within = {
            let child = child.clone();
            Box::new(move |limit| {
                // One lock for both: a second one inside a `match` on the first deadlocks.
                let child = lock(&child);
                // Not reaped: close still has to signal the server's group.
                match child::exited_within(&child, limit) {
                    true => child::exit_status(&child),
                    false => None,
                }
            })
        };
        let frames = Reader {
            inbound,
            exit_within,
            tail: tail.clone(),
            closing: closing.clone(),
            max_line_bytes: config.max_line_bytes,
        };
        let fd = stdout.as_raw_fd();
        let stdout = StdoutReader::new(
            Box::new(stdout),
            fd,
            config.max_line_bytes,
            Box::new(frames),
            Some(exit),
        )
        .map(Arc::new)
        .map_err(|e| Error::transport(format!("cannot set up reading from the server: {e}")))?;
        let (background, failed) = (stdout.clone(), stdout.clone());
        threads.push(spawn(
            "mcpc-stdio-reader",
            move || background.run_background(),
            // Calls must not wait for a reader that is gone.
            move |error| failed.fail(&error.message),
        )?);

        Ok(StdioTransport {
            stdin,
            stdout,
            child,
            pid,
            tail,
            stderr_stop,
            closing,
            threads: Mutex::new(threads),
        })
    }

    /// The last lines the server wrote to stderr (when stderr is kept).
    pub fn stderr_tail(&self) -> Vec<String> {
        self.tail.lines()
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        // Not from the child under its lock: close holds that lock for seconds.
        self.pid
    }
}

impl Transport for StdioTransport {
    fn send_request(&self, request: OutgoingRequest) -> Result<()> {
        let OutgoingRequest {
            id, frame, sent, ..
        } = request;
        let mut line = frame.into_bytes();
        line.push(b'\n');
        self.stdin.send_request(id, line, sent)
    }

    fn send_notification(&self, frame: &str) -> Result<()> {
        let mut line = Vec::with_capacity(frame.len() + 1);
        line.extend_from_slice(frame.as_bytes());
        line.push(b'\n');
        self.stdin.send_frame(line)
    }

    fn read_here(&self, done: &dyn Fn() -> bool, deadline: Option<Instant>, alone: bool) -> bool {
        self.stdout.read_here(done, deadline, alone)
    }

    fn reader_waker(&self, _id: i64) -> Option<Waker> {
        Some(self.stdout.waker())
    }

    fn close(&self) {
        if self.closing.swap(true, Ordering::AcqRel) {
            return;
        }
        // End of input is how a stdio server is asked to leave. No write ever blocks, so
        // this is at once, whatever is queued for a server that does not read.
        self.stdin.close();
        child::shut_down(&mut lock(&self.child), CLOSE_GRACE);
        // The server is gone. What is left on stderr and stdout now can only come from
        // processes it started, which may hold the pipes for ever: stop reading them.
        self.stderr_stop.stop();
        self.stdout.close();
        // A host callback running on one of our threads may close the client (that thread is
        // never joined), and a stderr callback that never returns is let go.
        let threads = std::mem::take(&mut *lock(&self.threads));
        let deadline = Instant::now() + THREAD_WAIT_ON_CLOSE;
        for thread in threads {
            join_until(thread, deadline);
        }
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        self.close();
    }
}

/// Ends a thread blocked in `poll`: a flag it looks at, and a pipe that wakes it.
struct StopSignal {
    stopped: AtomicBool,
    wake: WakePipe,
}

impl StopSignal {
    fn new() -> io::Result<StopSignal> {
        Ok(StopSignal {
            stopped: AtomicBool::new(false),
            wake: WakePipe::new()?,
        })
    }

    fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        self.wake.wake();
    }

    fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }
}

/// Reads stderr (non-blocking) so the server can never block on a full pipe: to its end, or
/// until `stop`, since a process the server started may hold stderr open for ever. The
/// descriptor is closed on return.
fn drain_stderr(
    stderr: ChildStderr,
    stop: &StopSignal,
    tail: &StderrTail,
    callback: Option<StderrCallback>,
) {
    let fd = stderr.as_raw_fd();
    let mut reader = BufReader::new(stderr);
    let mut lines = LineReader::new(STDERR_LINE_MAX);
    while !stop.is_stopped() {
        match lines.read(&mut reader) {
            Ok(Line::Complete) => {
                let line = String::from_utf8_lossy(lines.line()).into_owned();
                if let Some(callback) = &callback {
                    callback(&line);
                }
                tail.push(line);
            }
            Ok(Line::TooLong) => tail.push(format!("[a stderr line over {STDERR_LINE_MAX} bytes]")),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                wake::poll_readable(fd, &stop.wake, None);
            }
            Ok(Line::Eof) | Err(_) => break,
        }
    }
    tail.finish();
}
