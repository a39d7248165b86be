//! The bounds on what a server can make the client hold. A server that floods the client
//! (requests, notifications, events) meets one of these limits; past it the client drops what
//! it cannot hold, counts it (`RouterStats`) and logs it, and never blocks a reader on it.
//! Every queue a server can fill is bounded in count and in bytes, so neither many small
//! messages nor a few large ones (each up to the line or body limit, 100 MiB by default) can
//! grow it without limit. docs/security.md lists them all; docs/reliability.md has the
//! figures the flood tests measured.

/// Answers to server requests waiting for the dispatcher to write them. Past it a
/// request the client answers by itself (`ping`, an unknown method, a refused handler) gets no
/// answer: the server is sending requests faster than it reads our answers.
pub const MAX_QUEUED_ANSWERS: usize = 256;

/// The same queue, in bytes (an answer echoes the request's id, which the server chooses). One
/// answer is always let in when the queue is empty, whatever its size.
pub const MAX_QUEUED_ANSWER_BYTES: usize = 1024 * 1024;

/// Server requests handled by the host's handlers (sampling, elicitation, roots...) at the
/// same time, each on a thread of its own. Past it a request is answered at once with -32603.
pub const MAX_SERVER_REQUEST_HANDLERS: usize = 32;

/// The same handlers, in bytes: what their requests carry (params as JSON text). Past it a
/// request is answered -32603 at once, as past the count. One request of any size runs when
/// no handler does.
pub const MAX_SERVER_REQUEST_HANDLER_BYTES: usize = 16 * 1024 * 1024;

/// Host callbacks (notifications, progress, the library log) waiting to run on the callback
/// thread. Past it an event is dropped and counted, and the log says how many.
pub use super::callback_queue::QUEUE_LIMIT as MAX_QUEUED_CALLBACKS;

/// The same queue, in bytes: what the waiting events carry of the server's data (as JSON
/// text). Past it an event is dropped, counted and logged as past the count. One event is
/// always let in when none waits, whatever its size.
pub use super::callback_queue::QUEUE_BYTES_LIMIT as MAX_QUEUED_CALLBACK_BYTES;

/// Frames waiting for the host's wire-trace callback (only when one is set). Past it a frame
/// is dropped and counted, and the log says how many.
pub const MAX_QUEUED_TRACE_FRAMES: usize = 4096;

/// The same queue, in bytes of frame text. One frame is always let in when none waits.
pub const MAX_QUEUED_TRACE_BYTES: usize = 16 * 1024 * 1024;

/// List pages kept by the list cache (pages with a `ttlMs`). Past it a page is not kept: the
/// next ask for it goes to the server.
pub const MAX_CACHED_PAGES: usize = 1024;

/// The same cache, in bytes of the pages as JSON text. One page of any size is kept when none
/// is.
pub const MAX_CACHED_BYTES: usize = 16 * 1024 * 1024;

/// The most bytes read from one answer of an OAuth authorization server (metadata, a
/// registration, tokens). Past it the flow stops with UNAUTHORIZED naming the limit.
pub const MAX_OAUTH_ANSWER_BYTES: usize = crate::auth::ANSWER_LIMIT;

/// How long one request of the OAuth flow to the authorization server (or for the resource's
/// metadata) may take, when the call that needed the token has no earlier deadline.
pub const OAUTH_REQUEST_TIMEOUT: std::time::Duration = crate::auth::REQUEST_TIMEOUT;

/// The longest access token the flow accepts from a token endpoint (it goes in a header of
/// every request). A longer one, or one with a character a header cannot carry as it is,
/// fails the flow with UNAUTHORIZED.
pub const MAX_OAUTH_TOKEN_BYTES: usize = crate::auth::TOKEN_LIMIT;

/// The shortest wait between two polls (`tasks/get`) of one task, whatever `pollInterval`
/// the server asks: one task is polled at most 50 times a second. A server's longer interval
/// is honoured (up to 60 s); without one, polls back off from 50 ms to 1 s.
pub const MIN_TASK_POLL_INTERVAL: std::time::Duration = std::time::Duration::from_millis(20);

/// How long close waits for callbacks already queued and those running to return, for
/// started requests' completions, and for queued cancel notices to be written.
pub use super::CALLBACK_WAIT_ON_CLOSE;

/// (Owned by the transports, which name no engine module; listed here with the other bounds.)
pub use crate::transport::THREAD_WAIT_ON_CLOSE;

/// The most `close` (or `free`, or dropping a client) takes, whatever servers and host
/// callbacks do: the callbacks' wait, a stdio server's two grace periods to exit (after its
/// stdin closes, after SIGTERM; then SIGKILL), the wait for the rest of its process group to end,
/// the threads' wait, and a margin. A callback that
/// has not returned by then is abandoned: it goes on running, so what it uses (its userdata)
/// must outlive it.
pub const CLOSE_BOUND: std::time::Duration = std::time::Duration::from_secs(
    CALLBACK_WAIT_ON_CLOSE.as_secs()
        + 2 * crate::transport::stdio::CLOSE_GRACE.as_secs()
        + crate::transport::stdio::GROUP_EXIT_WAIT.as_secs()
        + THREAD_WAIT_ON_CLOSE.as_secs()
        + 1,
);
