//! mcpc: an MCP (Model Context Protocol) client with a C ABI and first-class cancellation.
//!
//! Layers, from the top: `ffi` (the C ABI only) → `client` (requests as operations, run
//! blocking or started with a completion: `client::operation`) → `engine`
//! (calls in flight, the completion race, cancel dispatch) → `transport` (stdio, Streamable
//! HTTP, custom) → `protocol` (JSON-RPC frames, method names, versions). `cancellation` holds
//! the token.
//!
//! The Rust API is what this file exports: [`Client`] with its options and configs, the
//! [`Request`] values its completion API ([`Client::start`]) takes, the
//! [`CancellationToken`], [`Error`] and [`Status`], the callback and handler types in
//! [`handlers`], [`BlockingTransport`] for a transport of your own, and the bounds on what a
//! server can make the client hold ([`limits`]). Everything else is
//! private to the crate. [`ffi`] is the C ABI (`include/mcpc.h`), callable from Rust too.

pub mod auth;
mod cancellation;
mod client;
mod deferred_wakes;
mod display_url;
mod engine;
mod error;
pub mod ffi;
mod fork_guard;
mod frame_buffers;
pub mod handlers;
mod id_map;
mod panic_guard;
mod pool;
mod protocol;
mod sync;
mod transport;

pub use auth::LoopbackRedirect;
pub use auth::{AuthorizationRequest, Challenge, OAuthConfig, TokenStore};
pub use cancellation::{CancellationToken, HookId};
pub use client::{
    Arguments, Client, ClientOptions, ConnectMode, ConnectionState, Listen, ReconnectPolicy,
    Request, RequestOptions, StateHandler,
};
pub use engine::limits;
pub use engine::router::RouterStats as ConnectionStats;
pub use error::{Error, Result, Status};
pub use handlers::{HandlerError, LogLevel};
pub use protocol::object_text::ObjectText;
pub use transport::custom::BlockingTransport;
pub use transport::http::{HttpConfig, HttpTransportKind};
pub use transport::stdio::{StderrMode, StdioConfig};

/// Internals the fuzz targets drive directly (the `fuzzing` feature; not part of the API).
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::protocol::header_value::{encode, render_param};
    pub use crate::protocol::json_text;
    pub use crate::protocol::jsonrpc::{classify, into_result, Incoming};
    pub use crate::protocol::reply::parse_answer;
    pub use crate::transport::http::sse::SseReader;
}

/// The library version, also returned by `mcp_version()`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
