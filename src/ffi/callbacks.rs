//! Host callbacks from C for what the server says: progress, log messages, list changes,
//! resource updates, other notifications, stderr lines, and the library's own log: their C
//! types, and how a C function pointer and its `userdata` become the Rust handler the client
//! calls. Their setters are with the other options (`client_options/callbacks.rs`,
//! `request_options.rs`). Strings passed are valid during the call only.

use super::strings::to_cstring;
use crate::handlers::{self, Progress};
use std::ffi::{c_char, c_void};
use std::sync::Arc;

/// The log level's C name (one enum: cbindgen.toml renames `LogLevel`).
pub use crate::handlers::LogLevel as mcp_log_level;

/// A host pointer handed back to a host callback; the host makes it safe to use from our thread.
#[derive(Clone, Copy)]
pub(crate) struct UserData(pub *mut c_void);

// SAFETY: the pointer is only passed back to the host, whose docs say which thread calls it.
unsafe impl Send for UserData {}

unsafe impl Sync for UserData {}

/// Progress of a call: its progress token (JSON text), the progress so far, the total
/// (negative when the server gave none) and a message (NULL when none).
///
/// Progress and notification callbacks run on the client's callback thread: one at a time for a
/// client, in the order the server sent them. That thread is any of the library's shared pool
/// (named `mcpc-pool`, shared by every client of the process, started on demand and ended when
/// idle): callbacks of different clients may run at once, and one that blocks holds up only its
/// own client's callbacks (up to 64 blocked at once across the process; past that, other
/// clients' callbacks wait for one of them to return).
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

/// Receives each line a stdio server writes to stderr, without its newline, in order, on one of
/// the library's shared worker threads, one line at a time per client (it holds no lock of the
/// library: it may call the client). While it runs late, the server's stderr is not read (up to
/// 1,024 lines wait). `line` is valid during the call only.
pub type mcp_stderr_callback =
    Option<unsafe extern "C" fn(userdata: *mut c_void, line: *const c_char)>;

/// Receives the library's own log messages (dropped tools, skipped frames, era fallback, dropped
/// callbacks), with an `mcp_log_level`, on the client's callback thread, or on the thread of the
/// call or close that noticed; never while the library holds a lock, so it may call the client.
/// `message` is valid during the call.
pub type mcp_log_callback = Option<
    unsafe extern "C" fn(userdata: *mut c_void, level: mcp_log_level, message: *const c_char),
>;

pub(super) fn progress_handler(
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
