//! What becomes of each line of the server's stdout: a frame for the engine, or, when stdout
//! ends, a TRANSPORT_ERROR that says how the server exited and what its stderr said last.

use super::stderr_tail::StderrTail;
use crate::error::Error;
use crate::protocol::jsonrpc;
use crate::transport::Inbound;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

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
    /// The connection is being closed: `ended` and `failed` have nothing left to tell.
    #[cfg_attr(windows, allow(dead_code))]
    fn is_closing(&self) -> bool {
        false
    }
}

/// How long the server takes to exit: its status if it exits within the limit (not reaped).
pub type ExitWithin = Box<dyn Fn(Duration) -> Option<ExitStatus> + Send + Sync>;

/// What becomes of each stdout line: a frame for the engine.
pub(super) struct Reader {
    pub inbound: Arc<dyn Inbound>,
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
                crate::transport::raise_limit_with("StdioConfig::max_line_bytes")
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

    fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
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
