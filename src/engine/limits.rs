//! The bounds on what a server can make the client hold. A server that floods the client
//! (requests, notifications, events) meets one of these limits; past it the client drops what
//! it cannot hold, counts it (`RouterStats`) and logs it, and never blocks a reader on it.
//! The docs (docs/reliability.md) list them with the figures the flood tests measured.

/// Answers to server requests waiting for the dispatcher thread to write them. Past it a
/// request the client answers by itself (`ping`, an unknown method, a refused handler) gets no
/// answer: the server is sending requests faster than it reads our answers.
pub const MAX_QUEUED_ANSWERS: usize = 256;

/// The same queue, in bytes (an answer echoes the request's id, which the server chooses). One
/// answer is always let in when the queue is empty, whatever its size.
pub const MAX_QUEUED_ANSWER_BYTES: usize = 1024 * 1024;

/// Server requests handled by the host's handlers (sampling, elicitation, roots...) at the
/// same time, each on a thread of its own. Past it a request is answered at once with -32603.
pub const MAX_SERVER_REQUEST_HANDLERS: usize = 32;

/// Host callbacks (notifications, progress, the library log) waiting to run on the callback
/// thread. Past it an event is dropped and counted, and the log says how many.
pub use super::callback_thread::QUEUE_LIMIT as MAX_QUEUED_CALLBACKS;

/// How long close waits for callbacks already queued and those running to return, for
/// started requests' completions, and for queued cancel notices to be written.
pub use super::CALLBACK_WAIT_ON_CLOSE;

/// How long close waits, after the transport is shut down, for each of the connection's own
/// threads (dispatcher, stdio reader and stderr, HTTP watchdog) to end; one still running then
/// (a stderr callback that never returns, a write stuck in a TCP connect) is let go.
pub const THREAD_WAIT_ON_CLOSE: std::time::Duration = std::time::Duration::from_secs(1);

/// The most `close` (or `free`, or dropping a client) takes, whatever servers and host
/// callbacks do: the callbacks' wait, a stdio server's two grace periods to exit (after its
/// stdin closes, after SIGTERM; then SIGKILL), the threads' wait, and a margin. A callback that
/// has not returned by then is abandoned: it goes on running, so what it uses (its userdata)
/// must outlive it.
pub const CLOSE_BOUND: std::time::Duration = std::time::Duration::from_secs(
    CALLBACK_WAIT_ON_CLOSE.as_secs()
        + 2 * crate::transport::stdio::CLOSE_GRACE.as_secs()
        + THREAD_WAIT_ON_CLOSE.as_secs()
        + 1,
);
