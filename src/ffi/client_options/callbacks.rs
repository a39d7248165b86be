//! The client options that register the host's callbacks for what the server says: progress,
//! log messages, list changes, resource updates, other notifications, stderr lines, and the
//! library's own log. The callback types, and how a C function pointer becomes a Rust handler,
//! are in `ffi::callbacks`.

use super::mcp_client_options;
use crate::ffi::callbacks::{
    mcp_list_changed_callback, mcp_log_callback, mcp_message_callback, mcp_notification_callback,
    mcp_progress_callback, mcp_resource_updated_callback, mcp_stderr_callback, progress_handler,
    UserData,
};
use crate::ffi::setter::set;
use crate::ffi::status::mcp_status;
use crate::ffi::strings::to_cstring;
use crate::handlers::{self, ListKind, LogLevel, LogMessage};
use crate::transport::stdio::StderrMode;
use serde_json::Value;
use std::ffi::c_void;
use std::sync::Arc;

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

/// Sends each stderr line of a stdio server to `callback` (the tail is kept too).
/// NULL `callback` goes back to the tail alone.
///
/// # Safety
/// `options` is NULL or live; `callback` is safe to call from another thread with `userdata`
/// for as long as any client made from these options is alive.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_stderr_callback(
    options: *mut mcp_client_options,
    callback: mcp_stderr_callback,
    userdata: *mut c_void,
) -> mcp_status {
    set(options, |o| {
        let userdata = UserData(userdata);
        o.stderr = match callback {
            None => StderrMode::Tail,
            Some(callback) => StderrMode::Callback(Arc::new(move |line: &str| {
                let userdata = userdata;
                let line = to_cstring(line);
                // A panic cannot come from C; this only guards our own conversion.
                let _ = std::panic::catch_unwind(|| callback(userdata.0, line.as_ptr()));
            })),
        };
        Ok(())
    })
}

/// Sets the log callback (NULL: none).
///
/// # Safety
/// `options` is NULL or live; `callback` is safe to call from any thread with `userdata` for as
/// long as a client made from these options is alive.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_log_callback(
    options: *mut mcp_client_options,
    callback: mcp_log_callback,
    userdata: *mut c_void,
) -> mcp_status {
    set(options, |o| {
        let userdata = UserData(userdata);
        o.client.callbacks.on_log = callback.map(|callback| -> crate::handlers::LogHandler {
            Arc::new(move |level: LogLevel, message: &str| {
                let userdata = userdata;
                let message = to_cstring(message);
                callback(userdata.0, level, message.as_ptr());
            })
        });
        Ok(())
    })
}
