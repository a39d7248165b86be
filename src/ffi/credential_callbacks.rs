//! Credentials the host gives through callbacks, for the OAuth grants without a person:
//! `mcp_assertion_callback` (a compact JWT: the person's identity assertion for the
//! enterprise-managed grant, or the workload's token) and `mcp_sign_callback` (a signature
//! made with a key the host keeps, for `private_key_jwt`). Their setters are with the other
//! OAuth options (`client_options/oauth.rs`).

use super::callbacks::UserData;
use std::ffi::{c_char, c_void};

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
