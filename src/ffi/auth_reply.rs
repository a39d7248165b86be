//! The person's step of the OAuth flow, for C: `mcp_authorize_callback`, answered through
//! `mcp_auth_reply`, and the grant the flow uses (`mcp_oauth_grant`). Their setters, with the
//! client identity and scopes, are with the other options (`client_options/oauth.rs`).

use super::boundary::{borrow, borrow_mut};
use super::guard;
use super::strings::optional_str;
use crate::cancellation::CancellationToken;
use std::ffi::{c_char, c_void};

/// The OAuth grant's C name (one enum: cbindgen.toml renames `GrantType`).
pub use crate::auth::GrantType as mcp_oauth_grant;

/// Where the authorize callback puts its answer.
pub struct mcp_auth_reply {
    pub(super) redirect_url: Option<String>,
    pub(super) error: Option<String>,
    pub(super) cancellation: CancellationToken,
}

/// The person's step of the OAuth flow: open `authorization_url` (in a browser), wait for the
/// authorization server to send the person to `redirect_uri`, and give the full URL it was
/// sent to with `mcp_auth_reply_set_redirect_url` (returning true), or give up with
/// `mcp_auth_reply_set_error` (returning false). Called on a library thread (the one running
/// the HTTP exchange that met the 401) and may block as long as the person needs; other
/// requests that need a token wait for it. When the call that needed it is cancelled, times
/// out or its client closes, `mcp_auth_reply_is_cancelled` turns true: return then (the answer
/// is ignored). It must not wait for a call of the same client to return. The strings are
/// valid during the call.
pub type mcp_authorize_callback = Option<
    unsafe extern "C" fn(
        userdata: *mut c_void,
        authorization_url: *const c_char,
        redirect_uri: *const c_char,
        reply: *mut mcp_auth_reply,
    ) -> bool,
>;

/// Whether the call that needs the authorization is over (cancelled, timed out, closed): the
/// callback should return.
///
/// # Safety
/// `reply` is the pointer passed to the callback, during that call.
#[no_mangle]
pub unsafe extern "C" fn mcp_auth_reply_is_cancelled(reply: *const mcp_auth_reply) -> bool {
    guard(
        || false,
        || borrow(reply).is_some_and(|r| r.cancellation.is_cancelled()),
    )
}

/// Gives the URL the authorization server redirected the person to (copied), with its query
/// (`code`, `state`, maybe `iss`). Returns false for NULL or invalid UTF-8.
///
/// # Safety
/// `reply` is the pointer passed to the callback, during that call; `url` is NULL or
/// NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_auth_reply_set_redirect_url(
    reply: *mut mcp_auth_reply,
    url: *const c_char,
) -> bool {
    guard(
        || false,
        || match (borrow_mut(reply), optional_str(url, "redirect URL")) {
            (Some(reply), Ok(Some(url))) => {
                reply.redirect_url = Some(url.to_owned());
                true
            }
            _ => false,
        },
    )
}

/// Gives up the authorization with a reason (copied; NULL: "authorization declined"). The call
/// that needed it ends with MCP_STATUS_UNAUTHORIZED and the reason in its message.
///
/// # Safety
/// `reply` is the pointer passed to the callback, during that call; `message` is NULL or
/// NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_auth_reply_set_error(
    reply: *mut mcp_auth_reply,
    message: *const c_char,
) {
    guard(
        || (),
        || {
            if let Some(reply) = borrow_mut(reply) {
                reply.error =
                    Some(lossy(message).unwrap_or_else(|| "authorization declined".into()));
            }
        },
    )
}

/// A C string argument as text, invalid UTF-8 replaced; `None` for NULL.
///
/// # Safety
/// `ptr` is NULL or NUL-terminated.
unsafe fn lossy(ptr: *const c_char) -> Option<String> {
    (!ptr.is_null()).then(|| std::ffi::CStr::from_ptr(ptr).to_string_lossy().into_owned())
}
