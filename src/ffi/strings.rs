//! C strings in (checked: NULL, UTF-8, JSON) and out (owned `CString`s).

use crate::client::Arguments;
use crate::error::{Error, Result};
use crate::protocol::object_text::ObjectText;
use serde_json::Value;
use std::ffi::{c_char, CStr, CString};

/// Reads a required C string argument.
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated string that stays valid during the call.
pub(super) unsafe fn required_str<'a>(ptr: *const c_char, what: &str) -> Result<&'a str> {
    optional_str(ptr, what)?.ok_or_else(|| Error::invalid(format!("{what} must not be NULL")))
}

/// Reads an optional C string argument (NULL means absent).
///
/// # Safety
/// As for [`required_str`].
pub(super) unsafe fn optional_str<'a>(ptr: *const c_char, what: &str) -> Result<Option<&'a str>> {
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
pub(super) unsafe fn optional_json(
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

/// Reads optional arguments of a tool or a prompt: checked to be UTF-8, JSON and an object,
/// then kept as the host's text, which goes into the request as it is (no tree, see
/// `Arguments`).
///
/// # Safety
/// As for [`required_str`].
pub(super) unsafe fn optional_arguments(
    ptr: *const c_char,
    what: &str,
) -> Result<Option<Arguments>> {
    if ptr.is_null() {
        return Ok(None);
    }
    // UTF-8 and JSON checked in one pass over the bytes.
    let text = ObjectText::from_bytes(CStr::from_ptr(ptr).to_bytes(), what)?;
    Ok(Some(Arguments::Json(text)))
}

/// A C string from Rust text; an interior NUL (possible in a server's message) becomes U+FFFD.
pub(super) fn to_cstring(text: impl Into<String>) -> CString {
    let text = text.into();
    CString::new(text).unwrap_or_else(|e| {
        let cleaned = String::from_utf8_lossy(&e.into_vec()).replace('\0', "\u{FFFD}");
        CString::new(cleaned).expect("NULs were replaced")
    })
}
