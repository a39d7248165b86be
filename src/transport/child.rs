//! The server's child process: spawning it in its own process group, waiting with a bound,
//! and the close escalation (stdin closed, then SIGTERM, then SIGKILL, then reap).

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

/// Spawns `argv` directly (no shell) in a new process group, so close can signal the server
/// and anything it started.
pub fn spawn(mut command: Command) -> io::Result<Child> {
    command.process_group(0);
    command.spawn()
}

/// Waits up to `limit` for the child to exit, without reaping it, so its process group id
/// cannot be reused while we may still signal the group.
pub fn exited_within(child: &Child, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if has_exited(child) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn has_exited(child: &Child) -> bool {
    pid_has_exited(child.id() as libc::pid_t)
}

fn pid_has_exited(pid: libc::pid_t) -> bool {
    // SAFETY: waitid only writes into the zeroed siginfo we own.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        let rc = libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags);
        // ECHILD: already reaped, so certainly gone.
        rc == -1 || info.si_pid() != 0
    }
}

/// Sends `signal` to the child's whole process group.
pub fn signal_group(child: &Child, signal: libc::c_int) {
    // SAFETY: kill has no memory effects; the group exists while the leader is unreaped.
    unsafe {
        libc::kill(-(child.id() as libc::pid_t), signal);
    }
}

/// The close escalation after stdin was closed: wait, SIGTERM, wait, SIGKILL; then kill any
/// process left in the group and reap the child.
pub fn shut_down(child: &mut Child, grace: Duration) -> Option<ExitStatus> {
    if !exited_within(child, grace) {
        signal_group(child, libc::SIGTERM);
        if !exited_within(child, grace) {
            signal_group(child, libc::SIGKILL);
        }
    }
    // The leader is dead or dying; take the rest of its group with it.
    signal_group(child, libc::SIGKILL);
    child.wait().ok()
}

/// How often the exit is looked at where the kernel has no pidfd (before Linux 5.3, macOS).
pub const EXIT_CHECK_PERIOD: Duration = Duration::from_millis(100);

/// Watches for the child's exit without reaping it, so the exit is seen even while a process
/// the server started keeps its stdout open (then stdout never ends). Where the kernel has
/// pidfds, the pidfd becomes readable at the exit and is polled together with stdout: no
/// thread and no timer. Elsewhere the reader looks every [`EXIT_CHECK_PERIOD`].
pub struct ExitWatch {
    pid: libc::pid_t,
    pidfd: Option<OwnedFd>,
}

impl ExitWatch {
    pub fn new(child: &Child) -> ExitWatch {
        let pid = child.id() as libc::pid_t;
        ExitWatch {
            pid,
            pidfd: open_pidfd(pid),
        }
    }

    /// The descriptor that becomes readable when the child exits, if the kernel has one.
    pub fn fd(&self) -> Option<RawFd> {
        self.pidfd.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// How long a reader may wait in `poll` before it must call [`ExitWatch::has_exited`]:
    /// `None` (no limit) when the pidfd is polled.
    pub fn check_period(&self) -> Option<Duration> {
        match self.pidfd {
            Some(_) => None,
            None => Some(EXIT_CHECK_PERIOD),
        }
    }

    /// Whether the child has exited (without reaping it).
    pub fn has_exited(&self) -> bool {
        pid_has_exited(self.pid)
    }
}

/// A pidfd for `pid` (Linux 5.3 and later), or `None`.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn open_pidfd(pid: libc::pid_t) -> Option<OwnedFd> {
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

/// Other unix systems (macOS) have no pidfd: the reader looks every [`EXIT_CHECK_PERIOD`].
#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn open_pidfd(_pid: libc::pid_t) -> Option<OwnedFd> {
    None
}
