//! A bounded wait for a child's exit, without reaping it (close's wait, `child::exited_within`):
//! its pidfd on Linux; on macOS and the BSDs a kqueue of its own watching the process
//! (`EVFILT_PROC`); elsewhere nothing (the caller looks now and then).
//!
//! The notice may come a moment before `waitid` can see the exit: macOS announces the exit
//! before the process becomes a zombie. The caller looks again after a notice.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Duration;

pub enum ExitNotice {
    /// Readable once the process has exited (Linux 5.3 and later).
    Pidfd(OwnedFd),
    /// A kqueue holding only the process's exit filter.
    #[cfg(mcpc_kqueue)]
    Kqueue(OwnedFd),
    /// The kernel said the process is exiting already.
    #[cfg(mcpc_kqueue)]
    Given,
}

impl ExitNotice {
    /// The notice of `pid`'s exit (a child not reaped yet), or `None` where the kernel gives
    /// none.
    pub fn open(pid: libc::pid_t) -> Option<ExitNotice> {
        match open_pidfd(pid) {
            Some(pidfd) => Some(ExitNotice::Pidfd(pidfd)),
            None => without_pidfd(pid),
        }
    }

    /// Waits up to `limit` for the exit; returns whether it was noticed (a signal may end the
    /// wait early: then it was not).
    pub fn wait(&self, limit: Duration) -> bool {
        match self {
            ExitNotice::Pidfd(pidfd) => wait_readable(pidfd.as_raw_fd(), limit),
            #[cfg(mcpc_kqueue)]
            ExitNotice::Kqueue(queue) => kqueue::wait(queue, limit),
            #[cfg(mcpc_kqueue)]
            ExitNotice::Given => true,
        }
    }
}

/// A pidfd for `pid` (Linux 5.3 and later), or `None`.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub fn open_pidfd(pid: libc::pid_t) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1. The
    // child is unreaped, so its pid cannot have been reused.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let pidfd: OwnedFd = match libc::c_int::try_from(fd) {
        // SAFETY: a descriptor pidfd_open just opened, owned by nobody else.
        Ok(fd) if fd >= 0 => unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) },
        _ => return None,
    };
    // A server we start later must not inherit it.
    // SAFETY: fcntl with flag arguments on a descriptor we own.
    unsafe { libc::fcntl(pidfd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) };
    Some(pidfd)
}

/// Other unix systems (macOS, the BSDs) have no pidfd (see `child::ExitWatch`).
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub fn open_pidfd(_pid: libc::pid_t) -> Option<OwnedFd> {
    None
}

#[cfg(mcpc_kqueue)]
use kqueue::open as without_pidfd;

/// Other unix systems: no notice, the caller looks now and then.
#[cfg(not(mcpc_kqueue))]
fn without_pidfd(_pid: libc::pid_t) -> Option<ExitNotice> {
    None
}

/// Waits until `fd` is readable or `limit` passes; returns whether it is readable.
fn wait_readable(fd: RawFd, limit: Duration) -> bool {
    let mut pollfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let timeout = crate::transport::wake::timeout_ms(Some(limit));
    // SAFETY: one valid pollfd for the length given.
    unsafe { libc::poll(&mut pollfd, 1, timeout) > 0 }
}

#[cfg(mcpc_kqueue)]
mod kqueue {
    use super::{AsRawFd, Duration, ExitNotice, OwnedFd};
    use crate::transport::reactor::kqueue::{apply, exit_filter};
    use std::os::fd::FromRawFd;

    pub fn open(pid: libc::pid_t) -> Option<ExitNotice> {
        // SAFETY: kqueue takes no argument and returns a new descriptor or -1.
        let raw = unsafe { libc::kqueue() };
        if raw < 0 {
            return None;
        }
        // SAFETY: a descriptor kqueue just opened, owned by nobody else. (A kqueue is not
        // inherited by a forked child, so not by a server started meanwhile either.)
        let queue = unsafe { OwnedFd::from_raw_fd(raw) };
        match apply(
            &queue,
            &exit_filter(pid, 0, libc::EV_ADD | libc::EV_ONESHOT),
        ) {
            Ok(()) => Some(ExitNotice::Kqueue(queue)),
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Some(ExitNotice::Given),
            Err(_) => None,
        }
    }

    /// Waits up to `limit` for the queue's one event, the exit.
    pub fn wait(queue: &OwnedFd, limit: Duration) -> bool {
        let timeout = libc::timespec {
            tv_sec: libc::time_t::try_from(limit.as_secs()).unwrap_or(libc::time_t::MAX),
            tv_nsec: limit.subsec_nanos() as libc::c_long,
        };
        // SAFETY: as in `exit_filter`, all zeroes is a valid kevent.
        let mut event: libc::kevent = unsafe { std::mem::zeroed() };
        // SAFETY: room for the one event asked for; no change passed; the timeout lives until
        // the call returns; the queue is open.
        let n = unsafe {
            libc::kevent(
                queue.as_raw_fd(),
                std::ptr::null(),
                0,
                &mut event,
                1,
                &timeout,
            )
        };
        // -1 (a signal): not noticed, the caller waits again.
        n > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};
    use std::time::Instant;

    /// A pidfd on Linux, a kqueue of its own on macOS and the BSDs: no notice while the child
    /// runs, one at its exit, and one at once for a child that has exited already.
    #[test]
    fn the_notice_comes_with_the_exit_and_not_before() {
        let mut child = Command::new("cat")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id() as libc::pid_t;
        let notice = ExitNotice::open(pid).expect("a notice of the exit");
        assert!(!notice.wait(Duration::from_millis(50)), "noticed early");
        drop(child.stdin.take());
        assert!(
            notice.wait(Duration::from_secs(10)),
            "the exit went unnoticed"
        );

        let start = Instant::now();
        let late = ExitNotice::open(pid).expect("a notice of the exit");
        assert!(late.wait(Duration::from_secs(10)));
        assert!(start.elapsed() < Duration::from_secs(5), "not at once");
        child.wait().unwrap();
    }
}
