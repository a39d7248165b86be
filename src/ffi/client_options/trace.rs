//! The client option that turns the wire trace on; the trace's types are in `ffi::trace`.

use super::mcp_client_options;
use crate::ffi::callbacks::UserData;
use crate::ffi::setter::set;
use crate::ffi::status::mcp_status;
use crate::ffi::strings::to_cstring;
use crate::ffi::trace::mcp_trace_callback;
use crate::handlers::{TraceFrame, TraceHandler};
use std::ffi::c_void;
use std::sync::Arc;

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
                let direction = frame.direction;
                let transport = to_cstring(frame.transport);
                let json = to_cstring(frame.json);
                callback(userdata.0, direction, transport.as_ptr(), json.as_ptr());
            })
        });
        Ok(())
    })
}
