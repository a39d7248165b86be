//! The panic boundary: no unwinding crosses `extern "C"`. Every export runs its body through
//! `guard`, and every `_free` export through `free_handle`.

use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `body`, turning a panic into `fallback` so no unwinding crosses `extern "C"`.
pub(super) fn guard<T>(fallback: impl FnOnce() -> T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|_| fallback())
}

/// Frees a handle made by `Box::into_raw`; NULL is accepted. Every `_free` export uses it.
///
/// # Safety
/// `handle` is NULL or came from `Box::into_raw` and was not freed yet.
pub(super) unsafe fn free_handle<T>(handle: *mut T) {
    guard(
        || (),
        || {
            if !handle.is_null() {
                drop(Box::from_raw(handle));
            }
        },
    )
}
