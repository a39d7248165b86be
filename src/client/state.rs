//! Where a client stands, as `Client::state` reports it.

/// The state of a client's connection (the C API's `mcp_connection_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionState {
    /// `connect` has not been called, or the last connect failed, or the server was stopped
    /// for idleness (`ClientOptions::idle_shutdown`).
    NotConnected,
    /// A `connect` is under way (starting the server, handshake or discovery).
    Connecting,
    /// Connected: calls go to the server.
    Connected,
    /// The connection failed after connecting (the stdio server exited, the HTTP server
    /// ended the session): calls fail, and the next `connect` starts a new connection.
    Failed,
    /// `close` was called: everything returns CLOSED from now on.
    Closed,
}
