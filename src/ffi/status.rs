//! `mcp_status`, its names, and the library version, for C.

use crate::error::Status;
use std::ffi::{c_char, c_int, CString};
use std::sync::OnceLock;

/// The status of a finished call. The numbers are part of the C ABI: they are stable and a
/// number is never reused for another meaning.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum mcp_status {
    /// The call succeeded.
    Ok = 0,
    /// The server answered with a JSON-RPC error (code, message and data are on the result).
    ServerError = 1,
    /// The call was cancelled through its cancellation token.
    Cancelled = 2,
    /// The call's timeout passed; the server was told, as for a cancel.
    Timeout = 3,
    /// The connection failed: the process exited, a pipe broke, a write failed.
    TransportError = 4,
    /// The server sent something that breaks the protocol (bad frame, unsupported version...).
    ProtocolError = 5,
    /// The client was closed while the call was pending, or was already closed.
    Closed = 6,
    /// An argument was invalid: NULL, not UTF-8, malformed JSON, bad option.
    InvalidArgument = 7,
    /// An all-pages call passed the max-pages limit.
    PaginationLimit = 8,
    /// A request was made before `connect` succeeded.
    NotConnected = 9,
    /// A bug inside the library (a caught panic). Please report it.
    InternalError = 10,
    /// The server needs input (SEP-2322 `input_required`) that no handler gave. The result JSON
    /// is the server's interim result (`inputRequests`, `requestState`); answer it and call
    /// again with the input responses and request state in the request options.
    InputRequired = 11,
    /// The server no longer knows the HTTP session (a 404 to a request that carried its
    /// `Mcp-Session-Id`). The session is forgotten: connect a new client to start another.
    SessionExpired = 12,
    /// The request does not exist in the connection's protocol era (for example
    /// `logging/setLevel` on a 2026-07-28 connection). Nothing was sent. Also: https (or a TLS
    /// setting) in a library built without its `tls` feature.
    NotSupported = 13,
}

impl From<Status> for mcp_status {
    fn from(status: Status) -> Self {
        match status {
            Status::Ok => mcp_status::Ok,
            Status::ServerError => mcp_status::ServerError,
            Status::Cancelled => mcp_status::Cancelled,
            Status::Timeout => mcp_status::Timeout,
            Status::TransportError => mcp_status::TransportError,
            Status::ProtocolError => mcp_status::ProtocolError,
            Status::Closed => mcp_status::Closed,
            Status::InvalidArgument => mcp_status::InvalidArgument,
            Status::PaginationLimit => mcp_status::PaginationLimit,
            Status::NotConnected => mcp_status::NotConnected,
            Status::InternalError => mcp_status::InternalError,
            Status::InputRequired => mcp_status::InputRequired,
            Status::SessionExpired => mcp_status::SessionExpired,
            Status::NotSupported => mcp_status::NotSupported,
        }
    }
}

/// The stable name of a status, e.g. "CANCELLED"; "UNKNOWN" for a number that is not one.
/// Takes an int so that any value from C is safe to pass.
#[no_mangle]
pub extern "C" fn mcp_status_name(status: c_int) -> *const c_char {
    static NAMES: OnceLock<Vec<CString>> = OnceLock::new();
    let names = NAMES.get_or_init(|| {
        Status::ALL
            .iter()
            .map(|status| CString::new(status.name()).expect("names have no NUL"))
            .collect()
    });
    Status::from_code(status).map_or(c"UNKNOWN".as_ptr(), |status| {
        names[status as usize].as_ptr()
    })
}

/// The library version at run time, e.g. "0.1.0" (compare with MCPC_VERSION at build time).
#[no_mangle]
pub extern "C" fn mcp_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Status;
    use std::ffi::CStr;

    #[test]
    fn status_names_match_the_rust_names() {
        for status in [
            Status::Ok,
            Status::ServerError,
            Status::Cancelled,
            Status::Timeout,
            Status::TransportError,
            Status::ProtocolError,
            Status::Closed,
            Status::InvalidArgument,
            Status::PaginationLimit,
            Status::NotConnected,
            Status::InternalError,
            Status::InputRequired,
            Status::SessionExpired,
            Status::NotSupported,
        ] {
            let name = unsafe { CStr::from_ptr(mcp_status_name(status as c_int)) };
            assert_eq!(name.to_str().unwrap(), status.name());
        }
        let unknown = unsafe { CStr::from_ptr(mcp_status_name(-1)) };
        assert_eq!(unknown.to_str().unwrap(), "UNKNOWN");
    }
}
