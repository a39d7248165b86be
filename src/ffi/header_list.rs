//! The per-request header provider, for C: `mcp_header_provider`, filling `mcp_header_list`.
//! Its setter is with the other options (`client_options/oauth.rs`).

use super::boundary::borrow_mut;
use super::guard;
use super::status::mcp_status;
use super::strings::required_str;
use std::ffi::{c_char, c_void};

/// The headers the provider adds to one request.
pub struct mcp_header_list {
    pub(super) headers: Vec<(String, String)>,
}

/// Called before every HTTP request to the MCP server (`url`), on the thread about to send it:
/// add headers with `mcp_header_list_add` (e.g. "Authorization", "Bearer ...") and return true;
/// return false to fail the request with MCP_STATUS_UNAUTHORIZED. A 401 or 403 then ends the
/// call with MCP_STATUS_UNAUTHORIZED and the challenge in `mcp_result_error_data`; refresh the
/// token and call again. `url` is valid during the call.
pub type mcp_header_provider = Option<
    unsafe extern "C" fn(
        userdata: *mut c_void,
        url: *const c_char,
        headers: *mut mcp_header_list,
    ) -> bool,
>;

/// Adds a header to the request (copied). The name must be an HTTP token and the value free
/// of control characters; the request fails with MCP_STATUS_INVALID_ARGUMENT otherwise.
/// Returns MCP_STATUS_INVALID_ARGUMENT for NULL arguments or invalid UTF-8.
///
/// # Safety
/// `headers` is the pointer passed to the provider, during that call; the strings are NULL or
/// NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_header_list_add(
    headers: *mut mcp_header_list,
    name: *const c_char,
    value: *const c_char,
) -> mcp_status {
    guard(
        || mcp_status::InternalError,
        || {
            let (Some(headers), Ok(name), Ok(value)) = (
                borrow_mut(headers),
                required_str(name, "header name"),
                required_str(value, "header value"),
            ) else {
                return mcp_status::InvalidArgument;
            };
            headers.headers.push((name.to_owned(), value.to_owned()));
            mcp_status::Ok
        },
    )
}
