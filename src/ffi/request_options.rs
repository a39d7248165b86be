//! `mcp_request_options`: how one call is made (token, timeout, progress, `_meta`, input
//! rounds by hand). One options object may serve many calls at once. Setters follow
//! `setter::set`.

use super::boundary::borrow;
use super::callbacks::{mcp_progress_callback, progress_handler};
use super::cancellation::mcp_cancellation;
use super::setter::{set, HasError};
use super::status::mcp_status;
use super::strings::{optional_json, optional_str};
use super::{free_handle, guard};
use crate::client::RequestOptions;
use crate::error::Error;
use std::ffi::{c_char, c_void};
use std::time::Duration;

/// Options for one request: cancellation token, timeout, progress token, `_meta`.
pub struct mcp_request_options {
    pub(crate) request: RequestOptions,
    pub(crate) error: Option<Error>,
}

impl HasError for mcp_request_options {
    fn error(&mut self) -> &mut Option<Error> {
        &mut self.error
    }
}

/// Default request options: no token, the client's timeout, no progress token, no `_meta`.
/// Free with `mcp_request_options_free`. One options object may serve many calls at once.
#[no_mangle]
pub extern "C" fn mcp_request_options_new() -> *mut mcp_request_options {
    guard(std::ptr::null_mut, || {
        Box::into_raw(Box::new(mcp_request_options {
            request: RequestOptions::default(),
            error: None,
        }))
    })
}

/// Frees the options. NULL is accepted. Calls already made with them are unaffected.
///
/// # Safety
/// `options` is NULL or options not yet freed, and no call is reading them.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_options_free(options: *mut mcp_request_options) {
    free_handle(options)
}

/// The token that cancels calls made with these options (NULL: none). The options keep their
/// own reference, so the token handle may be freed first.
///
/// # Safety
/// `options` is NULL or live; `token` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_options_set_cancellation(
    options: *mut mcp_request_options,
    token: *const mcp_cancellation,
) -> mcp_status {
    set(options, |o| {
        o.request.cancellation = borrow(token).map(|t| t.token.clone());
        Ok(())
    })
}

/// This request's timeout in milliseconds; 0 means none, even if the client has one. It bounds
/// the whole request, all its legs together (`input_required` rounds, task polls,
/// `tasks/result`, authorization retries): MCP_STATUS_TIMEOUT past it.
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_options_set_timeout_ms(
    options: *mut mcp_request_options,
    ms: u64,
) -> mcp_status {
    set(options, |o| {
        o.request.timeout = Some(Duration::from_millis(ms));
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

/// A hard limit on the whole call (all its legs), whatever progress arrives; 0 means none.
/// Passing it cancels the call like a timeout (MCP_STATUS_TIMEOUT).
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

/// A progress token sent as `params._meta.progressToken` (NULL: none).
///
/// # Safety
/// `options` is NULL or live; `token` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_options_set_progress_token(
    options: *mut mcp_request_options,
    token: *const c_char,
) -> mcp_status {
    set(options, |o| {
        o.request.progress_token = optional_str(token, "progress token")?.map(Into::into);
        Ok(())
    })
}

/// Extra `params._meta` entries, as a JSON object (NULL: none).
///
/// # Safety
/// `options` is NULL or live; `json` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_options_set_meta(
    options: *mut mcp_request_options,
    json: *const c_char,
) -> mcp_status {
    set(options, |o| {
        o.request.meta = match optional_json(json, "meta", true)? {
            Some(serde_json::Value::Object(map)) => Some(map),
            _ => None,
        };
        Ok(())
    })
}

/// Continues an `input_required` result by hand: the answers as a JSON object keyed like its
/// `inputRequests` (sent as `inputResponses`; NULL: none).
///
/// # Safety
/// `options` is NULL or live; `json` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_options_set_input_responses(
    options: *mut mcp_request_options,
    json: *const c_char,
) -> mcp_status {
    set(options, |o| {
        o.request.input_responses = optional_json(json, "input responses", true)?;
        Ok(())
    })
}

/// Continues an `input_required` result by hand: its `requestState`, sent back unchanged (NULL:
/// none).
///
/// # Safety
/// `options` is NULL or live; `state` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_options_set_request_state(
    options: *mut mcp_request_options,
    state: *const c_char,
) -> mcp_status {
    set(options, |o| {
        o.request.request_state = optional_str(state, "request state")?.map(str::to_owned);
        Ok(())
    })
}

/// List calls (one page or all pages) ask the server even when a fresh page is cached; the new
/// page is kept. Off by default: pages whose result carried `ttlMs` are served from the cache
/// while fresh, and a list-changed notification drops them.
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_options_set_bypass_cache(
    options: *mut mcp_request_options,
    bypass: bool,
) -> mcp_status {
    set(options, |o| {
        o.request.bypass_cache = bypass;
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

/// A call answered with a task returns the task itself (`resultType` "task", `taskId`,
/// `status`...) instead of polling it; drive it with `mcp_client_get_task`,
/// `mcp_client_update_task` and `mcp_client_cancel_task`.
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_options_set_return_task(
    options: *mut mcp_request_options,
    enabled: bool,
) -> mcp_status {
    set(options, |o| {
        o.request.return_task = enabled;
        Ok(())
    })
}
