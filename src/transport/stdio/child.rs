//! The server's child process: spawning it in its own process group, waiting with a bound,
//! and the close escalation (stdin closed, then SIGTERM, then SIGKILL to the group, then reap,
//! then the rest of the group waited for).
//!
//! The server is never reaped before close: its exit is looked at without reaping
//! (`WNOWAIT`), so until close has signalled the group, the group's id (the server's pid)
//! cannot be given to another process, and close's signals can only reach the server's own.

use super::config::GROUP_EXIT_WAIT;
use super::exit_notice::{open_pidfd, ExitNotice};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Spawns `argv` directly (no shell) in a new process group, so close can signal the server
/// and anything it started. `inherits_stderr`: the server writes to the host's stderr as it is
/// now, so it starts from this thread's table (the spawner's copy of fd 2 may be older).
pub fn spawn(mut command: Command, inherits_stderr: bool) -> io::Result<Child> {
    command.process_group(0);
    // From a thread with a small descriptor table of its own, where there is one.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if !inherits_stderr {
        return super::spawner::spawn(command);
    }
    let _ = inherits_stderr;
    command.spawn()
}

/// Waits up to `limit` for the child to exit, without reaping it, so its process group id
/// cannot be reused while we may still signal the group.
pub fn exited_within(child: &Child, limit: Duration) -> bool {
    if has_exited(child) {
        return true;
    }
    let deadline = Instant::now() + limit;
    // With a notice (a pidfd, or a kqueue of its own) the exit ends the wait at once (close
    // waits here for every server, so a sleep between looks would be paid by each); without
    // one, or once noticed but not seen yet, look often at first, then less.
    let notice = ExitNotice::open(child.id() as libc::pid_t);
    let mut noticed = false;
    let mut pause = Duration::from_micros(100);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match &notice {
            Some(notice) if !noticed => noticed = notice.wait(left),
            _ => {
                std::thread::sleep(pause.min(left));
                pause = (pause * 2).min(Duration::from_millis(5));
            }
        }
        if has_exited(child) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
    }
}

pub fn has_exited(child: &Child) -> bool {
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

/// The child's exit status once it has exited, read without reaping it.
pub fn exit_status(child: &Child) -> Option<ExitStatus> {
    use std::os::unix::process::ExitStatusExt;
    // SAFETY: waitid only writes into the zeroed siginfo we own; the accessors read it.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        let rc = libc::waitid(libc::P_PID, child.id() as libc::id_t, &mut info, flags);
        if rc == -1 || info.si_pid() == 0 {
            return None;
        }
        // Back into the status word `ExitStatus` holds (as waitpid reports it).
        let status = info.si_status();
        let raw = match info.si_code {
            libc::CLD_EXITED => (status & 0xff) << 8,
            libc::CLD_DUMPED => status | 0x80,
            _ => status,
        };
        Some(ExitStatus::from_raw(raw))
    }
}

/// The close escalation after stdin was closed: wait, SIGTERM, wait, SIGKILL; then SIGKILL to
/// any process left in the group, reap the child, and wait until every process of the group
/// has ended (up to [`GROUP_EXIT_WAIT`]), so none outlives close. `before_reap` runs just
/// before the reap: a watch that names the server by its pid (the reactor's, on macOS) must
/// be gone by then, as the pid is free for another process once reaped.
pub fn shut_down(
    child: &mut Child,
    grace: Duration,
    before_reap: impl FnOnce(),
) -> Option<ExitStatus> {
    if !exited_within(child, grace) {
        signal_group(child, libc::SIGTERM);
        if !exited_within(child, grace) {
            signal_group(child, libc::SIGKILL);
        }
    }
    // The leader is dead or dying and not reaped yet, so the group is still the server's:
    // take the rest of it with the leader.
    signal_group(child, libc::SIGKILL);
    before_reap();
    let status = child.wait().ok();
    wait_for_group_end(child.id() as libc::pid_t, GROUP_EXIT_WAIT);
    status
}

/// Waits until no process of group `pgid` is running, up to `limit`. It only looks (signal 0,
/// /proc): the leader is reaped now, so a signal could reach a stranger that got its id.
fn wait_for_group_end(pgid: libc::pid_t, limit: Duration) {
    let deadline = Instant::now() + limit;
    while group_is_running(pgid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Whether a process of group `pgid` has not ended yet.
fn group_is_running(pgid: libc::pid_t) -> bool {
    // SAFETY: signal 0 checks that the group exists and sends nothing.
    if unsafe { libc::kill(-pgid, 0) } == -1 {
        // ESRCH: no process is left in it at all.
        return false;
    }
    any_member_running(pgid)
}

/// Linux: the group is read from /proc, where a process that has ended but that its parent
/// (init, for a server's orphans) has not reaped yet shows as a zombie: it does not count.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn any_member_running(pgid: libc::pid_t) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return true;
    };
    let pgid = pgid.to_string();
    entries.flatten().any(|entry| {
        let is_pid = entry
            .file_name()
            .to_str()
            .is_some_and(|name| name.bytes().all(|b| b.is_ascii_digit()));
        let Some(stat) = is_pid
            .then(|| std::fs::read_to_string(entry.path().join("stat")).ok())
            .flatten()
        else {
            return false;
        };
        // After the command name (in parentheses, and it may hold anything): state, ppid, pgrp.
        let mut fields = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest)
            .unwrap_or_default()
            .split_whitespace();
        let state = fields.next();
        let group = fields.nth(1);
        group == Some(pgid.as_str()) && !matches!(state, Some("Z" | "X"))
    })
}

/// Elsewhere a zombie still counts: it is waited for until its parent reaps it.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn any_member_running(_pgid: libc::pid_t) -> bool {
    true
}

/// How often the exit is looked at where neither a pidfd nor the reactor tells it (Linux
/// before 5.3; unix systems without kqueue).
pub const EXIT_CHECK_PERIOD: Duration = Duration::from_millis(100);

/// After the kernel announced the exit, how soon to look again while `waitid` does not see it
/// yet (macOS announces it a moment before the process becomes a zombie).
pub const EXIT_SETTLING: Duration = Duration::from_millis(1);

/// Watches for the child's exit without reaping it, so the exit is seen even while a process
/// the server started keeps its stdout open (then stdout never ends). Where the kernel has
/// pidfds, the pidfd becomes readable at the exit and is polled together with stdout: no
/// thread and no timer. On macOS and the BSDs the reactor watches the process itself
/// (`Reactor::watch_exit`) and tells the reader. Elsewhere the reader looks every
/// [`EXIT_CHECK_PERIOD`].
pub struct ExitWatch {
    pid: libc::pid_t,
    pidfd: Option<OwnedFd>,
    /// The reactor watches the exit (its pidfd, or the process itself) and tells the reader.
    watched_by_reactor: AtomicBool,
}

impl ExitWatch {
    pub fn new(child: &Child) -> ExitWatch {
        let pid = child.id() as libc::pid_t;
        ExitWatch {
            pid,
            pidfd: open_pidfd(pid),
            watched_by_reactor: AtomicBool::new(false),
        }
    }

    /// As where the kernel has no pidfd (tests).
    #[cfg(test)]
    pub fn without_pidfd(child: &Child) -> ExitWatch {
        ExitWatch {
            pidfd: None,
            ..ExitWatch::new(child)
        }
    }

    pub fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// The descriptor that becomes readable when the child exits, if the kernel has one.
    pub fn fd(&self) -> Option<RawFd> {
        self.pidfd.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// The reactor watches the exit now, and tells the reader when it comes.
    pub fn set_watched_by_reactor(&self) {
        self.watched_by_reactor.store(true, Ordering::Release);
    }

    pub fn is_watched_by_reactor(&self) -> bool {
        self.watched_by_reactor.load(Ordering::Acquire)
    }

    /// How long a reader may wait in `poll` before it must call [`ExitWatch::has_exited`]:
    /// `None` (no limit) when the pidfd is polled or the reactor tells the exit.
    pub fn check_period(&self) -> Option<Duration> {
        let told = self.pidfd.is_some() || self.watched_by_reactor.load(Ordering::Acquire);
        (!told).then_some(EXIT_CHECK_PERIOD)
    }

    /// Whether the child has exited (without reaping it).
    pub fn has_exited(&self) -> bool {
        pid_has_exited(self.pid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;

    /// Whether `pid` has exited and is not reaped yet.
    fn is_zombie(pid: libc::pid_t) -> bool {
        // SAFETY: waitid only writes into the zeroed siginfo we own.
        unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
            let rc = libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags);
            rc == 0 && info.si_pid() == pid
        }
    }

    /// What must let go of the server's pid (the reactor's watch of it) gets its turn once the
    /// server has exited and before it is reaped.
    #[test]
    fn close_lets_go_of_the_pid_between_the_exit_and_the_reap() {
        let mut command = Command::new("cat");
        command.stdin(Stdio::piped()).stdout(Stdio::null());
        let mut server = spawn(command, false).unwrap();
        drop(server.stdin.take());
        let pid = server.id() as libc::pid_t;
        let mut between = None;
        let status = shut_down(&mut server, Duration::from_secs(10), || {
            between = Some(is_zombie(pid));
        });
        assert_eq!(between, Some(true), "not between the exit and the reap");
        assert!(status.is_some_and(|status| status.success()), "{status:?}");
    }
}
