//! OAuth and the header provider, for C: the person's step (`mcp_authorize_callback`,
//! answered through `mcp_auth_reply`), token storage (`mcp_token_load_callback` /
//! `mcp_token_save_callback`, answered through `mcp_token_slot`), and the per-request header
//! provider (`mcp_header_provider`, filling `mcp_header_list`). Their setters, with the client
//! identity and scopes, are with the other options (`client_options/oauth.rs`).

use super::boundary::{borrow, borrow_mut};
use super::callbacks::UserData;
use super::guard;
use super::status::mcp_status;
use super::strings::{optional_str, required_str, to_cstring};
use crate::auth::{TokenKey, TokenStore};
use crate::cancellation::CancellationToken;
use serde_json::Value;
use std::ffi::{c_char, c_void};

/// Which OAuth grant the library uses. The numbers are part of the C ABI.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum mcp_oauth_grant {
    /// Authorization code with PKCE, through the authorize callback (the default).
    AuthorizationCode = 0,
    /// `client_credentials`: a pre-registered client id and secret, no person involved.
    ClientCredentials = 1,
    /// The JWT-bearer grant (RFC 7523) for workload identity federation: the platform's token
    /// for this workload, from `mcp_client_options_set_oauth_workload_token_file`, is the
    /// grant; no person involved.
    JwtBearer = 2,
    /// Enterprise-managed authorization: the person's identity assertion (from the callback
    /// of `mcp_client_options_set_oauth_identity_provider`) is exchanged at the enterprise's
    /// identity provider for an ID-JAG (RFC 8693), which is then the JWT-bearer grant (RFC
    /// 7523) at the MCP server's authorization server. Needs a pre-registered client id
    /// (`mcp_client_options_set_oauth_client`); no person's step.
    EnterpriseManaged = 3,
}

/// The room an assertion callback gets: the longest assertion (a compact JWT) accepted.
const ASSERTION_CAPACITY: usize = 64 * 1024;

/// Gives a credential the library needs now, a compact JWT (the person's identity assertion,
/// or the workload's token): copy its text into `buffer` (at most `capacity` bytes: 64 KiB; no
/// NUL needed) and return its length, or return 0 when there is
/// none (the call that needed it ends with MCP_STATUS_UNAUTHORIZED). Called for every token
/// request (so the host may renew the credential), on the library thread running the OAuth
/// flow, with no lock held; it must not wait for a call of the same client to return.
pub type mcp_assertion_callback = Option<
    unsafe extern "C" fn(userdata: *mut c_void, buffer: *mut c_char, capacity: usize) -> usize,
>;

/// The room a sign callback gets: the longest signature accepted (RSA 8192-bit).
const SIGNATURE_CAPACITY: usize = crate::auth::SIGNATURE_LIMIT;

/// Signs with the host's private key (kept in an HSM or a keychain) for `private_key_jwt`:
/// sign the `input_length` bytes at `signing_input` (a JWS signing input) with the algorithm
/// named when the callback was set, write the JWS signature bytes to `signature` (at most
/// `capacity` bytes: 1024; for ES256 the raw 64-byte `r || s`,
/// not DER) and return their number, or return 0 when it cannot sign (the token request
/// fails with MCP_STATUS_UNAUTHORIZED). Called for every token request, on the library
/// thread running the OAuth flow, with no lock held; it must not wait for a call of the same
/// client to return.
pub type mcp_sign_callback = Option<
    unsafe extern "C" fn(
        userdata: *mut c_void,
        signing_input: *const u8,
        input_length: usize,
        signature: *mut u8,
        capacity: usize,
    ) -> usize,
>;

/// The Rust signer behind a sign callback.
pub(super) fn host_signer(
    callback: unsafe extern "C" fn(*mut c_void, *const u8, usize, *mut u8, usize) -> usize,
    userdata: UserData,
) -> crate::auth::HostSigner {
    std::sync::Arc::new(move |input: &[u8]| {
        let userdata = userdata;
        let mut signature = vec![0u8; SIGNATURE_CAPACITY];
        // SAFETY: the setter's contract; the buffers have the lengths passed.
        let length = unsafe {
            callback(
                userdata.0,
                input.as_ptr(),
                input.len(),
                signature.as_mut_ptr(),
                SIGNATURE_CAPACITY,
            )
        };
        match length {
            0 => Err("the sign callback gave no signature".to_owned()),
            n if n > SIGNATURE_CAPACITY => {
                Err("the sign callback gave more bytes than it had room for".to_owned())
            }
            n => {
                signature.truncate(n);
                Ok(signature)
            }
        }
    })
}

/// The Rust provider behind an assertion callback; `what` names it in errors.
pub(super) fn assertion_provider(
    callback: unsafe extern "C" fn(*mut c_void, *mut c_char, usize) -> usize,
    userdata: UserData,
    what: &'static str,
) -> crate::auth::AssertionProvider {
    std::sync::Arc::new(move || {
        let userdata = userdata;
        let mut buffer = vec![0u8; ASSERTION_CAPACITY];
        // SAFETY: the setter's contract; the buffer has `capacity` bytes.
        let length = unsafe {
            callback(
                userdata.0,
                buffer.as_mut_ptr().cast::<c_char>(),
                ASSERTION_CAPACITY,
            )
        };
        match length {
            0 => Err(format!("the {what} callback gave none")),
            n if n > ASSERTION_CAPACITY => Err(format!(
                "the {what} callback gave more than {} KiB",
                ASSERTION_CAPACITY / 1024
            )),
            n => {
                buffer.truncate(n);
                String::from_utf8(buffer)
                    .map_err(|_| format!("the {what} callback gave text that is not UTF-8"))
            }
        }
    })
}

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

/// Where the token load callback puts what it found.
pub struct mcp_token_slot {
    value: Option<Value>,
}

/// Loads what was saved for an MCP server (`server_url`) and authorization server (`issuer`):
/// give the saved JSON text with `mcp_token_slot_set` and return true, or return false when
/// nothing is saved. Called on the thread running the flow; the strings are valid during the
/// call.
pub type mcp_token_load_callback = Option<
    unsafe extern "C" fn(
        userdata: *mut c_void,
        server_url: *const c_char,
        issuer: *const c_char,
        slot: *mut mcp_token_slot,
    ) -> bool,
>;

/// Saves the JSON text the library keeps for `server_url` and `issuer` (tokens and the client
/// registration: treat it as a secret), replacing what was there; NULL `tokens_json` means
/// forget it (the tokens were refused). The strings are valid during the call.
pub type mcp_token_save_callback = Option<
    unsafe extern "C" fn(
        userdata: *mut c_void,
        server_url: *const c_char,
        issuer: *const c_char,
        tokens_json: *const c_char,
    ),
>;

/// Gives the saved JSON text (copied). Returns false for NULL or text that is not a JSON
/// object.
///
/// # Safety
/// `slot` is the pointer passed to the load callback, during that call; `tokens_json` is NULL
/// or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_token_slot_set(
    slot: *mut mcp_token_slot,
    tokens_json: *const c_char,
) -> bool {
    guard(
        || false,
        || {
            let Some(slot) = borrow_mut(slot) else {
                return false;
            };
            match optional_str(tokens_json, "tokens")
                .ok()
                .flatten()
                .and_then(|text| serde_json::from_str::<Value>(text).ok())
            {
                Some(value @ Value::Object(_)) => {
                    slot.value = Some(value);
                    true
                }
                _ => false,
            }
        },
    )
}

/// The headers the provider adds to one request.
pub struct mcp_header_list {
    pub(super) headers: Vec<(String, String)>,
}

/// Called before every HTTP request to the MCP server (`url`), on the thread about to send it:
/// add headers with `mcp_header_list_add` (e.g. "Authorization", "Bearer ...") and return true;
/// return false to fail the request with MCP_STATUS_UNAUTHORIZED. A 401 or 403 then ends the
/// call with MCP_STATUS_UNAUTHORIZED and the challenge in `mcp_result_error_data`; refresh the
/// token and call again. `url` is valid during the call.
pub type mcp_header_provider = Option<
    unsafe extern "C" fn(
        userdata: *mut c_void,
        url: *const c_char,
        headers: *mut mcp_header_list,
    ) -> bool,
>;

/// Adds a header to the request (copied). The name must be an HTTP token and the value free
/// of control characters; the request fails with MCP_STATUS_INVALID_ARGUMENT otherwise.
/// Returns MCP_STATUS_INVALID_ARGUMENT for NULL arguments or invalid UTF-8.
///
/// # Safety
/// `headers` is the pointer passed to the provider, during that call; the strings are NULL or
/// NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_header_list_add(
    headers: *mut mcp_header_list,
    name: *const c_char,
    value: *const c_char,
) -> mcp_status {
    guard(
        || mcp_status::InternalError,
        || {
            let (Some(headers), Ok(name), Ok(value)) = (
                borrow_mut(headers),
                required_str(name, "header name"),
                required_str(value, "header value"),
            ) else {
                return mcp_status::InvalidArgument;
            };
            headers.headers.push((name.to_owned(), value.to_owned()));
            mcp_status::Ok
        },
    )
}

/// The token store made of the host's two callbacks.
pub(super) struct CStore {
    pub(super) load: unsafe extern "C" fn(
        *mut c_void,
        *const c_char,
        *const c_char,
        *mut mcp_token_slot,
    ) -> bool,
    pub(super) save: unsafe extern "C" fn(*mut c_void, *const c_char, *const c_char, *const c_char),
    pub(super) userdata: UserData,
}

impl TokenStore for CStore {
    fn load(&self, key: &TokenKey) -> Option<Value> {
        let server = to_cstring(key.server_url.as_str());
        let issuer = to_cstring(key.issuer.as_str());
        let mut slot = mcp_token_slot { value: None };
        // SAFETY: the setter's contract.
        let found =
            unsafe { (self.load)(self.userdata.0, server.as_ptr(), issuer.as_ptr(), &mut slot) };
        found.then_some(slot.value).flatten()
    }

    fn save(&self, key: &TokenKey, value: Option<&Value>) {
        let server = to_cstring(key.server_url.as_str());
        let issuer = to_cstring(key.issuer.as_str());
        let text = value.map(|value| to_cstring(value.to_string()));
        let text_ptr = text.as_ref().map_or(std::ptr::null(), |t| t.as_ptr());
        // SAFETY: the setter's contract.
        unsafe { (self.save)(self.userdata.0, server.as_ptr(), issuer.as_ptr(), text_ptr) };
    }
}

/// A C string argument as text, invalid UTF-8 replaced; `None` for NULL.
///
/// # Safety
/// `ptr` is NULL or NUL-terminated.
unsafe fn lossy(ptr: *const c_char) -> Option<String> {
    (!ptr.is_null()).then(|| std::ffi::CStr::from_ptr(ptr).to_string_lossy().into_owned())
}
