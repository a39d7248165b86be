//! Ports for server processes the tests start on 127.0.0.1, and the wait until they listen.

use std::net::{TcpListener, TcpStream};
use std::process::Child;
use std::time::{Duration, Instant};

/// A port that was free a moment ago, for a server that takes its port as an argument.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Whether something listens on 127.0.0.1:`port`. A connection from the port to itself does
/// not count: Linux lets a connect to a port of its ephemeral range that nobody listens on pick
/// that same port as its source, and the socket then "connects" to itself (TCP simultaneous
/// open). A wait that took that for a listener once failed CI with "connection refused".
pub fn listening(port: u16) -> bool {
    match TcpStream::connect(("127.0.0.1", port)) {
        Ok(stream) => stream.local_addr().ok() != stream.peer_addr().ok(),
        Err(_) => false,
    }
}

/// Waits until `child` listens on `port`; an error if it exits first or `limit` passes.
pub fn wait_listening(child: &mut Child, port: u16, limit: Duration) -> Result<(), String> {
    let deadline = Instant::now() + limit;
    loop {
        if listening(port) {
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!(
                "the server exited ({status}) before it listened on {port}"
            ));
        }
        if Instant::now() > deadline {
            return Err(format!("the server never listened on {port} in {limit:?}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
