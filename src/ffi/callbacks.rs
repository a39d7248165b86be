//! Host callbacks from C for what the server says: progress, log messages, list changes,
//! resource updates, other notifications, stderr lines, and the library's own log. Each setter
//! wraps the C function pointer and its `userdata` into the Rust handler the client calls.
//! Strings passed are valid during the call only.

use super::client_options::mcp_client_options;
use super::request_options::mcp_request_options;
use super::setter::set;
use super::status::mcp_status;
use super::strings::to_cstring;
use crate::handlers::{self, ListKind, LogLevel, LogMessage, Progress};
use crate::transport::stdio::StderrMode;
use serde_json::Value;
use std::ffi::{c_char, c_void};
use std::sync::Arc;

/// How serious a library log message is. The numbers are part of the C ABI.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum mcp_log_level {
    Debug = 0,
    Info = 1,
    Warning = 2,
    Error = 3,
}

impl From<LogLevel> for mcp_log_level {
    fn from(level: LogLevel) -> Self {
        match level {
            LogLevel::Debug => mcp_log_level::Debug,
            LogLevel::Info => mcp_log_level::Info,
            LogLevel::Warning => mcp_log_level::Warning,
            LogLevel::Error => mcp_log_level::Error,
        }
    }
}

/// A host pointer handed back to a host callback; the host makes it safe to use from our thread.
#[derive(Clone, Copy)]
pub(crate) struct UserData(pub *mut c_void);

// SAFETY: the pointer is only passed back to the host, whose docs say which thread calls it.
unsafe impl Send for UserData {}

unsafe impl Sync for UserData {}

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

/// Receives each line a stdio server writes to stderr, without its newline, on the client's
/// stderr thread (which holds no lock of the library: it may call the client). `line` is valid
/// during the call only.
pub type mcp_stderr_callback =
    Option<unsafe extern "C" fn(userdata: *mut c_void, line: *const c_char)>;

/// Receives the library's own log messages (dropped tools, skipped frames, era fallback, dropped
/// callbacks), with an `mcp_log_level`, on the client's callback thread, or on the thread of the
/// call or close that noticed; never while the library holds a lock, so it may call the client.
/// `message` is valid during the call.
pub type mcp_log_callback = Option<
    unsafe extern "C" fn(userdata: *mut c_void, level: mcp_log_level, message: *const c_char),
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
                callback(userdata.0, level.into(), message.as_ptr());
            })
        });
        Ok(())
    })
}
