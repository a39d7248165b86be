//! The client options that register request handlers (what the server asks of the client) and
//! declare what they take. The handler type and its reply are in `ffi::handlers`.

use super::mcp_client_options;
use crate::ffi::callbacks::UserData;
use crate::ffi::handlers::{mcp_handler_reply, mcp_request_handler};
use crate::ffi::setter::set;
use crate::ffi::status::mcp_status;
use crate::ffi::strings::{required_str, to_cstring};
use crate::handlers::{HandlerError, ServerRequest};
use crate::protocol::jsonrpc::INTERNAL_ERROR;
use serde_json::Value;
use std::ffi::{c_char, c_void};
use std::sync::Arc;

/// Registers the handler for one method the server may ask for (NULL handler: remove it).
///
/// # Safety
/// `options` is NULL or live; `method` is NULL or NUL-terminated; `handler` is safe to call
/// from any thread with `userdata` for as long as a client made from these options is alive.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_request_handler(
    options: *mut mcp_client_options,
    method: *const c_char,
    handler: mcp_request_handler,
    userdata: *mut c_void,
) -> mcp_status {
    set(options, |o| {
        let method = required_str(method, "method")?.to_owned();
        let Some(handler) = handler else {
            o.client.callbacks.request_handlers.remove(&method);
            return Ok(());
        };
        let userdata = UserData(userdata);
        let call = move |request: &ServerRequest| -> std::result::Result<Value, HandlerError> {
            let userdata = userdata;
            let method = to_cstring(request.method);
            let params = to_cstring(request.params.to_string());
            let mut reply = mcp_handler_reply {
                result: None,
                error: None,
                cancellation: request.cancellation.clone(),
            };
            let ok = handler(userdata.0, method.as_ptr(), params.as_ptr(), &mut reply);
            match (ok, reply.result, reply.error) {
                (true, Some(result), _) => Ok(result),
                (_, _, Some(error)) => Err(error),
                (true, None, None) => Err(HandlerError {
                    code: INTERNAL_ERROR,
                    message: "the handler set no result".into(),
                }),
                (false, _, None) => Err(HandlerError {
                    code: INTERNAL_ERROR,
                    message: "handler failed".into(),
                }),
            }
        };
        o.client
            .callbacks
            .request_handlers
            .insert(method, Arc::new(call));
        Ok(())
    })
}

/// The `elicitation/create` handler also takes URL-mode requests (`mode` "url": show the URL's
/// host, get consent, open it): declares `elicitation.url` besides form mode. Default off.
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_elicitation_url(
    options: *mut mcp_client_options,
    enabled: bool,
) -> mcp_status {
    set(options, |o| {
        o.client.elicitation_url = enabled;
        Ok(())
    })
}

/// The `sampling/createMessage` handler takes requests with `tools` (and `toolChoice`):
/// declares `sampling.tools`. Default off.
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_sampling_tools(
    options: *mut mcp_client_options,
    enabled: bool,
) -> mcp_status {
    set(options, |o| {
        o.client.sampling_tools = enabled;
        Ok(())
    })
}
