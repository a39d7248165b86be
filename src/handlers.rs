//! What the host plugs into a client: callbacks for what the server says (progress, log
//! messages, list changes, other notifications), handlers for what it asks (sampling,
//! elicitation, roots), and a log for the library's own messages.
//!
//! Threads: notification and progress callbacks run on the client's callback thread, one at a
//! time, in the order the server sent them; they may call the client. "The callback thread" is
//! a role, not a thread of the client's own: the library's shared pool (threads named
//! `mcpc-pool`, shared by every client of the process) runs each client's callbacks in turn, so
//! two callbacks of one client never run at once, while those of different clients may. Request handlers run on a
//! thread of their own per server request (several at once), or on the calling thread for the
//! modern era's `input_required` rounds. The library log runs on the callback thread too (or on
//! the thread of the call or close that noticed). None runs while the library holds a lock, and
//! none starts once the client is closing: close waits for those running, up to 2 s.

use crate::cancellation::CancellationToken;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// How serious a library log message is. The numbers are part of the C ABI.
// C knows it as `mcp_log_level`: cbindgen.toml renames it.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// Detail for finding a fault.
    Debug = 0,
    /// Worth knowing: a fallback taken, a reconnect.
    Info = 1,
    /// Something was dropped or skipped.
    Warning = 2,
    /// Something failed.
    Error = 3,
}

/// A list the server says has changed (`notifications/<kind>/list_changed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    Tools,
    Prompts,
    Resources,
}

impl ListKind {
    pub fn name(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Prompts => "prompts",
            ListKind::Resources => "resources",
        }
    }
}

/// One `notifications/progress`.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// The request's progress token (ours, or the one the host gave).
    pub token: Value,
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// One `notifications/message` (the server's log).
#[derive(Debug, Clone, PartialEq)]
pub struct LogMessage {
    pub level: String,
    pub logger: Option<String>,
    pub data: Value,
}

/// A request the server makes of the client.
pub struct ServerRequest<'a> {
    pub method: &'a str,
    pub params: &'a Value,
    /// Cancelled when the server cancels its request (legacy), when the call is cancelled
    /// (input rounds), and when the client closes. A handler that sees it may stop; its answer
    /// is then not sent.
    pub cancellation: &'a CancellationToken,
}

/// Why a handler could not answer: sent to the server as a JSON-RPC error.
#[derive(Debug, Clone, PartialEq)]
pub struct HandlerError {
    pub code: i64,
    pub message: String,
}

pub type LogHandler = Arc<dyn Fn(LogLevel, &str) + Send + Sync>;
pub type ProgressHandler = Arc<dyn Fn(&Progress) + Send + Sync>;
pub type MessageHandler = Arc<dyn Fn(&LogMessage) + Send + Sync>;
pub type ListChangedHandler = Arc<dyn Fn(ListKind) + Send + Sync>;
pub type ResourceUpdatedHandler = Arc<dyn Fn(&str) + Send + Sync>;
/// Receives notifications that have no callback of their own (method, params).
pub type NotificationHandler = Arc<dyn Fn(&str, Option<&Value>) + Send + Sync>;
/// Answers `sampling/createMessage`, `elicitation/create`, `roots/list`...: returns the result.
pub type RequestHandler = Arc<dyn Fn(&ServerRequest) -> Result<Value, HandlerError> + Send + Sync>;

/// Which way a traced frame went. The numbers are part of the C ABI.
// C knows it as `mcp_trace_direction`: cbindgen.toml renames it.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceDirection {
    /// From the server.
    In = 0,
    /// To the server.
    Out = 1,
}

/// One JSON-RPC frame of the wire trace (see `Callbacks::on_trace`).
#[derive(Debug, Clone, Copy)]
pub struct TraceFrame<'a> {
    pub direction: TraceDirection,
    /// "stdio", "http" or "custom".
    pub transport: &'a str,
    /// The frame's JSON text (what arrived is re-encoded after parsing).
    pub json: &'a str,
}

pub type TraceHandler = Arc<dyn Fn(&TraceFrame) + Send + Sync>;

/// Everything a host may plug in. Unset callbacks cost nothing.
#[derive(Clone, Default)]
pub struct Callbacks {
    /// The library's own log (dropped tools, skipped frames, era fallback).
    pub on_log: Option<LogHandler>,
    /// Progress of every call that has a progress token (per-call callbacks come first).
    pub on_progress: Option<ProgressHandler>,
    pub on_message: Option<MessageHandler>,
    pub on_list_changed: Option<ListChangedHandler>,
    pub on_resource_updated: Option<ResourceUpdatedHandler>,
    /// Every other notification, and those above whose callback is unset.
    pub on_notification: Option<NotificationHandler>,
    /// Handlers for server requests, by method.
    pub request_handlers: HashMap<String, RequestHandler>,
    /// The wire trace: every JSON-RPC frame in and out, on a trace thread of its own, in
    /// order. Off (and free) when unset. Never carries HTTP headers.
    pub on_trace: Option<TraceHandler>,
}

impl Callbacks {
    pub fn log(&self, level: LogLevel, message: &str) {
        if let Some(log) = &self.on_log {
            log(level, message);
        }
    }
}

/// Fills the fields an elicitation answer leaves out with the `default` of each property of
/// the requested schema (SEP-1034). Given values are never replaced; properties without a
/// default stay absent. `content` that is not an object is treated as empty.
pub fn elicitation_defaults(requested_schema: &Value, content: &Value) -> Value {
    let mut filled = content.as_object().cloned().unwrap_or_default();
    if let Some(properties) = requested_schema
        .get("properties")
        .and_then(Value::as_object)
    {
        for (name, property) in properties {
            if let Some(default) = property.get("default") {
                filled
                    .entry(name.clone())
                    .or_insert_with(|| default.clone());
            }
        }
    }
    Value::Object(filled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_fill_only_missing_fields() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "Ada"},
            "subscribe": {"type": "boolean", "default": false},
            "age": {"type": "integer"},
            "color": {"type": "string", "default": "blue"}
        }});
        let filled = elicitation_defaults(&schema, &json!({"color": "red"}));
        assert_eq!(
            filled,
            json!({"name": "Ada", "subscribe": false, "color": "red"})
        );
        assert_eq!(elicitation_defaults(&json!({}), &json!(null)), json!({}));
    }
}
