//! Host callbacks from C: progress, server log messages, list changes, resource updates and
//! other notifications. They run on the client's callback thread, one at a time, in the order
//! the server sent them, and may call the client. Strings passed are valid during the call.

use super::options::{mcp_client_options, mcp_request_options, set, UserData};
use super::result::{into_result, mcp_result};
use super::{optional_json, to_cstring};
use crate::error::{mcp_status, Error};
use crate::handlers::{self, ListKind, LogMessage, Progress};
use serde_json::Value;
use std::ffi::{c_char, c_void};
use std::sync::Arc;
use std::time::Duration;

/// Progress of a call: its progress token (JSON text), the progress so far, the total
/// (negative when the server gave none) and a message (NULL when none).
pub type mcp_progress_callback = Option<
    unsafe extern "C" fn(
        userdata: *mut c_void,
        token_json: *const c_char,
        progress: f64,
        total: f64,
        message: *const c_char,
    ),
>;

/// A `notifications/message` from the server: its level ("info", "error"...), logger (NULL
/// when none) and data (JSON text).
pub type mcp_message_callback = Option<
    unsafe extern "C" fn(
        userdata: *mut c_void,
        level: *const c_char,
        logger: *const c_char,
        data_json: *const c_char,
    ),
>;

/// A list changed on the server: `kind` is "tools", "prompts" or "resources".
pub type mcp_list_changed_callback =
    Option<unsafe extern "C" fn(userdata: *mut c_void, kind: *const c_char)>;

/// A subscribed resource changed (`notifications/resources/updated`).
pub type mcp_resource_updated_callback =
    Option<unsafe extern "C" fn(userdata: *mut c_void, uri: *const c_char)>;

/// Any other notification (and those above whose callback is unset): method and params
/// (JSON text, NULL when the notification had none).
pub type mcp_notification_callback = Option<
    unsafe extern "C" fn(userdata: *mut c_void, method: *const c_char, params_json: *const c_char),
>;

fn progress_handler(
    callback: mcp_progress_callback,
    userdata: *mut c_void,
) -> Option<handlers::ProgressHandler> {
    let userdata = UserData(userdata);
    callback.map(|callback| -> handlers::ProgressHandler {
        Arc::new(move |p: &Progress| {
            let userdata = userdata;
            let token = to_cstring(p.token.to_string());
            let message = p.message.clone().map(to_cstring);
            let message_ptr = message.as_ref().map_or(std::ptr::null(), |m| m.as_ptr());
            // SAFETY: the setter's contract.
            unsafe {
                callback(
                    userdata.0,
                    token.as_ptr(),
                    p.progress,
                    p.total.unwrap_or(-1.0),
                    message_ptr,
                )
            };
        })
    })
}

/// Hears the progress of every call that has a progress token. Setting it makes the library
/// give every request a progress token of its own.
///
/// # Safety
/// `options` is NULL or live; `callback` is safe to call from another thread with `userdata`
/// for as long as a client made from these options is alive.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_progress_callback(
    options: *mut mcp_client_options,
    callback: mcp_progress_callback,
    userdata: *mut c_void,
) -> mcp_status {
    set(options, |o| {
        o.client.callbacks.on_progress = progress_handler(callback, userdata);
        Ok(())
    })
}

/// Hears the progress of calls made with these options (before the client's callback). Without
/// a progress token of the host's, the library makes one unique on the connection. The callback
/// never runs after its call has returned, so `userdata` may be freed as soon as the call
/// returns. A call that ends by itself (answered, or failed by the server or transport) first
/// lets its progress callbacks still queued run (it waits for its own only, and for the
/// callbacks queued before them on the callback thread). A cancelled, timed-out or closed call
/// returns at once: its queued progress callbacks are dropped, not run; if one is running at
/// that moment, the call waits for that one to return (a progress callback that waits for its
/// own call to return deadlocks). A call made from inside a callback drops its queued progress callbacks in any
/// case (they would run after it).
///
/// # Safety
/// `options` is NULL or live; `callback` is safe to call from another thread with `userdata`
/// while such a call runs.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_options_set_progress_callback(
    options: *mut mcp_request_options,
    callback: mcp_progress_callback,
    userdata: *mut c_void,
) -> mcp_status {
    set(options, |o| {
        o.request.on_progress = progress_handler(callback, userdata);
        Ok(())
    })
}

/// Progress restarts the call's timeout (never past the maximum total, if one is set).
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_options_set_reset_timeout_on_progress(
    options: *mut mcp_request_options,
    reset: bool,
) -> mcp_status {
    set(options, |o| {
        o.request.reset_timeout_on_progress = reset;
        Ok(())
    })
}

/// A hard limit on the whole call, whatever progress arrives; 0 means none. Passing it cancels
/// the call like a timeout (MCP_STATUS_TIMEOUT).
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_options_set_max_total_timeout_ms(
    options: *mut mcp_request_options,
    ms: u64,
) -> mcp_status {
    set(options, |o| {
        o.request.max_total_timeout = (ms > 0).then(|| Duration::from_millis(ms));
        Ok(())
    })
}

/// Hears the server's log messages (`notifications/message`).
///
/// # Safety
/// As for `mcp_client_options_set_progress_callback`.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_message_callback(
    options: *mut mcp_client_options,
    callback: mcp_message_callback,
    userdata: *mut c_void,
) -> mcp_status {
    let userdata = UserData(userdata);
    set(options, |o| {
        o.client.callbacks.on_message = callback.map(|callback| -> handlers::MessageHandler {
            Arc::new(move |m: &LogMessage| {
                let userdata = userdata;
                let (level, data) = (to_cstring(m.level.as_str()), to_cstring(m.data.to_string()));
                let logger = m.logger.clone().map(to_cstring);
                let logger_ptr = logger.as_ref().map_or(std::ptr::null(), |l| l.as_ptr());
                callback(userdata.0, level.as_ptr(), logger_ptr, data.as_ptr());
            })
        });
        Ok(())
    })
}

/// Hears `notifications/{tools,prompts,resources}/list_changed`.
///
/// # Safety
/// As for `mcp_client_options_set_progress_callback`.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_list_changed_callback(
    options: *mut mcp_client_options,
    callback: mcp_list_changed_callback,
    userdata: *mut c_void,
) -> mcp_status {
    let userdata = UserData(userdata);
    set(options, |o| {
        o.client.callbacks.on_list_changed =
            callback.map(|callback| -> handlers::ListChangedHandler {
                Arc::new(move |kind: ListKind| {
                    let userdata = userdata;
                    let kind = to_cstring(kind.name());
                    callback(userdata.0, kind.as_ptr());
                })
            });
        Ok(())
    })
}

/// Hears `notifications/resources/updated`.
///
/// # Safety
/// As for `mcp_client_options_set_progress_callback`.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_resource_updated_callback(
    options: *mut mcp_client_options,
    callback: mcp_resource_updated_callback,
    userdata: *mut c_void,
) -> mcp_status {
    let userdata = UserData(userdata);
    set(options, |o| {
        o.client.callbacks.on_resource_updated =
            callback.map(|callback| -> handlers::ResourceUpdatedHandler {
                Arc::new(move |uri: &str| {
                    let userdata = userdata;
                    let uri = to_cstring(uri);
                    callback(userdata.0, uri.as_ptr());
                })
            });
        Ok(())
    })
}

/// Hears every other notification, and those whose own callback is unset.
///
/// # Safety
/// As for `mcp_client_options_set_progress_callback`.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_notification_callback(
    options: *mut mcp_client_options,
    callback: mcp_notification_callback,
    userdata: *mut c_void,
) -> mcp_status {
    let userdata = UserData(userdata);
    set(options, |o| {
        o.client.callbacks.on_notification =
            callback.map(|callback| -> handlers::NotificationHandler {
                Arc::new(move |method: &str, params: Option<&Value>| {
                    let userdata = userdata;
                    let method = to_cstring(method);
                    let params = params.map(|p| to_cstring(p.to_string()));
                    let params_ptr = params.as_ref().map_or(std::ptr::null(), |p| p.as_ptr());
                    callback(userdata.0, method.as_ptr(), params_ptr);
                })
            });
        Ok(())
    })
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
