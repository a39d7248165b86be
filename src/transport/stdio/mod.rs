//! The stdio transport: the server is a child process; frames are lines of JSON on its stdin
//! and stdout.
//!
//! Files, top-down:
//! - what every platform shares: `transport` (the one `Transport` impl: frames as lines),
//!   `config` (how the server is started, what becomes of its stderr, the bounds of closing it), `frames` (what becomes of each stdout line), `lines`
//!   (splitting a stream into lines under a limit), `stderr_tail` (the last stderr lines);
//! - unix (Linux, macOS): `unix` (the server's process in its own group, and its pipes),
//!   `child` (starting, watching and ending the process), `exit_notice` (close's wait for the
//!   exit), `reaper` (ending it in the
//!   background, for close in the background), `stdin` (frames written whole and in
//!   order, never blocking a caller), `sigpipe`, `stdout` (who reads stdout: a caller alone in
//!   flight, else the process's reactor), `stdout_wait` (a caller's wait), `read_buffer`,
//!   `stderr` (stderr on the reactor), `serial` (host callbacks in order on shared threads);
//! - Windows: `windows` (overlapped named pipes, a job object; threads per connection).

mod config;
mod frames;
mod lines;
mod stderr_tail;
mod transport;

#[cfg(unix)]
mod child;
#[cfg(unix)]
mod exit_notice;
#[cfg(unix)]
mod read_buffer;
#[cfg(unix)]
mod reaper;
#[cfg(unix)]
mod serial;
#[cfg(unix)]
mod sigpipe;
#[cfg(any(target_os = "linux", target_os = "android"))]
mod spawner;
#[cfg(unix)]
mod stderr;
#[cfg(unix)]
pub(crate) mod stdin;
#[cfg(unix)]
mod stdout;
#[cfg(unix)]
mod stdout_wait;
#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;

pub use config::{
    check_env_name, StderrMode, StdioConfig, CLOSE_GRACE, DEFAULT_MAX_LINE_BYTES, GROUP_EXIT_WAIT,
};
pub use transport::StdioTransport;
/// The completion queue's signal on Windows (`ffi::completion_queue`).
#[cfg(windows)]
pub(crate) use windows::Event as WindowsEvent;
