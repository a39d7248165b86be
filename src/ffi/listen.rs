//! `mcp_listen`: what a listen asks to hear, and `mcp_client_listen`, which listens (see the
//! Rust `Client::listen`). Setters follow `setter::set`: a rejected value is also reported by
//! the listen that uses the object.

use super::client::{mcp_client, with_request};
use super::request_options::mcp_request_options;
use super::result::mcp_result;
use super::setter::{set, HasError};
use super::status::mcp_status;
use super::strings::{optional_str, required_str};
use super::{free_handle, guard};
use crate::client::Listen;
use crate::error::Error;
use std::ffi::c_char;

/// What a listen asks to hear: list changes, resource updates for given URIs, log messages
/// from a level up. Nothing by default.
pub struct mcp_listen {
    pub(crate) listen: Listen,
    pub(crate) error: Option<Error>,
}

impl HasError for mcp_listen {
    fn error(&mut self) -> &mut Option<Error> {
        &mut self.error
    }
}

/// A listen that asks for nothing yet. Free with `mcp_listen_free`. One object may serve many
/// listens at once; a listen copies what it needs when it starts.
#[no_mangle]
pub extern "C" fn mcp_listen_new() -> *mut mcp_listen {
    guard(std::ptr::null_mut, || {
        Box::into_raw(Box::new(mcp_listen {
            listen: Listen::default(),
            error: None,
        }))
    })
}

/// Frees the object. NULL is accepted. Listens already started are unaffected.
///
/// # Safety
/// `listen` is NULL or not yet freed, and no call is reading it.
#[no_mangle]
pub unsafe extern "C" fn mcp_listen_free(listen: *mut mcp_listen) {
    free_handle(listen)
}

/// Hear `notifications/tools/list_changed` (the list-changed callback, kind "tools").
///
/// # Safety
/// `listen` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_listen_set_tools_list_changed(
    listen: *mut mcp_listen,
    on: bool,
) -> mcp_status {
    set(listen, |l| {
        l.listen.tools_list_changed = on;
        Ok(())
    })
}

/// Hear `notifications/prompts/list_changed`.
///
/// # Safety
/// `listen` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_listen_set_prompts_list_changed(
    listen: *mut mcp_listen,
    on: bool,
) -> mcp_status {
    set(listen, |l| {
        l.listen.prompts_list_changed = on;
        Ok(())
    })
}

/// Hear `notifications/resources/list_changed`.
///
/// # Safety
/// `listen` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_listen_set_resources_list_changed(
    listen: *mut mcp_listen,
    on: bool,
) -> mcp_status {
    set(listen, |l| {
        l.listen.resources_list_changed = on;
        Ok(())
    })
}

/// Hear `notifications/resources/updated` for `uri` (the resource-updated callback). Call once
/// per URI.
///
/// # Safety
/// `listen` is NULL or live; `uri` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_listen_add_resource(
    listen: *mut mcp_listen,
    uri: *const c_char,
) -> mcp_status {
    set(listen, |l| {
        let uri = required_str(uri, "resource uri")?;
        if uri.is_empty() {
            return Err(Error::invalid("a listen resource URI must not be empty"));
        }
        l.listen.resource_uris.push(uri.to_owned());
        Ok(())
    })
}

/// Hear `notifications/message` from `level` up (the message callback): "debug", "info",
/// "notice", "warning", "error", "critical", "alert" or "emergency". NULL: no log messages.
///
/// # Safety
/// `listen` is NULL or live; `level` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_listen_set_log_level(
    listen: *mut mcp_listen,
    level: *const c_char,
) -> mcp_status {
    set(listen, |l| {
        let level = optional_str(level, "log level")?.map(str::to_owned);
        let checked = Listen {
            log_level: level.clone(),
            ..Listen::default()
        };
        checked.check()?;
        l.listen.log_level = level;
        Ok(())
    })
}

/// When the connection fails: true ends the listen with that failure; false (the default)
/// waits for `mcp_client_connect` to make a new connection and listens again there.
///
/// # Safety
/// `listen` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_listen_set_end_on_failure(
    listen: *mut mcp_listen,
    on: bool,
) -> mcp_status {
    set(listen, |l| {
        l.listen.end_on_failure = on;
        Ok(())
    })
}

/// Listens, blocking the calling thread until the listen ends; the notices go to the client's
/// callbacks, first `notifications/subscriptions/acknowledged` (the notification callback)
/// each time the listen is established. Modern era: `subscriptions/listen`; handshake era:
/// `resources/subscribe` and `logging/setLevel`, and the library reports what the server's
/// capabilities honour as the same acknowledgement. It ends with MCP_STATUS_CANCELLED when the
/// options' token is cancelled (the usual way), MCP_STATUS_TIMEOUT after the options' own
/// timeout (the client's default timeout does not apply), MCP_STATUS_CLOSED on close, or
/// MCP_STATUS_OK with the server's final result when the server ended it. When the connection
/// fails, it waits for a reconnect unless `mcp_listen_set_end_on_failure`. An event loop that
/// must not give a thread to each listen starts one instead (modern era):
/// `mcp_request_other("subscriptions/listen", ...)` and `mcp_client_start`; its notices go to
/// the same callbacks, the token or timeout ends it, and a new connection does not re-establish
/// it (the host starts it again).
///
/// # Safety
/// `client` is NULL or live; `listen` is NULL or live; `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_listen(
    client: *mut mcp_client,
    listen: *const mcp_listen,
    options: *const mcp_request_options,
) -> *mut mcp_result {
    with_request(client, options, |c, o| {
        let listen = super::boundary::borrow(listen)
            .ok_or_else(|| Error::invalid("listen must not be NULL"))?;
        if let Some(error) = &listen.error {
            return Err(error.clone());
        }
        c.listen(&listen.listen, o)
    })
}
