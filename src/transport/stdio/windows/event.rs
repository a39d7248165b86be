//! A manual-reset event object: once set it stays set (every waiter sees it) until reset.
//! The pipes wait for their transfers and for `Stop` on one; the completion queue offers one to
//! the host's event loop (`mcp_completion_queue_event`).

use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};
use windows_sys::Win32::Foundation::HANDLE;
use windows_sys::Win32::System::Threading::{CreateEventW, ResetEvent, SetEvent};

pub struct Event(OwnedHandle);

impl Event {
    /// A new event, not set.
    pub fn new() -> io::Result<Event> {
        // SAFETY: an unnamed event with default security.
        let handle = unsafe { CreateEventW(std::ptr::null(), 1, 0, std::ptr::null()) };
        match handle.is_null() {
            true => Err(io::Error::last_os_error()),
            // SAFETY: a handle CreateEventW just returned, owned by nobody else.
            false => Ok(Event(unsafe {
                OwnedHandle::from_raw_handle(handle as RawHandle)
            })),
        }
    }

    pub fn set(&self) {
        // SAFETY: an event handle we own, open for our life.
        unsafe { SetEvent(self.raw()) };
    }

    pub fn reset(&self) {
        // SAFETY: as for `set`.
        unsafe { ResetEvent(self.raw()) };
    }

    /// The handle, for a wait (or an OVERLAPPED's hEvent); closed when the event is dropped.
    pub fn raw(&self) -> HANDLE {
        self.0.as_raw_handle() as HANDLE
    }
}
