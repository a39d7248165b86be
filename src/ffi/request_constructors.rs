//! The requests to start without blocking: `mcp_request`, made by one `mcp_request_*`
//! constructor per MCP request, and started by `mcp_client_start` (see `start.rs`).

use super::boundary::free_handle;
use super::guard;
use super::request_arguments as arguments;
use crate::client::Request;
use crate::error::{Error, Result, Status};
use std::ffi::c_char;

/// A request to start with `mcp_client_start` (or `mcp_client_start_callback`). Made by an
/// `mcp_request_*` constructor, never NULL; a constructor given a bad argument makes a request
/// whose completion is MCP_STATUS_INVALID_ARGUMENT. One request may be started many times.
/// Free it with `mcp_request_free` (at any time after the start returned).
pub struct mcp_request {
    pub(super) request: Result<Request>,
}

fn make_request(build: impl FnOnce() -> Result<Request>) -> *mut mcp_request {
    let request = guard(
        || {
            Err(Error::new(
                Status::InternalError,
                "internal error: the library panicked",
            ))
        },
        build,
    );
    Box::into_raw(Box::new(mcp_request { request }))
}

/// `ping`.
#[no_mangle]
pub extern "C" fn mcp_request_ping() -> *mut mcp_request {
    make_request(|| Ok(Request::Ping))
}

/// `server/discover`.
#[no_mangle]
pub extern "C" fn mcp_request_discover() -> *mut mcp_request {
    make_request(|| Ok(Request::Discover))
}

/// `tools/call`, as `mcp_client_call_tool`.
///
/// # Safety
/// Strings are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_call_tool(
    name: *const c_char,
    arguments_json: *const c_char,
) -> *mut mcp_request {
    make_request(|| arguments::call_tool(name, arguments_json))
}

/// `resources/read`, as `mcp_client_read_resource`.
///
/// # Safety
/// `uri` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_read_resource(uri: *const c_char) -> *mut mcp_request {
    make_request(|| arguments::read_resource(uri))
}

/// `prompts/get`, as `mcp_client_get_prompt`.
///
/// # Safety
/// Strings are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_get_prompt(
    name: *const c_char,
    arguments_json: *const c_char,
) -> *mut mcp_request {
    make_request(|| arguments::get_prompt(name, arguments_json))
}

/// `completion/complete`, as `mcp_client_complete`.
///
/// # Safety
/// Strings are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_complete(
    ref_json: *const c_char,
    argument_json: *const c_char,
    context_json: *const c_char,
) -> *mut mcp_request {
    make_request(|| arguments::complete(ref_json, argument_json, context_json))
}

/// Any request by method name, as `mcp_client_request`.
///
/// # Safety
/// Strings are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_other(
    method: *const c_char,
    params_json: *const c_char,
) -> *mut mcp_request {
    make_request(|| arguments::other(method, params_json))
}

/// `logging/setLevel`, as `mcp_client_set_logging_level`.
///
/// # Safety
/// `level` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_set_logging_level(level: *const c_char) -> *mut mcp_request {
    make_request(|| arguments::set_logging_level(level))
}

/// `resources/subscribe`, as `mcp_client_subscribe_resource`.
///
/// # Safety
/// `uri` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_subscribe_resource(uri: *const c_char) -> *mut mcp_request {
    make_request(|| arguments::subscribe_resource(uri))
}

/// `resources/unsubscribe`, as `mcp_client_unsubscribe_resource`.
///
/// # Safety
/// `uri` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_unsubscribe_resource(uri: *const c_char) -> *mut mcp_request {
    make_request(|| arguments::unsubscribe_resource(uri))
}

/// One page of `tools/list`; `cursor` is NULL for the first.
///
/// # Safety
/// `cursor` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_list_tools(cursor: *const c_char) -> *mut mcp_request {
    make_request(|| arguments::list_page(cursor, |cursor| Request::ListTools { cursor }))
}

/// One page of `resources/list`; `cursor` is NULL for the first.
///
/// # Safety
/// `cursor` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_list_resources(cursor: *const c_char) -> *mut mcp_request {
    make_request(|| arguments::list_page(cursor, |cursor| Request::ListResources { cursor }))
}

/// One page of `resources/templates/list`; `cursor` is NULL for the first.
///
/// # Safety
/// `cursor` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_list_resource_templates(
    cursor: *const c_char,
) -> *mut mcp_request {
    make_request(|| {
        arguments::list_page(cursor, |cursor| Request::ListResourceTemplates { cursor })
    })
}

/// One page of `prompts/list`; `cursor` is NULL for the first.
///
/// # Safety
/// `cursor` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_list_prompts(cursor: *const c_char) -> *mut mcp_request {
    make_request(|| arguments::list_page(cursor, |cursor| Request::ListPrompts { cursor }))
}

/// Every tool over all pages (`{"tools": [...]}`), as `mcp_client_tools`.
#[no_mangle]
pub extern "C" fn mcp_request_tools() -> *mut mcp_request {
    make_request(|| Ok(Request::Tools))
}

/// Every resource over all pages (`{"resources": [...]}`).
#[no_mangle]
pub extern "C" fn mcp_request_resources() -> *mut mcp_request {
    make_request(|| Ok(Request::Resources))
}

/// Every resource template over all pages (`{"resourceTemplates": [...]}`).
#[no_mangle]
pub extern "C" fn mcp_request_resource_templates() -> *mut mcp_request {
    make_request(|| Ok(Request::ResourceTemplates))
}

/// Every prompt over all pages (`{"prompts": [...]}`).
#[no_mangle]
pub extern "C" fn mcp_request_prompts() -> *mut mcp_request {
    make_request(|| Ok(Request::Prompts))
}

/// Frees a request; NULL is accepted. Requests already started are not affected.
///
/// # Safety
/// `request` is NULL or a request not freed yet.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_free(request: *mut mcp_request) {
    free_handle(request)
}
