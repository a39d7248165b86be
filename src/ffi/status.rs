//! `mcp_status` (the Rust `Status`), its names, and the library version, for C.

use crate::error::Status;
use std::ffi::{c_char, c_int, CString};
use std::sync::OnceLock;

/// The status's C name (one enum: cbindgen.toml renames `Status`).
pub use crate::error::Status as mcp_status;

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
        for status in Status::ALL {
            let name = unsafe { CStr::from_ptr(mcp_status_name(status as c_int)) };
            assert_eq!(name.to_str().unwrap(), status.name());
        }
        let unknown = unsafe { CStr::from_ptr(mcp_status_name(-1)) };
        assert_eq!(unknown.to_str().unwrap(), "UNKNOWN");
    }
}
