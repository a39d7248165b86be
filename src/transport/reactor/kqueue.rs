//! The reactor's wait on macOS and the BSDs: one kqueue for the process, each descriptor's read
//! filter added with `EV_DISPATCH` (disabled once reported, enabled again by `arm`), each
//! watched process's exit (`EVFILT_PROC`, `NOTE_EXIT`) added with `EV_ONESHOT`, and a pipe to
//! wake the wait. Compile-checked only here (no Mac in CI); the poll backend's tests cover the
//! semantics it shares.

use super::Poller;
use crate::transport::wake::WakePipe;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// At most this many events per wait; more wait for the next round.
const EVENTS: usize = 64;

pub struct Kqueue {
    queue: OwnedFd,
    wake: WakePipe,
}

impl Kqueue {
    pub fn new() -> io::Result<Kqueue> {
        // SAFETY: kqueue takes no argument and returns a new descriptor or -1.
        let raw = unsafe { libc::kqueue() };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a descriptor kqueue just opened, owned by nobody else.
        let queue = unsafe { OwnedFd::from_raw_fd(raw) };
        // Not inherited by the servers the library starts.
        // SAFETY: sets a descriptor flag on our own open descriptor.
        unsafe { libc::fcntl(queue.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) };
        let kqueue = Kqueue {
            queue,
            wake: WakePipe::new()?,
        };
        // The wake stays enabled (no EV_DISPATCH): it is drained when it fires.
        kqueue.change(kqueue.wake.read_fd(), 0, libc::EV_ADD)?;
        Ok(kqueue)
    }

    /// Applies `flags` to the read filter of `fd`, which carries `key` back in its events.
    fn change(&self, fd: RawFd, key: u64, flags: u16) -> io::Result<()> {
        apply(&self.queue, &read_filter(fd, key, flags))
    }
}

/// Applies one change to `queue`, asking no event back.
pub fn apply(queue: &OwnedFd, change: &libc::kevent) -> io::Result<()> {
    // SAFETY: one change read from a reference, no event asked back; the queue is open.
    let done = unsafe {
        libc::kevent(
            queue.as_raw_fd(),
            change,
            1,
            std::ptr::null_mut(),
            0,
            std::ptr::null(),
        )
    };
    match done {
        -1 => Err(io::Error::last_os_error()),
        _ => Ok(()),
    }
}

/// The read filter of `fd` with `flags`; the key goes in the event's user data.
fn read_filter(fd: RawFd, key: u64, flags: u16) -> libc::kevent {
    // SAFETY: kevent is plain data, for which all zeroes is a valid value (some systems have
    // fields beyond those set here).
    let mut event: libc::kevent = unsafe { std::mem::zeroed() };
    event.ident = fd as libc::uintptr_t;
    event.filter = libc::EVFILT_READ;
    event.flags = flags;
    event.udata = key as usize as *mut libc::c_void;
    event
}

/// The exit filter of process `pid` with `flags`: one event when it exits (it stays a zombie
/// until reaped: nothing here reaps). The key goes in the event's user data.
pub fn exit_filter(pid: libc::pid_t, key: u64, flags: u16) -> libc::kevent {
    // SAFETY: as in `read_filter`, all zeroes is a valid kevent.
    let mut event: libc::kevent = unsafe { std::mem::zeroed() };
    event.ident = pid as libc::uintptr_t;
    event.filter = libc::EVFILT_PROC;
    event.flags = flags;
    event.fflags = libc::NOTE_EXIT;
    event.udata = key as usize as *mut libc::c_void;
    event
}

impl Poller for Kqueue {
    fn add(&self, fd: RawFd, key: u64) -> io::Result<()> {
        self.change(fd, key, libc::EV_ADD | libc::EV_DISPATCH)
    }

    fn arm(&self, fd: RawFd, key: u64) {
        // Fails only for a descriptor that is not in the queue: then there is nothing to arm.
        let _ = self.change(fd, key, libc::EV_ENABLE | libc::EV_DISPATCH);
    }

    fn disarm(&self, fd: RawFd, key: u64) {
        let _ = self.change(fd, key, libc::EV_DISABLE);
    }

    fn remove(&self, fd: RawFd, key: u64) {
        let _ = self.change(fd, key, libc::EV_DELETE);
    }

    fn add_process(&self, pid: libc::pid_t, key: u64) -> io::Result<()> {
        // ESRCH once the process is exiting (its exit may already have been announced).
        apply(
            &self.queue,
            &exit_filter(pid, key, libc::EV_ADD | libc::EV_ONESHOT),
        )
    }

    fn remove_process(&self, pid: libc::pid_t, key: u64) {
        // Fails once the exit was reported (one-shot: the kernel dropped the watch then).
        let _ = apply(&self.queue, &exit_filter(pid, key, libc::EV_DELETE));
    }

    fn wait(&self, timeout: Option<Duration>, ready: &mut Vec<u64>) {
        // SAFETY: as in `read_filter`, all zeroes is a valid kevent.
        let mut events: [libc::kevent; EVENTS] = unsafe { std::mem::zeroed() };
        let limit = timeout.map(|timeout| libc::timespec {
            tv_sec: libc::time_t::try_from(timeout.as_secs()).unwrap_or(libc::time_t::MAX),
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        });
        let limit_ptr = limit
            .as_ref()
            .map_or(std::ptr::null(), |limit| limit as *const libc::timespec);
        // SAFETY: `events` has room for the EVENTS events asked for; no change is passed; the
        // timeout, if any, lives until the call returns; the queue is ours.
        let n = unsafe {
            libc::kevent(
                self.queue.as_raw_fd(),
                std::ptr::null(),
                0,
                events.as_mut_ptr(),
                EVENTS as libc::c_int,
                limit_ptr,
            )
        };
        for event in &events[..usize::try_from(n).unwrap_or(0)] {
            // A process's ident is its pid, which may equal the wake's descriptor number.
            let is_wake = event.filter == libc::EVFILT_READ
                && event.ident == self.wake.read_fd() as libc::uintptr_t;
            if is_wake {
                self.wake.drain();
            } else {
                // Disabled now (EV_DISPATCH) until its owner arms it again; a process's exit
                // watch is gone (EV_ONESHOT).
                ready.push(event.udata as usize as u64);
            }
        }
    }

    fn wake(&self) {
        self.wake.wake();
    }
}
