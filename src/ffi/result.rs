//! `mcp_result`: what every request returns.

use super::boundary::borrow;
use super::status::mcp_status;
use super::strings::to_cstring;
use super::{free_handle, guard};
use crate::error::{Error, Result, Status};
use crate::protocol::json_text;
use crate::protocol::reply::Reply;
use serde_json::Value;
use std::ffi::{c_char, CString};

/// The outcome of one call: a status and, on success, the result as JSON text. Always
/// non-NULL from a request function; free it with `mcp_result_free`.
pub struct mcp_result {
    status: Status,
    json: Option<CString>,
    /// None for OK ("" to C).
    message: Option<CString>,
    error_code: i64,
    error_data: Option<CString>,
    request_id: i64,
    cancel_reason: Option<CString>,
}

impl mcp_result {
    /// The result's text: the server's own when the library kept it (see `protocol::reply`).
    fn ok(reply: Reply) -> Self {
        mcp_result {
            status: Status::Ok,
            json: Some(json_text_cstring(reply.into_text())),
            message: None,
            error_code: 0,
            error_data: None,
            request_id: 0,
            cancel_reason: None,
        }
    }

    fn error(error: Error) -> Self {
        // An interim result travels as the result JSON, so the host can answer it.
        let json = match (error.status, &error.data) {
            (Status::InputRequired, Some(interim)) => Some(json_cstring(interim)),
            _ => None,
        };
        mcp_result {
            status: error.status,
            json,
            message: Some(to_cstring(error.message)),
            error_code: error.code.unwrap_or(0),
            error_data: error.data.as_ref().map(json_cstring),
            request_id: error.request_id.unwrap_or(0),
            cancel_reason: error.cancel_reason.map(to_cstring),
        }
    }
}

/// A value as JSON text for C (the same text as `Value::to_string`). `json_text` leaves room
/// for the NUL, so the CString takes the buffer over without growing or copying it when the
/// size estimate was exact (no escapes, no floats). JSON text never holds a raw NUL.
fn json_cstring(value: &Value) -> CString {
    to_cstring(json_text::to_string(value))
}

/// A result's text for C, taken over as it is: the server's own text (kept by `Reply` with
/// room for the NUL), or the text `json_text` wrote. Not scanned for a NUL byte, as `to_cstring`
/// would: JSON text has none. A raw NUL is valid nowhere in JSON, serde_json checked the
/// server's text whole (control characters in strings included), and `json_text` escapes
/// control characters.
fn json_text_cstring(text: String) -> CString {
    debug_assert!(!text.as_bytes().contains(&0), "NUL in JSON text");
    // SAFETY: no interior NUL byte, as above.
    unsafe { CString::from_vec_unchecked(text.into_bytes()) }
}

/// Boxes an outcome for C. Panics inside `body` become MCP_STATUS_INTERNAL_ERROR.
pub(crate) fn into_result<T: Into<Reply>>(body: impl FnOnce() -> Result<T>) -> *mut mcp_result {
    let outcome = guard(
        || {
            Err(Error::new(
                Status::InternalError,
                "internal error: the library panicked",
            ))
        },
        body,
    );
    let result = match outcome {
        Ok(value) => mcp_result::ok(value.into()),
        Err(error) => mcp_result::error(error),
    };
    Box::into_raw(Box::new(result))
}

/// The status. NULL gives MCP_STATUS_INVALID_ARGUMENT.
///
/// # Safety
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn mcp_result_status(result: *const mcp_result) -> mcp_status {
    let status = guard(
        || Status::InternalError,
        || borrow(result).map_or(Status::InvalidArgument, |r| r.status),
    );
    status
}

/// The result as JSON text when the status is OK (and the server's interim result for
/// MCP_STATUS_INPUT_REQUIRED), else NULL. Owned by the result.
///
/// # Safety
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn mcp_result_json(result: *const mcp_result) -> *const c_char {
    guard(std::ptr::null, || {
        borrow(result)
            .and_then(|r| r.json.as_deref())
            .map_or(std::ptr::null(), |s| s.as_ptr())
    })
}

/// What went wrong, for any status but OK ("" for OK). For MCP_STATUS_SERVER_ERROR it is the
/// JSON-RPC error message. Owned by the result.
///
/// # Safety
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn mcp_result_message(result: *const mcp_result) -> *const c_char {
    guard(std::ptr::null, || match borrow(result) {
        Some(r) => r.message.as_deref().unwrap_or(c"").as_ptr(),
        None => c"result is NULL".as_ptr(),
    })
}

/// The JSON-RPC error code for MCP_STATUS_SERVER_ERROR, else 0.
///
/// # Safety
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn mcp_result_error_code(result: *const mcp_result) -> i64 {
    guard(|| 0, || borrow(result).map_or(0, |r| r.error_code))
}

/// The JSON-RPC error's `data` as JSON text, or NULL when the server sent none. Owned by the
/// result.
///
/// # Safety
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn mcp_result_error_data(result: *const mcp_result) -> *const c_char {
    guard(std::ptr::null, || {
        borrow(result)
            .and_then(|r| r.error_data.as_deref())
            .map_or(std::ptr::null(), |s| s.as_ptr())
    })
}

/// For a failed call, the JSON-RPC id of its request when one was sent (positive), so a
/// cancel or error can be matched with the server's log; 0 for OK results and when nothing was
/// sent (for example a token cancelled before the call).
///
/// # Safety
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn mcp_result_request_id(result: *const mcp_result) -> i64 {
    guard(|| 0, || borrow(result).map_or(0, |r| r.request_id))
}

/// The cancel reason for MCP_STATUS_CANCELLED (NULL when the cancel gave none) and for
/// MCP_STATUS_TIMEOUT ("timed out after N ms"). Owned by the result.
///
/// # Safety
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn mcp_result_cancel_reason(result: *const mcp_result) -> *const c_char {
    guard(std::ptr::null, || {
        borrow(result)
            .and_then(|r| r.cancel_reason.as_deref())
            .map_or(std::ptr::null(), |s| s.as_ptr())
    })
}

/// Frees a result and every string it returned. NULL is accepted.
///
/// # Safety
/// `result` is NULL or a result not yet freed.
#[no_mangle]
pub unsafe extern "C" fn mcp_result_free(result: *mut mcp_result) {
    free_handle(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_texts_are_what_serde_json_writes() {
        let value =
            serde_json::json!({"content": [{"type": "text", "text": "a\"\u{0}é"}], "n": 1.5});
        let text = |s: &Option<CString>| s.as_ref().unwrap().to_str().unwrap().to_owned();
        assert_eq!(
            text(&mcp_result::ok(value.clone().into()).json),
            value.to_string()
        );
        let mut interim = Error::new(Status::InputRequired, "input");
        interim.data = Some(value.clone());
        let r = mcp_result::error(interim);
        assert_eq!(text(&r.json), value.to_string());
        assert_eq!(text(&r.error_data), value.to_string());
    }
}
