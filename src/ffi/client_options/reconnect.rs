//! The client options for self-healing connections: the reconnect policy, and the callback told
//! of each transition of the connection.

use super::mcp_client_options;
use crate::client::{ConnectionState, ReconnectPolicy, StateHandler};
use crate::error::Error;
use crate::ffi::callbacks::UserData;
use crate::ffi::setter::set;
use crate::ffi::status::mcp_status;
use std::ffi::c_void;
use std::sync::Arc;
use std::time::Duration;

/// The connection went into `state` (see `mcp_client_options_set_state_callback`).
pub type mcp_state_callback =
    Option<unsafe extern "C" fn(userdata: *mut c_void, state: ConnectionState)>;

/// Self-healing connections (default off: the host calls `mcp_client_connect` again). A request
/// that finds the connection failed (the stdio server exited, the HTTP server ended the
/// session) connects again first, with the same handshake, and the listens open are
/// established again there. A request already sent when the failure came fails (with
/// MCP_STATUS_TRANSPORT_ERROR, or MCP_STATUS_SESSION_EXPIRED for the HTTP request the server
/// refused) and is never sent again by the library.
///
/// Each such request makes up to `max_attempts` connects (0 counts as 1). After a failed one it
/// waits `first_delay_ms`, doubled after each further failure up to `max_delay_ms`, each wait
/// moved by up to `jitter` (0 to 1) of itself either way. The request's cancel, its timeout and
/// close end a wait at once. When every attempt failed, the request returns the last connect's
/// status and message, and the next request starts again. Suggested: 100, 30000, 0.2, 5.
/// `first_delay_ms` must be positive and at most `max_delay_ms`; `jitter` within 0 and 1.
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_reconnect_policy(
    options: *mut mcp_client_options,
    first_delay_ms: u64,
    max_delay_ms: u64,
    jitter: f64,
    max_attempts: u32,
) -> mcp_status {
    set(options, |o| {
        if first_delay_ms == 0 || first_delay_ms > max_delay_ms {
            return Err(Error::invalid(
                "reconnect policy: the first delay must be positive and at most the maximum delay",
            ));
        }
        if !(0.0..=1.0).contains(&jitter) {
            return Err(Error::invalid(
                "reconnect policy: the jitter must be within 0 and 1",
            ));
        }
        o.client.reconnect = Some(ReconnectPolicy {
            first_delay: Duration::from_millis(first_delay_ms),
            max_delay: Duration::from_millis(max_delay_ms),
            jitter,
            max_attempts,
        });
        Ok(())
    })
}

/// Hears each transition of the connection, in order: CONNECTING, CONNECTED, FAILED (the
/// connection failed, or a connect that replaces it did), RECONNECTING (a connect that
/// replaces a failed connection), NOT_CONNECTED (a first connect failed) and, last, CLOSED. It runs on a thread
/// of the client's own that runs no other callback, never while the library holds a lock; it
/// may call into the client. NULL removes it.
///
/// # Safety
/// `options` is NULL or live; `callback` is safe to call from another thread with `userdata`
/// for as long as a client made from these options is alive.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_state_callback(
    options: *mut mcp_client_options,
    callback: mcp_state_callback,
    userdata: *mut c_void,
) -> mcp_status {
    let userdata = UserData(userdata);
    set(options, |o| {
        o.client.on_state = callback.map(|callback| -> StateHandler {
            Arc::new(move |state: ConnectionState| {
                let userdata = userdata;
                callback(userdata.0, state);
            })
        });
        Ok(())
    })
}
