//! The C ABI, and nothing else: handle casts, the panic boundary, C strings, status codes.
//!
//! Conventions (see include/mcpc.h): every name is `mcp_<object>_<verb>`; handles are opaque;
//! every `_new` has a `_free` that accepts NULL; every request returns an `mcp_result *` (never
//! NULL) that the caller frees; strings in are NUL-terminated UTF-8 and are checked; strings out
//! are owned by the object that returned them. No panic unwinds across this boundary.

#![allow(non_camel_case_types)]

mod callbacks;
mod cancellation;
mod client;
mod options;
mod result;
mod transport;

pub use callbacks::*;
pub use cancellation::*;
pub use client::*;
pub use options::*;
pub use result::*;
pub use transport::*;

use crate::error::{Error, Result};
use serde_json::Value;
use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `body`, turning a panic into `fallback` so no unwinding crosses `extern "C"`.
fn guard<T>(fallback: impl FnOnce() -> T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|_| fallback())
}

/// Frees a handle made by `Box::into_raw`; NULL is accepted. Every `_free` export uses it.
///
/// # Safety
/// `handle` is NULL or came from `Box::into_raw` and was not freed yet.
unsafe fn free_handle<T>(handle: *mut T) {
    guard(
        || (),
        || {
            if !handle.is_null() {
                drop(Box::from_raw(handle));
            }
        },
    )
}

/// Reads a required C string argument.
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated string that stays valid during the call.
unsafe fn required_str<'a>(ptr: *const c_char, what: &str) -> Result<&'a str> {
    optional_str(ptr, what)?.ok_or_else(|| Error::invalid(format!("{what} must not be NULL")))
}

/// Reads an optional C string argument (NULL means absent).
///
/// # Safety
/// As for [`required_str`].
unsafe fn optional_str<'a>(ptr: *const c_char, what: &str) -> Result<Option<&'a str>> {
    if ptr.is_null() {
        return Ok(None);
    }
    CStr::from_ptr(ptr)
        .to_str()
        .map(Some)
        .map_err(|_| Error::invalid(format!("{what} is not valid UTF-8")))
}

/// Reads an optional JSON argument; it must be an object when `object_only`.
///
/// # Safety
/// As for [`required_str`].
unsafe fn optional_json(
    ptr: *const c_char,
    what: &str,
    object_only: bool,
) -> Result<Option<Value>> {
    let Some(text) = optional_str(ptr, what)? else {
        return Ok(None);
    };
    let value: Value = serde_json::from_str(text)
        .map_err(|e| Error::invalid(format!("{what} is not valid JSON: {e}")))?;
    if object_only && !value.is_object() {
        return Err(Error::invalid(format!("{what} must be a JSON object")));
    }
    Ok(Some(value))
}

/// A C string from Rust text; an interior NUL (possible in a server's message) becomes U+FFFD.
fn to_cstring(text: impl Into<String>) -> CString {
    let text = text.into();
    CString::new(text).unwrap_or_else(|e| {
        let cleaned = String::from_utf8_lossy(&e.into_vec()).replace('\0', "\u{FFFD}");
        CString::new(cleaned).expect("NULs were replaced")
    })
}
