//! The wire trace from C: a callback for every JSON-RPC frame in and out.

use super::callbacks::UserData;
use super::client_options::mcp_client_options;
use super::setter::set;
use super::status::mcp_status;
use super::strings::to_cstring;
use crate::handlers::{TraceDirection, TraceFrame, TraceHandler};
use std::ffi::{c_char, c_void};
use std::sync::Arc;

/// Which way a traced frame went. The numbers are part of the C ABI.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum mcp_trace_direction {
    /// From the server.
    In = 0,
    /// To the server.
    Out = 1,
}

/// One frame of the wire trace: its direction, the transport ("stdio", "http" or "custom")
/// and its JSON text (what arrived is re-encoded after parsing). Strings are valid during the
/// call only.
pub type mcp_trace_callback = Option<
    unsafe extern "C" fn(
        userdata: *mut c_void,
        direction: mcp_trace_direction,
        transport: *const c_char,
        json: *const c_char,
    ),
>;

/// Turns the wire trace on: `callback` gets every JSON-RPC frame in and out, in order, on a
/// library thread of the trace's own ("mcpc-trace"), never while the library holds a lock (it
/// may call the client). HTTP headers never appear in it. Off by default, and free when off;
/// NULL turns it off. If the callback falls behind by 4096 frames, later ones are dropped and
/// the log callback says how many.
///
/// # Safety
/// `options` is NULL or live; `callback` is safe to call from another thread with `userdata`
/// for as long as a client made from these options is alive.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_trace_callback(
    options: *mut mcp_client_options,
    callback: mcp_trace_callback,
    userdata: *mut c_void,
) -> mcp_status {
    let userdata = UserData(userdata);
    set(options, |o| {
        o.client.callbacks.on_trace = callback.map(|callback| -> TraceHandler {
            Arc::new(move |frame: &TraceFrame| {
                let userdata = userdata;
                let direction = match frame.direction {
                    TraceDirection::In => mcp_trace_direction::In,
                    TraceDirection::Out => mcp_trace_direction::Out,
                };
                let transport = to_cstring(frame.transport);
                let json = to_cstring(frame.json);
                callback(userdata.0, direction, transport.as_ptr(), json.as_ptr());
            })
        });
        Ok(())
    })
}
