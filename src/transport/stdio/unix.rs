//! The stdio transport on unix (Linux, macOS): the server runs in its own process group.
//!
//! No thread of its own: stdout is read by a caller waiting alone for its response, or else by
//! the process's reactor (`stdout`, `reactor`); either routes every line to the engine by id,
//! and watches the server's exit as well (a process the server started may keep stdout open
//! after it exits). The reactor drains stderr (`stderr`) until it ends or close stops it.
//! Frames go to stdin whole and in order
//! (`stdin`): written at once when the pipe has room, else queued for a writer thread, so no
//! caller ever blocks on a server that does not read. A request's send boundary is signalled
//! once its last byte is written, and its cancel notice is queued only then, so the server
//! always reads a request line before its cancel line.

use super::child::{self, ExitWatch};
use super::config::{StderrMode, StdioConfig, CLOSE_GRACE};
use super::frames::Reader;
use super::reaper::{self, Kept};
use super::stderr::StderrReader;
use super::stderr_tail::StderrTail;
use super::stdin::StdinWriter;
use super::stdout::StdoutReader;
use crate::error::{Error, Result};
use crate::sync::lock;
use crate::transport::reactor::{Reactor, Registration};
use crate::transport::{Inbound, Waker, THREAD_WAIT_ON_CLOSE};
use std::os::fd::AsRawFd;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The server's process and pipes (see the module's comment); `super::StdioTransport` is the
/// transport made of it.
pub struct ServerProcess {
    /// Written by the transport (`super::transport`), as are `pid` and `tail` read.
    pub(super) stdin: Arc<StdinWriter>,
    stdout: Arc<StdoutReader>,
    child: Arc<Mutex<Child>>,
    pub(super) pid: u32,
    /// Wakes the caller that reads stdout.
    waker: Waker,
    pub(super) tail: Arc<StderrTail>,
    stderr: Option<Arc<StderrReader>>,
    /// stdout and stderr on the reactor: dropped at close, before the descriptors.
    registrations: Mutex<Vec<Registration>>,
    /// The server's exit on the reactor: dropped at close before the server is reaped.
    exit_watch: Mutex<Option<Registration>>,
    closing: Arc<AtomicBool>,
    /// Close hands the server's end to the reactor instead of waiting for it (`reaper`).
    close_in_background: AtomicBool,
}

impl ServerProcess {
    /// Starts the server and hands its stdout, stderr and exit to the reactor.
    pub fn spawn(config: &StdioConfig, inbound: Arc<dyn Inbound>) -> Result<ServerProcess> {
        let (mut command, program) = config.command()?;
        if config.sigpipe_ignored && !super::sigpipe::is_ignored() {
            return Err(Error::invalid(
                "sigpipe_ignored is set, but SIGPIPE is not ignored in this process: ignore it \
                 first (signal(SIGPIPE, SIG_IGN)) or leave the option off",
            ));
        }
        // Before the server starts: nothing to clean up if the reactor cannot start.
        let reactor = Reactor::shared()
            .map_err(|e| Error::transport(format!("cannot start the mcpc-reactor thread: {e}")))?;
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(match config.stderr {
                StderrMode::Inherit => Stdio::inherit(),
                StderrMode::Discard => Stdio::null(),
                _ => Stdio::piped(),
            });
        let inherits_stderr = matches!(config.stderr, StderrMode::Inherit);
        let mut spawned = child::spawn(command, inherits_stderr)
            .map_err(|e| Error::transport(format!("cannot start server `{program}`: {e}")))?;

        let stdin = spawned.stdin.take().expect("stdin is piped");
        let stdout = spawned.stdout.take().expect("stdout is piped");
        let stderr = spawned.stderr.take();
        let pid = spawned.id();
        let exit = ExitWatch::new(&spawned);
        let child = Arc::new(Mutex::new(spawned));
        let tail = Arc::new(StderrTail::default());
        let closing = Arc::new(AtomicBool::new(false));
        let mut registrations = Vec::new();
        let stderr = match stderr {
            None => {
                tail.finish();
                None
            }
            Some(stderr) => {
                let callback = match &config.stderr {
                    StderrMode::Callback(cb) => Some(cb.clone()),
                    _ => None,
                };
                let (reader, registration) =
                    StderrReader::start(stderr, tail.clone(), callback, &reactor).map_err(|e| {
                        Error::transport(format!("cannot set up reading stderr: {e}"))
                    })?;
                registrations.push(registration);
                Some(reader)
            }
        };
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
        let (stdout_watch, exit_watch) = stdout
            .register(&reactor)
            .map_err(|e| Error::transport(format!("cannot set up reading from the server: {e}")))?;
        registrations.push(stdout_watch);
        let waker: Waker = {
            let stdout = stdout.clone();
            Arc::new(move || stdout.wake_reader())
        };

        Ok(ServerProcess {
            stdin,
            stdout,
            child,
            pid,
            waker,
            tail,
            stderr,
            registrations: Mutex::new(registrations),
            exit_watch: Mutex::new(exit_watch),
            closing,
            close_in_background: AtomicBool::new(config.close_in_background),
        })
    }

    pub fn read_here(
        &self,
        done: &dyn Fn() -> bool,
        deadline: Option<Instant>,
        alone: bool,
    ) -> bool {
        self.stdout.read_here(done, deadline, alone)
    }

    pub fn reader_waker(&self) -> Option<Waker> {
        Some(self.waker.clone())
    }

    /// Makes close hand the server's end to the reactor, whatever the configuration said.
    pub fn end_in_background(&self) {
        self.close_in_background.store(true, Ordering::Release);
    }

    pub fn close(&self) {
        if self.closing.swap(true, Ordering::AcqRel) {
            return;
        }
        // End of input is how a stdio server is asked to leave. No write ever blocks, so
        // this is at once, whatever is queued for a server that does not read.
        self.stdin.close();
        if self.close_in_background.load(Ordering::Acquire) {
            self.stop_reading();
            // The pipes stay open, unread, until the server has gone (see `reaper`).
            let mut kept: Vec<Kept> = vec![Box::new(self.stdout.clone())];
            kept.extend(self.stderr.clone().map(|s| Box::new(s) as Kept));
            if let Err((child, kept)) = reaper::hand_over(self.child.clone(), kept, CLOSE_GRACE) {
                child::shut_down(&mut lock(&child), CLOSE_GRACE, || {});
                drop(kept);
            }
            return;
        }
        child::shut_down(&mut lock(&self.child), CLOSE_GRACE, || {
            self.drop_exit_watch()
        });
        // The server is gone. What is left on stderr and stdout now can only come from
        // processes it started, which may hold the pipes for ever: stop reading them.
        self.stop_reading();
    }

    /// Once this returns, no handler of this connection runs any more and no callback of it
    /// starts.
    fn stop_reading(&self) {
        self.stdout.close();
        self.drop_exit_watch();
        let registrations = std::mem::take(&mut *lock(&self.registrations));
        drop(registrations);
        // A stderr callback may close the client (it is not waited for then), and one that
        // never returns is let go.
        if let Some(stderr) = &self.stderr {
            stderr.close(THREAD_WAIT_ON_CLOSE);
        }
    }
}

impl ServerProcess {
    /// Ends the reactor's watch of the server's exit (once it returns, its handler does not
    /// run); later calls do nothing.
    fn drop_exit_watch(&self) {
        let watch = lock(&self.exit_watch).take();
        drop(watch);
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.close();
    }
}
