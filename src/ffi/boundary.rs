//! The panic boundary: no unwinding crosses `extern "C"`. Every export runs its body through
//! `guard`, and every `_free` export through `free_handle`.

/// Runs `body`, turning a panic into `fallback` so no unwinding crosses `extern "C"` (and
/// nothing is printed: see `panic_guard`).
pub(super) fn guard<T>(fallback: impl FnOnce() -> T, body: impl FnOnce() -> T) -> T {
    crate::panic_guard::catch(body).unwrap_or_else(|_| fallback())
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

/// Borrows the object behind a handle the host passed in; `None` for NULL. Every export reads
/// its handles through this (or `borrow_mut`), so the one assumption lives in one place.
///
/// # Safety
/// `handle` is NULL or points to a live object of type `T` made by this library, which no
/// other thread frees during the borrow (each export's `# Safety` section says so to the host).
pub(super) unsafe fn borrow<'a, T>(handle: *const T) -> Option<&'a T> {
    handle.as_ref()
}

/// As [`borrow`], for the exports that fill in an object the host handed over (a reply).
///
/// # Safety
/// As for [`borrow`], and no other reference to the object exists during the borrow.
pub(super) unsafe fn borrow_mut<'a, T>(handle: *mut T) -> Option<&'a mut T> {
    handle.as_mut()
}
