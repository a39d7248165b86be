//! Where a client stands, as `Client::state` reports it.

/// The state of a client's connection. The numbers are part of the C ABI.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum mcp_connection_state {
    /// `connect` has not been called, or the last connect failed.
    NotConnected = 0,
    /// A `connect` is under way (starting the server, handshake or discovery).
    Connecting = 1,
    /// Connected: calls go to the server.
    Connected = 2,
    /// The connection failed after connecting (the stdio server exited, the HTTP server
    /// ended the session): calls fail, and the next `connect` starts a new connection.
    Failed = 3,
    /// `close` was called: everything returns CLOSED from now on.
    Closed = 4,
}

pub use mcp_connection_state as ConnectionState;
