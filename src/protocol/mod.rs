//! What goes on the wire: JSON-RPC 2.0 frames, MCP method names and protocol versions.

pub mod jsonrpc;
pub mod methods;
pub mod versions;
