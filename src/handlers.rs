//! What the host plugs into a client: handlers for the server's input requests, and a log.

use serde_json::Value;
use std::sync::Arc;

/// How serious a log message is. The numbers are part of the C ABI.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[allow(non_camel_case_types)]
pub enum mcp_log_level {
    Debug = 0,
    Info = 1,
    Warning = 2,
    Error = 3,
}

pub use mcp_log_level as LogLevel;

/// Receives the library's own log messages (dropped tools, skipped frames, era fallback).
pub type LogHandler = Arc<dyn Fn(LogLevel, &str) + Send + Sync>;

/// Why a handler could not answer: sent to the server as a JSON-RPC error where there is one.
#[derive(Debug, Clone, PartialEq)]
pub struct HandlerError {
    pub code: i64,
    pub message: String,
}

/// Answers a request the server makes of the client (`elicitation/create`,
/// `sampling/createMessage`, `roots/list`): receives the method and params, returns the result.
pub type InputHandler = Arc<dyn Fn(&str, &Value) -> Result<Value, HandlerError> + Send + Sync>;
