//! One MCP request as a value: [`Request`] names the request and holds its arguments. The
//! blocking methods (`requests.rs`), the starts ([`Client::start`](super::Client::start)) and
//! the C API (its blocking functions and its constructors alike) all make one; what it sends
//! is `ClientCore::request_step` (`operation.rs`), the one place each request is carried out.

use crate::protocol::object_text::ObjectText;
use serde_json::Value;

/// One MCP request, to run with [`Client::run`](super::Client::run) (blocking) or start with
/// [`Client::start`](super::Client::start).
/// Each blocking request method is `run` of one of these.
#[derive(Clone, Debug)]
pub enum Request {
    Ping,
    /// `server/discover`.
    Discover,
    /// `tools/call`; `arguments` must be a JSON object. Answers `input_required` rounds.
    CallTool {
        name: String,
        arguments: Option<Arguments>,
    },
    /// `resources/read`. Answers `input_required` rounds.
    ReadResource {
        uri: String,
    },
    /// `prompts/get`; `arguments` must be a JSON object of strings.
    GetPrompt {
        name: String,
        arguments: Option<Arguments>,
    },
    /// `completion/complete`.
    Complete {
        reference: Value,
        argument: Value,
        context: Option<Value>,
    },
    /// `logging/setLevel` (handshake era only).
    SetLoggingLevel {
        level: String,
    },
    /// `resources/subscribe` (handshake era only).
    SubscribeResource {
        uri: String,
    },
    /// `resources/unsubscribe` (handshake era only).
    UnsubscribeResource {
        uri: String,
    },
    /// One page of `tools/list`.
    ListTools {
        cursor: Option<String>,
    },
    ListResources {
        cursor: Option<String>,
    },
    ListResourceTemplates {
        cursor: Option<String>,
    },
    ListPrompts {
        cursor: Option<String>,
    },
    /// Every tool over all pages: `{"tools": [...]}`.
    Tools,
    /// `{"resources": [...]}`.
    Resources,
    /// `{"resourceTemplates": [...]}`.
    ResourceTemplates,
    /// `{"prompts": [...]}`.
    Prompts,
    /// Any request by method name; `params` must be a JSON object.
    Other {
        method: String,
        params: Option<Value>,
    },
}

/// The arguments of a tool call or a prompt: a JSON object, as a tree or as the JSON text a
/// host already holds (checked when the [`ObjectText`] was made). Text is sent as it is (its
/// spelling, key order and numbers untouched), so no tree is built only to be encoded again:
/// the C API's arguments take this path. A tree that is not an object is refused with
/// INVALID_ARGUMENT when the request is made.
#[derive(Clone, Debug)]
pub enum Arguments {
    Value(Value),
    Json(ObjectText),
}

impl From<Value> for Arguments {
    fn from(value: Value) -> Arguments {
        Arguments::Value(value)
    }
}
