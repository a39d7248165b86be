//! OAuth and the header provider, for C: the client identity and scopes, the person's step
//! (`mcp_authorize_callback`, answered through `mcp_auth_reply`), token storage
//! (`mcp_token_load_callback` / `mcp_token_save_callback`, answered through `mcp_token_slot`),
//! and the per-request header provider (`mcp_header_provider`, filling `mcp_header_list`).
//! Every setter here (but the header provider's) turns the library's OAuth flow on for a
//! client made by `mcp_client_new_http` with these options.

use super::boundary::{borrow, borrow_mut};
use super::callbacks::UserData;
use super::client_options::mcp_client_options;
use super::guard;
use super::setter::set;
use super::status::mcp_status;
use super::strings::{optional_str, required_str, to_cstring};
use crate::auth::{
    AuthorizationRequest, GrantType, HeaderProvider, OAuthConfig, TokenKey, TokenStore,
};
use crate::cancellation::CancellationToken;
use crate::error::Error;
use serde_json::Value;
use std::ffi::{c_char, c_void};
use std::sync::Arc;

/// Which OAuth grant the library uses. The numbers are part of the C ABI.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum mcp_oauth_grant {
    /// Authorization code with PKCE, through the authorize callback (the default).
    AuthorizationCode = 0,
    /// `client_credentials`: a pre-registered client id and secret, no person involved.
    ClientCredentials = 1,
}

/// Where the authorize callback puts its answer.
pub struct mcp_auth_reply {
    redirect_url: Option<String>,
    error: Option<String>,
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
    headers: Vec<(String, String)>,
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

/// The OAuth settings of the options, made on first use.
fn oauth(options: &mut mcp_client_options) -> &mut OAuthConfig {
    options
        .http
        .auth
        .oauth
        .get_or_insert_with(OAuthConfig::default)
}

/// A pre-registered OAuth client: its `client_id` and, for a confidential client, its
/// `client_secret` (NULL: a public client). NULL `client_id` clears both.
///
/// # Safety
/// `options` is NULL or live; the strings are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_oauth_client(
    options: *mut mcp_client_options,
    client_id: *const c_char,
    client_secret: *const c_char,
) -> mcp_status {
    set(options, |o| {
        let id = optional_str(client_id, "client id")?.map(str::to_owned);
        let secret = optional_str(client_secret, "client secret")?.map(str::to_owned);
        let oauth = oauth(o);
        oauth.client_secret = id.as_ref().and(secret);
        oauth.client_id = id;
        Ok(())
    })
}

/// Binds the pre-registered client to one authorization server: with another issuer (the
/// server moved to a new one) the client id and secret are not presented, and the flow
/// registers or uses a client metadata document instead. NULL: any issuer (the default).
///
/// # Safety
/// `options` is NULL or live; `issuer` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_oauth_client_issuer(
    options: *mut mcp_client_options,
    issuer: *const c_char,
) -> mcp_status {
    set(options, |o| {
        oauth(o).client_issuer = optional_str(issuer, "client issuer")?.map(str::to_owned);
        Ok(())
    })
}

/// The HTTPS URL of the host's Client ID Metadata Document, used verbatim as `client_id` by
/// authorization servers that support it (NULL: none).
///
/// # Safety
/// `options` is NULL or live; `url` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_oauth_client_metadata_url(
    options: *mut mcp_client_options,
    url: *const c_char,
) -> mcp_status {
    set(options, |o| {
        let url = optional_str(url, "client metadata URL")?;
        if let Some(url) = url {
            if !url.starts_with("https://") {
                return Err(Error::invalid("the client metadata URL must be https"));
            }
        }
        oauth(o).client_metadata_url = url.map(str::to_owned);
        Ok(())
    })
}

/// What Dynamic Client Registration (RFC 7591) registers: `client_name` (NULL: "mcpc") and
/// `application_type` ("native", the default when NULL, or "web").
///
/// # Safety
/// `options` is NULL or live; the strings are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_oauth_registration(
    options: *mut mcp_client_options,
    client_name: *const c_char,
    application_type: *const c_char,
) -> mcp_status {
    set(options, |o| {
        let name = optional_str(client_name, "client name")?.map(str::to_owned);
        let kind = optional_str(application_type, "application type")?.map(str::to_owned);
        let oauth = oauth(o);
        oauth.client_name = name;
        oauth.application_type = kind;
        Ok(())
    })
}

/// The redirect URI the authorization server sends the person back to, e.g.
/// "http://127.0.0.1:8765/callback" (required for the authorization code grant).
///
/// # Safety
/// `options` is NULL or live; `uri` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_oauth_redirect_uri(
    options: *mut mcp_client_options,
    uri: *const c_char,
) -> mcp_status {
    set(options, |o| {
        oauth(o).redirect_uri = optional_str(uri, "redirect URI")?.map(str::to_owned);
        Ok(())
    })
}

/// Scopes to ask for (space-separated) instead of those the server names (NULL: the server's).
///
/// # Safety
/// `options` is NULL or live; `scopes` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_oauth_scopes(
    options: *mut mcp_client_options,
    scopes: *const c_char,
) -> mcp_status {
    set(options, |o| {
        oauth(o).scopes = optional_str(scopes, "scopes")?.map(str::to_owned);
        Ok(())
    })
}

/// The grant: an `mcp_oauth_grant` value (default MCP_OAUTH_GRANT_AUTHORIZATION_CODE).
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_oauth_grant(
    options: *mut mcp_client_options,
    grant: std::ffi::c_int,
) -> mcp_status {
    set(options, |o| {
        oauth(o).grant_type = match grant {
            0 => GrantType::AuthorizationCode,
            1 => GrantType::ClientCredentials,
            _ => return Err(Error::invalid(format!("unknown OAuth grant {grant}"))),
        };
        Ok(())
    })
}

/// How many new authorizations one request may go through (a 401, or a 403
/// insufficient_scope, after a fresh token) before it fails with MCP_STATUS_UNAUTHORIZED
/// (default 3); must be positive.
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_oauth_max_authorizations(
    options: *mut mcp_client_options,
    max: u32,
) -> mcp_status {
    set(options, |o| {
        if max == 0 {
            return Err(Error::invalid("max authorizations must be positive"));
        }
        oauth(o).max_authorizations = max;
        Ok(())
    })
}

/// The person's step (see `mcp_authorize_callback`); NULL removes it.
///
/// # Safety
/// `options` is NULL or live; `callback` is safe to call from another thread with `userdata`
/// for as long as a client made from these options is alive.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_oauth_authorize_callback(
    options: *mut mcp_client_options,
    callback: mcp_authorize_callback,
    userdata: *mut c_void,
) -> mcp_status {
    set(options, |o| {
        let userdata = UserData(userdata);
        oauth(o).authorize = callback.map(|callback| -> crate::auth::AuthorizeHandler {
            Arc::new(move |request: &AuthorizationRequest| {
                let userdata = userdata;
                let url = to_cstring(request.authorization_url);
                let redirect = to_cstring(request.redirect_uri);
                let mut reply = mcp_auth_reply {
                    redirect_url: None,
                    error: None,
                    cancellation: request.cancellation.clone(),
                };
                // SAFETY: the setter's contract.
                let ok =
                    unsafe { callback(userdata.0, url.as_ptr(), redirect.as_ptr(), &mut reply) };
                match (ok, reply.redirect_url, reply.error) {
                    (true, Some(url), _) => Ok(url),
                    (_, _, Some(error)) => Err(error),
                    (true, None, None) => Err("the authorize callback gave no redirect URL".into()),
                    (false, _, None) => Err("authorization declined".into()),
                }
            })
        });
        Ok(())
    })
}

/// A token store of the host's (see `mcp_token_load_callback`, `mcp_token_save_callback`);
/// both NULL: back to the in-memory default. Without one, tokens live in memory, shared by the
/// clients made from these options.
///
/// # Safety
/// `options` is NULL or live; the callbacks are safe to call from any thread with `userdata`
/// for as long as a client made from these options is alive.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_oauth_token_store(
    options: *mut mcp_client_options,
    load: mcp_token_load_callback,
    save: mcp_token_save_callback,
    userdata: *mut c_void,
) -> mcp_status {
    set(options, |o| {
        oauth(o).token_store = match (load, save) {
            (None, None) => Arc::new(crate::auth::MemoryTokenStore::default()),
            (Some(load), Some(save)) => Arc::new(CStore {
                load,
                save,
                userdata: UserData(userdata),
            }),
            _ => {
                return Err(Error::invalid(
                    "a token store needs both the load and the save callback",
                ))
            }
        };
        Ok(())
    })
}

/// The host's per-request header provider (see `mcp_header_provider`); NULL removes it. It
/// works with or without the library's OAuth flow (its headers come first).
///
/// # Safety
/// `options` is NULL or live; `callback` is safe to call from any thread with `userdata` for
/// as long as a client made from these options is alive.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_header_provider(
    options: *mut mcp_client_options,
    callback: mcp_header_provider,
    userdata: *mut c_void,
) -> mcp_status {
    set(options, |o| {
        let userdata = UserData(userdata);
        o.http.auth.header_provider = callback.map(|callback| -> HeaderProvider {
            Arc::new(move |url: &str| {
                let userdata = userdata;
                let url = to_cstring(url);
                let mut list = mcp_header_list {
                    headers: Vec::new(),
                };
                // SAFETY: the setter's contract.
                match unsafe { callback(userdata.0, url.as_ptr(), &mut list) } {
                    true => Ok(list.headers),
                    false => Err("the header provider returned false".into()),
                }
            })
        });
        Ok(())
    })
}

/// The token store made of the host's two callbacks.
struct CStore {
    load: unsafe extern "C" fn(
        *mut c_void,
        *const c_char,
        *const c_char,
        *mut mcp_token_slot,
    ) -> bool,
    save: unsafe extern "C" fn(*mut c_void, *const c_char, *const c_char, *const c_char),
    userdata: UserData,
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
