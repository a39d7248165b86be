//! The wire trace from C: the types of its callback, which gets every JSON-RPC frame in and
//! out; the setter is with the other options (`client_options/trace.rs`).

use std::ffi::{c_char, c_void};

/// The trace direction's C name (one enum: cbindgen.toml renames `TraceDirection`).
pub use crate::handlers::TraceDirection as mcp_trace_direction;

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
