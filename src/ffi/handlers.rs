//! Request handlers from C: the host answers what the server asks of the client
//! (`sampling/createMessage`, `elicitation/create`, `roots/list`) through `mcp_handler_reply`.
//! The setters that register them are with the other options (`client_options/handlers.rs`).

use super::boundary::{borrow, borrow_mut};
use super::guard;
use super::result::{into_result, mcp_result};
use super::strings::optional_json;
use crate::cancellation::CancellationToken;
use crate::error::Error;
use crate::handlers::{self, HandlerError};
use serde_json::Value;
use std::ffi::{c_char, c_void};

/// Where a request handler puts its answer.
pub struct mcp_handler_reply {
    pub(super) result: Option<Value>,
    pub(super) error: Option<HandlerError>,
    pub(super) cancellation: CancellationToken,
}

/// Answers a request the server makes of the client (`elicitation/create`,
/// `sampling/createMessage`, `roots/list`): receives the method and params (JSON), and sets the
/// result with `mcp_handler_reply_set_result` (returning true) or an error with
/// `mcp_handler_reply_set_error` (returning false). Handshake era: called on a library thread of
/// its own per server request, several at once. Modern era (`input_required` rounds): called on
/// the thread of the call that met the request. Either way it may make calls on the client
/// itself, and close or free it. Closing the client cancels its reply and waits for it (up to
/// 2 s, see `mcp_client_close`). `params_json` is valid during the call. Registering one
/// declares the matching client
/// capability unless capabilities were set explicitly.
pub type mcp_request_handler = Option<
    unsafe extern "C" fn(
        userdata: *mut c_void,
        method: *const c_char,
        params_json: *const c_char,
        reply: *mut mcp_handler_reply,
    ) -> bool,
>;

/// Whether the server cancelled the request being handled (or the call that met it was
/// cancelled, or the client is closing). A long handler may poll it and give up; its answer is
/// then not sent.
///
/// # Safety
/// `reply` is the pointer passed to the handler, during that call.
#[no_mangle]
pub unsafe extern "C" fn mcp_handler_reply_is_cancelled(reply: *const mcp_handler_reply) -> bool {
    guard(
        || false,
        || borrow(reply).is_some_and(|r| r.cancellation.is_cancelled()),
    )
}

/// Gives a handler's result (a JSON object, copied). Returns false if it is not one.
///
/// # Safety
/// `reply` is the pointer passed to the handler, during that call; `json` is NULL or
/// NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_handler_reply_set_result(
    reply: *mut mcp_handler_reply,
    json: *const c_char,
) -> bool {
    guard(
        || false,
        || match (
            borrow_mut(reply),
            optional_json(json, "handler result", true),
        ) {
            (Some(reply), Ok(Some(result))) => {
                reply.result = Some(result);
                true
            }
            _ => false,
        },
    )
}

/// Gives a handler's error: a JSON-RPC code and message (copied; NULL message: "handler failed").
///
/// # Safety
/// `reply` is the pointer passed to the handler, during that call; `message` is NULL or
/// NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_handler_reply_set_error(
    reply: *mut mcp_handler_reply,
    code: i64,
    message: *const c_char,
) {
    guard(
        || (),
        || {
            if let Some(reply) = borrow_mut(reply) {
                let message = (!message.is_null()).then(|| {
                    std::ffi::CStr::from_ptr(message)
                        .to_string_lossy()
                        .into_owned()
                });
                reply.error = Some(HandlerError {
                    code,
                    message: message.unwrap_or_else(|| "handler failed".to_owned()),
                });
            }
        },
    )
}

/// Fills what an elicitation answer leaves out with the defaults of the requested schema
/// (SEP-1034). `requested_schema_json` is the request's `requestedSchema`; `content_json` is
/// the answer so far (NULL: empty). The result JSON is the filled content object.
///
/// # Safety
/// The strings are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_elicitation_defaults(
    requested_schema_json: *const c_char,
    content_json: *const c_char,
) -> *mut mcp_result {
    into_result(|| {
        let schema = optional_json(requested_schema_json, "requested schema", true)?
            .ok_or_else(|| Error::invalid("requested schema must not be NULL"))?;
        let content = optional_json(content_json, "content", true)?.unwrap_or(Value::Null);
        Ok(handlers::elicitation_defaults(&schema, &content))
    })
}
