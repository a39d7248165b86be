//! Waiting for an HTTP client to go away, asleep. A thread that holds a stream open (a
//! standalone GET, an HTTP+SSE event stream, a request's answer still to come) blocks in the
//! socket's poll until the client does something, rather than waking every few milliseconds to
//! look: a thousand streams open would otherwise keep the machine busy with those wake-ups.

use std::net::TcpStream;
use std::thread;
use std::time::Duration;

/// How long to wait before looking again when the client sent bytes the waiting thread may not
/// read (they belong to the connection's next request): the poll would return at once again.
pub(super) const LOOK_AGAIN_AFTER: Duration = Duration::from_millis(5);

/// What the client did while we waited on its connection.
pub(super) enum ClientMove {
    /// It closed (or reset) the connection.
    Left,
    /// It sent bytes (not read: they are left for whoever reads the connection next).
    Sent,
}

/// Blocks, with no time limit, until the client closes the connection or sends something.
pub(super) fn wait_for_client(connection: &TcpStream) -> ClientMove {
    if crate::platform::wait_for_peer(connection) {
        return ClientMove::Left;
    }
    // Readable: bytes, or an end of stream the poll did not name. A peek tells them apart
    // without taking the bytes (and, after a poll that failed, waits as the poll would have).
    match connection.peek(&mut [0]) {
        Ok(0) | Err(_) => ClientMove::Left,
        Ok(_) => ClientMove::Sent,
    }
}

/// Blocks until the client closes the connection, for a connection that only carries our
/// stream to the client.
pub(super) fn wait_until_client_leaves(connection: &TcpStream) {
    while let ClientMove::Sent = wait_for_client(connection) {
        // Nothing is expected from the client here; its bytes are not ours to take.
        thread::sleep(LOOK_AGAIN_AFTER);
    }
}
