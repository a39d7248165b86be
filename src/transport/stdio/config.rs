//! How a stdio server is started and what becomes of its stderr: the configuration every
//! platform shares, and the bounds of closing it.

use crate::error::{Error, Result};
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

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
    /// Close returns once the client is unusable and no callback of it can run, without
    /// waiting for the server to exit: the library ends the server in the background with the
    /// same bounded sequence (stdin closed; SIGTERM to its group after [`CLOSE_GRACE`], SIGKILL
    /// after another), then SIGKILLs what is left of its group and reaps it, so no zombie is
    /// left. Processes of the server's group may so still run for up to about twice
    /// [`CLOSE_GRACE`] after close and free return (a host that exits at once leaves the server
    /// its stdin's end only). For hosts that close many servers. Off by default: close then
    /// returns once no process of the server's group is left. Unix only; on Windows close
    /// always waits.
    pub close_in_background: bool,
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
            close_in_background: false,
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

impl StdioConfig {
    /// The server's command: the program and its arguments (never through a shell), the
    /// environment and the working directory. Its pipes are the platform's to set. Fails for
    /// an empty argv or an environment name the environment cannot hold.
    pub(super) fn command(&self) -> Result<(Command, &str)> {
        let program = self
            .argv
            .first()
            .ok_or_else(|| Error::invalid("argv is empty: no program to run"))?;
        for (name, _) in &self.env {
            check_env_name(name)?;
        }
        let mut command = Command::new(program);
        command
            .args(&self.argv[1..])
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        if let Some(cwd) = &self.cwd {
            command.current_dir(cwd);
        }
        Ok((command, program))
    }
}
