//! Each MCP request's C arguments, checked and made a [`Request`]: one function per request
//! that takes arguments, shared by its blocking function (`blocking_requests.rs`) and its
//! constructor (`request_constructors.rs`), so both read them alike. What a request then does
//! is defined once more, for Rust and C alike, by `client::operation`.
//!
//! # Safety
//! Every string is NULL or NUL-terminated.

use super::strings::{optional_arguments, optional_json, optional_str, required_str};
use crate::client::Request;
use crate::error::{Error, Result};
use std::ffi::c_char;

/// `tools/call`: `arguments_json` is a JSON object or NULL.
pub(super) unsafe fn call_tool(
    name: *const c_char,
    arguments_json: *const c_char,
) -> Result<Request> {
    Ok(Request::CallTool {
        name: required_str(name, "tool name")?.to_owned(),
        arguments: optional_arguments(arguments_json, "tool arguments")?,
    })
}

/// `resources/read`.
pub(super) unsafe fn read_resource(uri: *const c_char) -> Result<Request> {
    let uri = required_str(uri, "resource uri")?.to_owned();
    Ok(Request::ReadResource { uri })
}

/// `prompts/get`: `arguments_json` is a JSON object of strings or NULL.
pub(super) unsafe fn get_prompt(
    name: *const c_char,
    arguments_json: *const c_char,
) -> Result<Request> {
    Ok(Request::GetPrompt {
        name: required_str(name, "prompt name")?.to_owned(),
        arguments: optional_arguments(arguments_json, "prompt arguments")?,
    })
}

/// `completion/complete`: the reference and the argument are required, the context may be NULL.
pub(super) unsafe fn complete(
    ref_json: *const c_char,
    argument_json: *const c_char,
    context_json: *const c_char,
) -> Result<Request> {
    Ok(Request::Complete {
        reference: optional_json(ref_json, "completion ref", true)?
            .ok_or_else(|| Error::invalid("completion ref must not be NULL"))?,
        argument: optional_json(argument_json, "completion argument", true)?
            .ok_or_else(|| Error::invalid("completion argument must not be NULL"))?,
        context: optional_json(context_json, "completion context", true)?,
    })
}

/// Any request by method name: `params_json` is a JSON object or NULL.
pub(super) unsafe fn other(method: *const c_char, params_json: *const c_char) -> Result<Request> {
    Ok(Request::Other {
        method: required_str(method, "method")?.to_owned(),
        params: optional_json(params_json, "params", true)?,
    })
}

/// `logging/setLevel`.
pub(super) unsafe fn set_logging_level(level: *const c_char) -> Result<Request> {
    let level = required_str(level, "level")?.to_owned();
    Ok(Request::SetLoggingLevel { level })
}

/// `resources/subscribe`.
pub(super) unsafe fn subscribe_resource(uri: *const c_char) -> Result<Request> {
    let uri = required_str(uri, "resource uri")?.to_owned();
    Ok(Request::SubscribeResource { uri })
}

/// `resources/unsubscribe`.
pub(super) unsafe fn unsubscribe_resource(uri: *const c_char) -> Result<Request> {
    let uri = required_str(uri, "resource uri")?.to_owned();
    Ok(Request::UnsubscribeResource { uri })
}

/// One page of a list (`page` names which, e.g. `|cursor| Request::ListTools { cursor }`):
/// `cursor` is NULL for the first.
pub(super) unsafe fn list_page(
    cursor: *const c_char,
    page: impl FnOnce(Option<String>) -> Request,
) -> Result<Request> {
    Ok(page(optional_str(cursor, "cursor")?.map(str::to_owned)))
}
