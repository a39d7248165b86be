//! Notifications the client sends.

use super::client::{mcp_client, with_request};
use super::result::mcp_result;
use super::strings::{optional_json, required_str};
use serde_json::json;
use std::ffi::c_char;

/// Sends a notification: `method`, and `params_json` (a JSON object, or NULL for none). Any
/// era (the 2026-07-28 revision defines no client notification but `notifications/cancelled`,
/// so what a modern server makes of another is its own affair). The result is `{}` once the
/// notification was handed to the transport.
///
/// # Safety
/// `client` is NULL or live; strings are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_notify(
    client: *mut mcp_client,
    method: *const c_char,
    params_json: *const c_char,
) -> *mut mcp_result {
    with_request(client, std::ptr::null(), |c, _| {
        let method = required_str(method, "method")?;
        let params = optional_json(params_json, "params", true)?;
        c.notify(method, params)?;
        Ok(json!({}))
    })
}

/// `notifications/roots/list_changed`: the roots the roots handler answers with have changed.
/// Handshake era only (MCP_STATUS_NOT_SUPPORTED in the modern era); needs a `roots/list`
/// handler (which makes the client declare `roots.listChanged`), else
/// MCP_STATUS_INVALID_ARGUMENT. The result is `{}`.
///
/// # Safety
/// `client` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_notify_roots_list_changed(
    client: *mut mcp_client,
) -> *mut mcp_result {
    with_request(client, std::ptr::null(), |c, _| {
        c.notify_roots_list_changed()?;
        Ok(json!({}))
    })
}
