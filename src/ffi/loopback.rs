//! `mcp_loopback`: the loopback redirect helper (RFC 8252), for C.

use super::auth_reply::{
    mcp_auth_reply, mcp_auth_reply_set_error, mcp_auth_reply_set_redirect_url,
};
use super::boundary::{borrow, borrow_mut};
use super::cancellation::mcp_cancellation;
use super::status::mcp_status;
use super::strings::{optional_str, to_cstring};
use super::{free_handle, guard};
use crate::auth::LoopbackRedirect;
use crate::error::{Error, Result, Status};
use std::ffi::{c_char, CString};
use std::time::{Duration, Instant};

/// A listener on 127.0.0.1 for the OAuth redirect of a native host. Register its redirect URI
/// (`mcp_loopback_redirect_uri`) as the client's redirect URI; in the authorization callback,
/// open the authorization URL in the browser, then `mcp_loopback_wait` for the browser to come
/// back, and return `mcp_loopback_url`. It stays open until freed, so every authorization of
/// a client (a step-up makes a second one) can use it.
pub struct mcp_loopback {
    listener: Result<LoopbackRedirect>,
    redirect_uri: Option<CString>,
    url: Option<CString>,
    message: CString,
}

/// Opens the listener on 127.0.0.1 at a port the system picks. `path` is the redirect URI's
/// path, NULL for "/callback". Never returns NULL: when it could not open,
/// `mcp_loopback_redirect_uri` is NULL and `mcp_loopback_wait` returns the reason. Free with
/// `mcp_loopback_free`.
///
/// # Safety
/// `path` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_loopback_new(path: *const c_char) -> *mut mcp_loopback {
    guard(std::ptr::null_mut, || {
        let listener = optional_str(path, "path").and_then(LoopbackRedirect::bind);
        let redirect_uri = listener.as_ref().ok().map(|l| to_cstring(l.redirect_uri()));
        let message = listener
            .as_ref()
            .err()
            .map_or_else(CString::default, |e| to_cstring(e.message.clone()));
        Box::into_raw(Box::new(mcp_loopback {
            listener,
            redirect_uri,
            url: None,
            message,
        }))
    })
}

/// The redirect URI, e.g. "http://127.0.0.1:53124/callback"; NULL when the listener could
/// not open (or `loopback` is NULL). Owned by the loopback.
///
/// # Safety
/// `loopback` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_loopback_redirect_uri(loopback: *const mcp_loopback) -> *const c_char {
    guard(std::ptr::null, || {
        borrow(loopback)
            .and_then(|l| l.redirect_uri.as_deref())
            .map_or(std::ptr::null(), |s| s.as_ptr())
    })
}

/// Waits for the browser's request to the redirect URI, answers it with a short page, and
/// makes its full URL (with `code`, `state`, ...) available through `mcp_loopback_url`.
/// Returns MCP_STATUS_OK; MCP_STATUS_CANCELLED when `cancellation` (may be NULL) is cancelled;
/// MCP_STATUS_TIMEOUT after `timeout_ms` (0: no limit); MCP_STATUS_TRANSPORT_ERROR when the
/// listener did not open; MCP_STATUS_INVALID_ARGUMENT for a NULL `loopback`. A redirect that
/// arrived before the call is returned at once. Requests to other paths get 404 and are
/// ignored. `mcp_loopback_message` says what went wrong. One wait at a time per loopback.
///
/// # Safety
/// `loopback` is NULL or live and used by no other thread during the call; `cancellation` is
/// NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_loopback_wait(
    loopback: *mut mcp_loopback,
    cancellation: *const mcp_cancellation,
    timeout_ms: u64,
) -> mcp_status {
    let status = guard(
        || Status::InternalError,
        || {
            let Some(loopback) = borrow_mut(loopback) else {
                return Status::InvalidArgument;
            };
            let token = borrow(cancellation).map(|c| &c.token);
            let deadline = (timeout_ms > 0)
                .then(|| Instant::now().checked_add(Duration::from_millis(timeout_ms)))
                .flatten();
            let outcome = match &loopback.listener {
                Ok(listener) => listener.wait(token, deadline),
                Err(error) => Err(Error::new(error.status, error.message.clone())),
            };
            loopback.url = None;
            match outcome {
                Ok(url) => {
                    loopback.url = Some(to_cstring(url));
                    loopback.message = CString::default();
                    Status::Ok
                }
                Err(error) => {
                    loopback.message = to_cstring(error.message);
                    error.status
                }
            }
        },
    );
    status
}

/// The whole person's step for an authorize callback, after it opened the authorization URL:
/// waits as `mcp_loopback_wait` does, ended by the call that needs the authorization (its
/// cancel, timeout or close) as well as by `timeout_ms` (0: no limit), and answers `reply`:
/// the redirect URL on MCP_STATUS_OK, else an error with the reason. The callback then returns
/// whether the status is MCP_STATUS_OK.
///
/// # Safety
/// `loopback` is NULL or live and used by no other thread during the call; `reply` is NULL or
/// the pointer passed to the authorize callback, during that call.
#[no_mangle]
pub unsafe extern "C" fn mcp_loopback_wait_authorization(
    loopback: *mut mcp_loopback,
    reply: *mut mcp_auth_reply,
    timeout_ms: u64,
) -> mcp_status {
    let token = guard(|| None, || borrow(reply).map(|r| r.cancellation.clone()));
    let Some(token) = token else {
        return mcp_status::InvalidArgument;
    };
    let cancellation = mcp_cancellation::from_token(token);
    let status = mcp_loopback_wait(loopback, &cancellation, timeout_ms);
    match status {
        mcp_status::Ok => {
            if !mcp_auth_reply_set_redirect_url(reply, mcp_loopback_url(loopback)) {
                return mcp_status::InternalError;
            }
        }
        _ => mcp_auth_reply_set_error(reply, mcp_loopback_message(loopback)),
    }
    status
}

/// The URL the last successful `mcp_loopback_wait` received, else NULL. Owned by the
/// loopback, valid until the next wait or the free.
///
/// # Safety
/// `loopback` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_loopback_url(loopback: *const mcp_loopback) -> *const c_char {
    guard(std::ptr::null, || {
        borrow(loopback)
            .and_then(|l| l.url.as_deref())
            .map_or(std::ptr::null(), |s| s.as_ptr())
    })
}

/// What went wrong in the last wait (or the open), "" when nothing did. Owned by the
/// loopback.
///
/// # Safety
/// `loopback` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_loopback_message(loopback: *const mcp_loopback) -> *const c_char {
    guard(std::ptr::null, || match borrow(loopback) {
        Some(l) => l.message.as_ptr(),
        None => c"loopback is NULL".as_ptr(),
    })
}

/// Closes the listener and frees it. NULL is accepted.
///
/// # Safety
/// `loopback` is NULL or from `mcp_loopback_new`, not yet freed, and not in a wait.
#[no_mangle]
pub unsafe extern "C" fn mcp_loopback_free(loopback: *mut mcp_loopback) {
    free_handle(loopback)
}
