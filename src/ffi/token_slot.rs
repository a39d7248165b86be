//! OAuth token storage, for C: `mcp_token_load_callback` (answered through `mcp_token_slot`)
//! and `mcp_token_save_callback`, made into the library's token store (`CStore`). Their setters
//! are with the other options (`client_options/oauth.rs`).

use super::boundary::borrow_mut;
use super::callbacks::UserData;
use super::guard;
use super::strings::{optional_str, to_cstring};
use crate::auth::{TokenKey, TokenStore};
use serde_json::Value;
use std::ffi::{c_char, c_void};

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
