//! The server's process tree: the server starts suspended, is put in a job object that kills
//! every process in it when its last handle closes, and only then runs. So whatever the server
//! starts is in the job too, and close ends the whole tree (the process group of unix).

use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};
use std::os::windows::process::CommandExt;
use std::process::{Child, Command};
use windows_sys::Win32::Foundation::{HANDLE, INVALID_HANDLE_VALUE};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, Thread32First, Thread32Next, TH32CS_SNAPTHREAD, THREADENTRY32,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JobObjectExtendedLimitInformation,
    SetInformationJobObject, TerminateJobObject, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
    JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
};
use windows_sys::Win32::System::Threading::{
    OpenThread, ResumeThread, CREATE_NO_WINDOW, CREATE_SUSPENDED, THREAD_SUSPEND_RESUME,
};

/// A job object that kills its processes when dropped.
pub struct Job(OwnedHandle);

impl Job {
    /// Ends every process in the job now.
    pub fn terminate(&self) {
        // SAFETY: a job handle we own.
        unsafe { TerminateJobObject(self.raw(), 1) };
    }

    fn raw(&self) -> HANDLE {
        self.0.as_raw_handle() as HANDLE
    }
}

/// Starts `command` (no console window of its own) inside a new job. A server that cannot be
/// put in a job (a host in a job that forbids nesting, before Windows 8) runs without one:
/// close then ends the server only.
pub fn spawn(mut command: Command) -> io::Result<(Child, Option<Job>)> {
    command.creation_flags(CREATE_SUSPENDED | CREATE_NO_WINDOW);
    let mut child = command.spawn()?;
    let job = new_job().and_then(|job| {
        // SAFETY: both handles are live: the job's and the (unreaped) child's.
        match unsafe { AssignProcessToJobObject(job.raw(), child.as_raw_handle() as HANDLE) } {
            0 => Err(io::Error::last_os_error()),
            _ => Ok(job),
        }
    });
    if let Err(e) = resume(child.id()) {
        let _ = child.kill();
        let _ = child.wait();
        return Err(e);
    }
    Ok((child, job.ok()))
}

fn new_job() -> io::Result<Job> {
    // SAFETY: an unnamed job with default security.
    let handle = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
    if handle.is_null() {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a handle just returned, owned by nobody else.
    let job = Job(unsafe { OwnedHandle::from_raw_handle(handle as RawHandle) });
    // SAFETY: plain data, all zero is "no limit".
    let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
    limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
    // SAFETY: the structure and its size, as the information class expects.
    let ok = unsafe {
        SetInformationJobObject(
            job.raw(),
            JobObjectExtendedLimitInformation,
            (&limits as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast(),
            std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
        )
    };
    match ok {
        0 => Err(io::Error::last_os_error()),
        _ => Ok(job),
    }
}

/// Resumes the only thread of the suspended process `pid` (std keeps no thread handle).
fn resume(pid: u32) -> io::Result<()> {
    // SAFETY: a snapshot of the system's threads; closed when `snapshot` drops.
    let snapshot = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) };
    if snapshot == INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a valid handle just returned, owned by nobody else.
    let snapshot = unsafe { OwnedHandle::from_raw_handle(snapshot as RawHandle) };
    // SAFETY: plain data; dwSize set as the API requires.
    let mut entry: THREADENTRY32 = unsafe { std::mem::zeroed() };
    entry.dwSize = std::mem::size_of::<THREADENTRY32>() as u32;
    let raw = snapshot.as_raw_handle() as HANDLE;
    // SAFETY: walks the snapshot with the entry we own.
    let mut more = unsafe { Thread32First(raw, &mut entry) } != 0;
    let mut resumed = false;
    while more {
        if entry.th32OwnerProcessID == pid {
            // SAFETY: opens a thread of our own suspended child to resume it.
            let thread = unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID) };
            if !thread.is_null() {
                // SAFETY: a handle just returned, owned by nobody else.
                let thread = unsafe { OwnedHandle::from_raw_handle(thread as RawHandle) };
                // SAFETY: a live thread handle with resume rights.
                resumed |= unsafe { ResumeThread(thread.as_raw_handle() as HANDLE) } != u32::MAX;
            }
        }
        // SAFETY: as above.
        more = unsafe { Thread32Next(raw, &mut entry) } != 0;
    }
    match resumed {
        true => Ok(()),
        false => Err(io::Error::other("cannot resume the server's main thread")),
    }
}
