//! The server's child process: spawning it in its own process group, waiting with a bound,
//! and the close escalation (stdin closed, then SIGTERM, then SIGKILL, then reap).

use std::io;
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
    // SAFETY: waitid only writes into the zeroed siginfo we own.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        let rc = libc::waitid(libc::P_PID, child.id(), &mut info, flags);
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
