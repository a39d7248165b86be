//! The stdio transport: the server is a child process; frames are lines of JSON on its stdin
//! and stdout. This file holds what every platform shares: the configuration, what becomes of
//! each stdout line, and the tail of stderr. The process and its pipes are the platform's:
//! `stdio_unix` (poll on non-blocking pipes, process groups) and `windows` (overlapped named
//! pipes, a job object).

use crate::error::{Error, Result};
use crate::protocol::jsonrpc;
use crate::sync::lock;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

#[cfg(unix)]
pub use super::stdio_unix::StdioTransport;
#[cfg(windows)]
pub use super::windows::StdioTransport;

/// The default limit for one line from the server: 100 MiB, room for the results servers send
/// (a file read, an image of 64 MiB in base64) while a runaway server still meets a bound.
/// A result costs about twice its size at the peak (the line and the result).
pub const DEFAULT_MAX_LINE_BYTES: usize = 100 * 1024 * 1024;

/// How long close waits at each step (after closing stdin, after SIGTERM). Close takes at
/// most about twice this (a server that ignores both), and then up to one second more for the
/// rest of the server's process group to end after SIGKILL ([`GROUP_EXIT_WAIT`]);
/// processes the server started outside its group that still hold its pipes are abandoned,
/// never waited for.
pub const CLOSE_GRACE: Duration = Duration::from_secs(2);
/// How long close waits, once the group got SIGKILL, for the last of its processes to end
/// (unix; on Windows the job object ends the server's processes with it). SIGKILL ends a
/// process at once, but a process holding much memory takes a while to give it back; one that
/// is stuck in the kernel (uninterruptible sleep) is left after this.
pub const GROUP_EXIT_WAIT: Duration = Duration::from_secs(1);
/// How much of the server's stderr is kept when nobody else takes it.
pub(super) const STDERR_TAIL_LINES: usize = 50;
pub(super) const STDERR_LINE_MAX: usize = 8 * 1024;

/// Receives each line the server writes to stderr, in order, on a shared worker thread of the
/// library (unix; one line at a time per client) or the client's stderr thread (Windows).
pub type StderrCallback = Arc<dyn Fn(&str) + Send + Sync>;

/// What happens to the server's stderr.
#[derive(Clone, Default)]
pub enum StderrMode {
    /// Keep the last lines in memory (see `Client::stderr_tail`); they are also quoted
    /// when the server exits unexpectedly.
    #[default]
    Tail,
    /// Pass the lines to a host callback (the tail is kept as well).
    Callback(StderrCallback),
    /// Let the server write to this process's stderr.
    Inherit,
    /// Throw it away.
    Discard,
}

/// How to start the server.
#[derive(Clone)]
pub struct StdioConfig {
    /// The program and its arguments, executed directly (never through a shell).
    pub argv: Vec<String>,
    /// Variables added to (or replacing those of) the inherited environment.
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
    /// The longest line accepted from the server (default [`DEFAULT_MAX_LINE_BYTES`]); a
    /// longer one fails the calls pending with PROTOCOL_ERROR.
    pub max_line_bytes: usize,
    pub stderr: StderrMode,
    /// The host's promise that SIGPIPE is ignored in its process (disposition `SIG_IGN`, as many
    /// servers and runtimes set at start) and stays so while the client lives. Then a write to
    /// the server's stdin needs no signal-mask calls around it (two system calls per request on
    /// Linux before 6.18, where a pipe write cannot be told not to raise SIGPIPE; 6.18 and later
    /// need none either way). Connecting checks the promise
    /// and fails with INVALID_ARGUMENT when SIGPIPE is not ignored then; breaking it later lets
    /// a server that dies kill the host. Off by default. No effect on macOS (the pipe is told
    /// never to raise SIGPIPE) or Windows (no SIGPIPE).
    pub sigpipe_ignored: bool,
}

impl StdioConfig {
    pub fn new<S: Into<String>>(argv: impl IntoIterator<Item = S>) -> Self {
        StdioConfig {
            argv: argv.into_iter().map(Into::into).collect(),
            env: Vec::new(),
            cwd: None,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            stderr: StderrMode::Tail,
            sigpipe_ignored: false,
        }
    }
}

/// A name the environment can hold: not empty, without '=' or NUL.
pub fn check_env_name(name: &str) -> Result<()> {
    match name.is_empty() || name.contains(['=', '\0']) {
        true => Err(Error::invalid(format!(
            "environment variable name {name:?} must be non-empty, without '=' or NUL"
        ))),
        false => Ok(()),
    }
}

/// What the lines of stdout are for: the stdio transport routes them to the engine.
pub trait Frames: Send + Sync {
    fn line(&self, line: &[u8]);
    /// A line over the limit was skipped.
    fn too_long(&self);
    /// stdout ended (`None`) or failed; called once.
    fn ended(&self, error: Option<std::io::Error>);
    /// Reading stopped for a bug of ours (a panic, caught): called once, instead of `ended`.
    /// (Unix: the reactor's; Windows reports a panic of its reader thread through `ended`.)
    #[cfg_attr(windows, allow(dead_code))]
    fn failed(&self, error: Error) {
        self.ended(Some(std::io::Error::other(error.message)));
    }
}

/// How long the server takes to exit: its status if it exits within the limit (not reaped).
pub type ExitWithin = Box<dyn Fn(Duration) -> Option<ExitStatus> + Send + Sync>;

/// What becomes of each stdout line: a frame for the engine.
pub(super) struct Reader {
    pub inbound: Arc<dyn super::Inbound>,
    /// The server's exit status, once it has exited.
    pub exit_within: ExitWithin,
    pub tail: Arc<StderrTail>,
    pub closing: Arc<AtomicBool>,
    pub max_line_bytes: usize,
}

impl Frames for Reader {
    fn line(&self, line: &[u8]) {
        self.frame(line);
    }

    fn too_long(&self) {
        self.inbound.bad_frame(
            Error::protocol(format!(
                "the server sent a line longer than the limit of {} bytes{}",
                self.max_line_bytes,
                super::raise_limit_with("StdioConfig::max_line_bytes")
            )),
            // The long line may have been any pending call's answer.
            true,
        );
    }

    fn ended(&self, error: Option<std::io::Error>) {
        if !self.closing.load(Ordering::Acquire) {
            self.inbound.closed(self.describe_end(error));
        }
    }

    fn failed(&self, error: Error) {
        if !self.closing.load(Ordering::Acquire) {
            self.inbound.closed(error);
        }
    }
}

impl Reader {
    fn frame(&self, line: &[u8]) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        if let Some((id, reply)) = crate::protocol::reply::parse_answer(line) {
            return self
                .inbound
                .message(jsonrpc::Incoming::Answer { id, reply });
        }
        match serde_json::from_slice(line) {
            Ok(frame) => self.inbound.message(jsonrpc::classify(frame)),
            Err(e) => {
                let text = String::from_utf8_lossy(&line[..line.len().min(120)]).into_owned();
                let error = Error::protocol(format!(
                    "skipped a stdout line that is not JSON ({e}): {text}"
                ));
                self.inbound.bad_frame(error, false);
            }
        }
    }

    /// Why stdout ended, with the exit status and the last stderr lines when there are any.
    fn describe_end(&self, read_error: Option<std::io::Error>) -> Error {
        let mut message = match read_error {
            Some(e) => format!("cannot read from the server: {e}"),
            None => "the server closed its stdout".to_owned(),
        };
        // The process usually exits right after closing stdout; give it a moment to say how.
        if let Some(status) = (self.exit_within)(Duration::from_millis(100)) {
            message = format!("the server exited ({status})");
        }
        let tail = self.tail.final_lines(Duration::from_millis(100));
        if !tail.is_empty() {
            let last: Vec<&str> = tail
                .iter()
                .rev()
                .take(5)
                .rev()
                .map(String::as_str)
                .collect();
            message.push_str("; its stderr ended with: ");
            message.push_str(&last.join(" | "));
        }
        Error::transport(message)
    }
}

/// The last lines of the server's stderr.
#[derive(Default)]
pub(super) struct StderrTail {
    state: Mutex<TailState>,
    ended: Condvar,
}

#[derive(Default)]
struct TailState {
    lines: VecDeque<String>,
    /// stderr reached its end (or is not ours to read).
    done: bool,
}

impl StderrTail {
    pub(super) fn push(&self, line: String) {
        let mut state = lock(&self.state);
        if state.lines.len() == STDERR_TAIL_LINES {
            state.lines.pop_front();
        }
        state.lines.push_back(line);
    }

    pub(super) fn lines(&self) -> Vec<String> {
        lock(&self.state).lines.iter().cloned().collect()
    }

    pub(super) fn finish(&self) {
        lock(&self.state).done = true;
        self.ended.notify_all();
    }

    /// The lines once stderr has ended, waiting at most `limit` for its last lines.
    pub(super) fn final_lines(&self, limit: Duration) -> Vec<String> {
        let state = lock(&self.state);
        let (state, _) = self
            .ended
            .wait_timeout_while(state, limit, |s| !s.done)
            .unwrap_or_else(|e| e.into_inner());
        state.lines.iter().cloned().collect()
    }
}
