//! mcpc: an MCP (Model Context Protocol) client with a C ABI and first-class cancellation.
//!
//! Layers, from the top: `ffi` (the C ABI only) → `client` (the blocking client) → `engine`
//! (calls in flight, the completion race, cancel dispatch) → `transport` (stdio, custom) →
//! `protocol` (JSON-RPC frames, method names, versions). `cancellation` holds the token.

pub mod cancellation;
pub mod client;
pub mod engine;
pub mod error;
pub mod ffi;
pub mod handlers;
pub mod protocol;
pub mod transport;

pub use cancellation::CancellationToken;
pub use client::{Client, ClientOptions, ConnectMode, ConnectionState, RequestOptions};
pub use error::{Error, Result, Status};
pub use handlers::{HandlerError, LogLevel};
pub use transport::http::HttpConfig;
pub use transport::stdio::{StderrMode, StdioConfig};

/// The library version, also returned by `mcp_version()`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
