//! The stdio transport, one for every platform: frames become lines for the server's stdin,
//! written to each platform's stdin writer, and each platform's `ServerProcess` (`unix`,
//! `windows`) runs the process and its pipes.

use super::config::StdioConfig;
#[cfg(unix)]
use super::unix::ServerProcess;
#[cfg(windows)]
use super::windows::ServerProcess;
use crate::error::Result;
use crate::transport::{Inbound, OutgoingRequest, Transport, Waker};
use std::sync::Arc;
use std::time::Instant;

pub struct StdioTransport {
    server: ServerProcess,
}

impl StdioTransport {
    /// Starts the server (see each platform's `ServerProcess::spawn`).
    pub fn spawn(config: &StdioConfig, inbound: Arc<dyn Inbound>) -> Result<StdioTransport> {
        let server = ServerProcess::spawn(config, inbound)?;
        Ok(StdioTransport { server })
    }

    /// The last lines the server wrote to stderr (when stderr is kept).
    pub fn stderr_tail(&self) -> Vec<String> {
        self.server.tail.lines()
    }

    /// Makes close end the server in the background, without waiting for its exit (unix;
    /// Windows close always waits): see `StdioConfig::close_in_background`.
    pub fn end_in_background(&self) {
        #[cfg(unix)]
        self.server.end_in_background();
    }

    /// The child's process id (kept apart from the child: close holds the child's lock for
    /// seconds).
    pub fn pid(&self) -> u32 {
        self.server.pid
    }
}

/// A frame as the server reads it: one line.
fn line(frame: &str) -> Vec<u8> {
    let mut line = Vec::with_capacity(frame.len() + 1);
    line.extend_from_slice(frame.as_bytes());
    line.push(b'\n');
    line
}

impl Transport for StdioTransport {
    fn send_request(&self, request: OutgoingRequest) -> Result<()> {
        let OutgoingRequest {
            id, frame, sent, ..
        } = request;
        let mut line = frame.into_bytes();
        line.push(b'\n');
        self.server.stdin.send_request(id, line, sent)
    }

    fn send_notification(&self, frame: &str) -> Result<()> {
        self.server.stdin.send_frame(line(frame))
    }

    fn read_here(&self, done: &dyn Fn() -> bool, deadline: Option<Instant>, alone: bool) -> bool {
        self.server.read_here(done, deadline, alone)
    }

    fn reader_waker(&self, _id: i64) -> Option<Waker> {
        self.server.reader_waker()
    }

    fn close(&self) {
        self.server.close();
    }
}
