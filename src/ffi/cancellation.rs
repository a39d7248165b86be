//! `mcp_cancellation`: the token, for C.

use super::boundary::borrow;
use super::strings::{optional_str, to_cstring};
use super::{free_handle, guard};
use crate::cancellation::CancellationToken;
use std::ffi::{c_char, CString};
use std::sync::OnceLock;

/// A cancellation token. One token may serve many calls on many threads at once. A call holds
/// its own reference, so freeing the token while a call uses it is safe.
pub struct mcp_cancellation {
    pub(crate) token: CancellationToken,
    /// The reason as a C string, made once on first request.
    reason: OnceLock<Option<CString>>,
}

impl mcp_cancellation {
    /// A handle on a token the library already has (the one of a call).
    pub(crate) fn from_token(token: CancellationToken) -> Self {
        mcp_cancellation {
            token,
            reason: OnceLock::new(),
        }
    }
}

/// Creates a token. Free it with `mcp_cancellation_free`.
#[no_mangle]
pub extern "C" fn mcp_cancellation_new() -> *mut mcp_cancellation {
    guard(std::ptr::null_mut, || {
        Box::into_raw(Box::new(mcp_cancellation {
            token: CancellationToken::new(),
            reason: OnceLock::new(),
        }))
    })
}

/// Cancels every call that uses the token, now and later. Returns true only for the first
/// cancel. Safe from any thread at any time; never blocks on I/O: each blocked call wakes at
/// once with MCP_STATUS_CANCELLED and the server is told afterwards, once the request is on the
/// wire. `reason` may be NULL (the notification then has no reason); invalid UTF-8 in it is
/// replaced. NULL `token` returns false.
///
/// # Safety
/// `token` is NULL or a live token; `reason` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn mcp_cancellation_cancel(
    token: *mut mcp_cancellation,
    reason: *const c_char,
) -> bool {
    guard(
        || false,
        || {
            let Some(token) = borrow(token) else {
                return false;
            };
            let reason = match optional_str(reason, "reason") {
                Ok(reason) => reason.map(str::to_owned),
                Err(_) => Some(
                    std::ffi::CStr::from_ptr(reason)
                        .to_string_lossy()
                        .into_owned(),
                ),
            };
            token.token.cancel(reason.as_deref())
        },
    )
}

/// Whether the token has been cancelled. NULL returns false.
///
/// # Safety
/// `token` is NULL or a live token.
#[no_mangle]
pub unsafe extern "C" fn mcp_cancellation_is_cancelled(token: *const mcp_cancellation) -> bool {
    guard(
        || false,
        || borrow(token).is_some_and(|t| t.token.is_cancelled()),
    )
}

/// The reason given to the first cancel, or NULL (not cancelled, or no reason). The string is
/// owned by the token and valid until it is freed.
///
/// # Safety
/// `token` is NULL or a live token.
#[no_mangle]
pub unsafe extern "C" fn mcp_cancellation_reason(token: *const mcp_cancellation) -> *const c_char {
    guard(std::ptr::null, || {
        let Some(token) = borrow(token) else {
            return std::ptr::null();
        };
        if !token.token.is_cancelled() {
            return std::ptr::null();
        }
        let reason = token
            .reason
            .get_or_init(|| token.token.reason().map(to_cstring));
        reason.as_ref().map_or(std::ptr::null(), |r| r.as_ptr())
    })
}

/// Frees the token. Calls still using it are unaffected. NULL is accepted.
///
/// # Safety
/// `token` is NULL or a token from `mcp_cancellation_new` not yet freed.
#[no_mangle]
pub unsafe extern "C" fn mcp_cancellation_free(token: *mut mcp_cancellation) {
    free_handle(token)
}
