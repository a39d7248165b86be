//! Pipes to the server whose every read and write can be ended from another thread at once.
//!
//! Our end of each pipe is a named pipe opened for overlapped I/O; the server's end is an
//! ordinary synchronous handle it inherits. A transfer waits for its completion together with
//! a [`Stop`] event (and, when reading stdout, the server's process handle), so close wakes a
//! thread blocked on a server that never reads or never writes, without a timer; the pending
//! I/O is then cancelled with `CancelIoEx` and reaped before the buffer is given back.

use super::event::Event;
use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};
use std::sync::atomic::{AtomicU64, Ordering};
use windows_sys::Win32::Foundation::{
    GetLastError, ERROR_BROKEN_PIPE, ERROR_HANDLE_EOF, ERROR_IO_PENDING, ERROR_NO_DATA,
    ERROR_OPERATION_ABORTED, ERROR_PIPE_NOT_CONNECTED, GENERIC_READ, GENERIC_WRITE, HANDLE,
    INVALID_HANDLE_VALUE, WAIT_OBJECT_0,
};
use windows_sys::Win32::Storage::FileSystem::{
    CreateFileW, ReadFile, WriteFile, FILE_FLAG_FIRST_PIPE_INSTANCE, FILE_FLAG_OVERLAPPED,
    FILE_READ_ATTRIBUTES, FILE_WRITE_ATTRIBUTES, OPEN_EXISTING, PIPE_ACCESS_INBOUND,
    PIPE_ACCESS_OUTBOUND,
};
use windows_sys::Win32::System::Pipes::{
    CreateNamedPipeW, PeekNamedPipe, PIPE_READMODE_BYTE, PIPE_REJECT_REMOTE_CLIENTS,
    PIPE_TYPE_BYTE, PIPE_WAIT,
};
use windows_sys::Win32::System::Threading::{WaitForMultipleObjects, INFINITE};
use windows_sys::Win32::System::IO::{CancelIoEx, GetOverlappedResult, OVERLAPPED};

const PIPE_BUFFER: u32 = 64 * 1024;

/// Which way the bytes go, seen from this process.
#[derive(Clone, Copy, PartialEq)]
pub enum Direction {
    /// We write, the server reads (its stdin).
    ToServer,
    /// The server writes, we read (its stdout, its stderr).
    FromServer,
}

/// Our end of a pipe to the server, and the event its transfers complete on.
pub struct Pipe {
    handle: OwnedHandle,
    done: Event,
}

/// A manual-reset event that, once set, stays set: tells a thread to stop waiting.
pub struct Stop(Event);

impl Stop {
    pub fn new() -> io::Result<Stop> {
        Event::new().map(Stop)
    }

    pub fn stop(&self) {
        self.0.set();
    }
}

/// How a transfer ended, when it did not fail.
pub enum Transfer {
    /// This many bytes moved; 0 on a read is the end of the stream.
    Done(usize),
    /// [`Stop`] was set; nothing (more) moved.
    Stopped,
    /// The process watched by a read exited, and nothing it wrote is left in the pipe.
    Exited,
}

/// Makes a pipe and returns our end and the server's (for `Stdio::from`).
pub fn pair(direction: Direction) -> io::Result<(Pipe, OwnedHandle)> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = format!(
        r"\\.\pipe\mcpc-{}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        // Not guessable in advance by another process that would open it first.
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    let wide: Vec<u16> = name.encode_utf16().chain([0]).collect();
    let (ours_access, theirs_access) = match direction {
        Direction::ToServer => (PIPE_ACCESS_OUTBOUND, GENERIC_READ | FILE_WRITE_ATTRIBUTES),
        Direction::FromServer => (PIPE_ACCESS_INBOUND, GENERIC_WRITE | FILE_READ_ATTRIBUTES),
    };
    // SAFETY: a NUL-terminated name; no security attributes (not inheritable).
    let ours = unsafe {
        CreateNamedPipeW(
            wide.as_ptr(),
            ours_access | FILE_FLAG_OVERLAPPED | FILE_FLAG_FIRST_PIPE_INSTANCE,
            PIPE_TYPE_BYTE | PIPE_READMODE_BYTE | PIPE_WAIT | PIPE_REJECT_REMOTE_CLIENTS,
            1,
            PIPE_BUFFER,
            PIPE_BUFFER,
            0,
            std::ptr::null(),
        )
    };
    let ours = owned(ours)?;
    // The server's end: synchronous, and not inheritable here (std makes an inheritable
    // duplicate for the child only while it starts it).
    // SAFETY: as above; no template file.
    let theirs = unsafe {
        CreateFileW(
            wide.as_ptr(),
            theirs_access,
            0,
            std::ptr::null(),
            OPEN_EXISTING,
            0,
            std::ptr::null_mut(),
        )
    };
    let theirs = owned(theirs)?;
    Ok((
        Pipe {
            handle: ours,
            done: Event::new()?,
        },
        theirs,
    ))
}

impl Pipe {
    /// Reads into `buf`, waiting for data, the end of the stream, `stop`, or the exit of the
    /// process `exit` (then what it wrote is still read to the last byte).
    pub fn read(
        &self,
        buf: &mut [u8],
        stop: &Stop,
        exit: Option<RawHandle>,
    ) -> io::Result<Transfer> {
        let len = buf.len().min(u32::MAX as usize) as u32;
        // SAFETY: the OVERLAPPED and the buffer outlive the I/O: `finish` waits for it to end.
        let mut overlapped = self.overlapped();
        let started = unsafe {
            ReadFile(
                self.raw(),
                buf.as_mut_ptr(),
                len,
                std::ptr::null_mut(),
                &mut overlapped,
            )
        };
        match self.finish(started != 0, &mut overlapped, stop, exit) {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(Transfer::Done(0)),
            other => other,
        }
    }

    /// Writes part of `bytes` (the count is returned), waiting for the server to take it or
    /// for `stop`.
    pub fn write(&self, bytes: &[u8], stop: &Stop) -> io::Result<Transfer> {
        let len = bytes.len().min(u32::MAX as usize) as u32;
        let mut overlapped = self.overlapped();
        // SAFETY: as in `read`.
        let started = unsafe {
            WriteFile(
                self.raw(),
                bytes.as_ptr(),
                len,
                std::ptr::null_mut(),
                &mut overlapped,
            )
        };
        self.finish(started != 0, &mut overlapped, stop, None)
    }

    fn overlapped(&self) -> OVERLAPPED {
        // SAFETY: OVERLAPPED is plain data; all zero is its starting state.
        let mut overlapped: OVERLAPPED = unsafe { std::mem::zeroed() };
        overlapped.hEvent = self.done.raw();
        overlapped
    }

    /// Waits for the transfer started on `overlapped` to end; cancels it on stop (or on exit
    /// with nothing left to read) and reaps it, so the buffer is never written after return.
    fn finish(
        &self,
        started: bool,
        overlapped: &mut OVERLAPPED,
        stop: &Stop,
        mut exit: Option<RawHandle>,
    ) -> io::Result<Transfer> {
        // SAFETY: GetLastError right after the call that failed.
        if !started && unsafe { GetLastError() } != ERROR_IO_PENDING {
            return finished_with(io::Error::last_os_error());
        }
        let mut cancelled = None;
        // Done at once (data was waiting, the pipe had room): no wait needed.
        if !started {
            loop {
                let mut handles = vec![self.done.raw(), stop.0.raw()];
                handles.extend(exit.map(|h| h as HANDLE));
                // SAFETY: live handles, as many as the count says.
                let which = unsafe {
                    WaitForMultipleObjects(handles.len() as u32, handles.as_ptr(), 0, INFINITE)
                };
                match which.wrapping_sub(WAIT_OBJECT_0) {
                    0 => break,
                    1 => {
                        cancelled = Some(Transfer::Stopped);
                        break;
                    }
                    2 if self.available() > 0 => exit = None, // read what it wrote first
                    2 => {
                        cancelled = Some(Transfer::Exited);
                        break;
                    }
                    _ => return Err(io::Error::last_os_error()),
                }
            }
        }
        if cancelled.is_some() {
            // SAFETY: cancels this transfer only; it may have completed meanwhile.
            unsafe { CancelIoEx(self.raw(), overlapped) };
        }
        let mut moved = 0u32;
        // SAFETY: waits (bWait) until the transfer is over, whichever way it ended.
        let ok = unsafe { GetOverlappedResult(self.raw(), overlapped, &mut moved, 1) };
        if ok != 0 {
            // Completed before the cancel took: what moved counts.
            return Ok(match (moved, cancelled) {
                (0, Some(why)) => why,
                (n, _) => Transfer::Done(n as usize),
            });
        }
        let error = io::Error::last_os_error();
        match (cancelled, error.raw_os_error()) {
            (Some(why), Some(code)) if code as u32 == ERROR_OPERATION_ABORTED => Ok(why),
            _ => finished_with(error),
        }
    }

    /// Bytes waiting in the pipe (0 when it cannot tell).
    fn available(&self) -> u32 {
        let mut available = 0u32;
        // SAFETY: only the count is asked for.
        let ok = unsafe {
            PeekNamedPipe(
                self.raw(),
                std::ptr::null_mut(),
                0,
                std::ptr::null_mut(),
                &mut available,
                std::ptr::null_mut(),
            )
        };
        if ok == 0 {
            0
        } else {
            available
        }
    }

    fn raw(&self) -> HANDLE {
        self.handle.as_raw_handle() as HANDLE
    }
}

/// The end of the stream (the other end closed) reads as 0 bytes; on a write it is a broken
/// pipe, as on unix.
fn finished_with(error: io::Error) -> io::Result<Transfer> {
    match error.raw_os_error().map(|code| code as u32) {
        Some(ERROR_BROKEN_PIPE | ERROR_HANDLE_EOF | ERROR_PIPE_NOT_CONNECTED | ERROR_NO_DATA) => {
            Err(io::Error::new(io::ErrorKind::BrokenPipe, error))
        }
        _ => Err(error),
    }
}

fn owned(handle: HANDLE) -> io::Result<OwnedHandle> {
    match handle == INVALID_HANDLE_VALUE || handle.is_null() {
        true => Err(io::Error::last_os_error()),
        // SAFETY: a valid handle just returned by the system, owned by nobody else.
        false => Ok(unsafe { OwnedHandle::from_raw_handle(handle as RawHandle) }),
    }
}
