//! Ending a server in the background, for close with `StdioConfig::close_in_background`: close
//! returns once the client is unusable, and the server's end is the reactor's. It runs the
//! same bounded sequence as a close that waits (`child::shut_down`): stdin is closed already;
//! after [`CLOSE_GRACE`] the group gets SIGTERM, after another SIGKILL; once the server has
//! exited, what is left of its group gets SIGKILL and the server is reaped, so no zombie is
//! left. Nobody waits for it: no thread, only a reactor registration (the pidfd; without one
//! the process itself on kqueue, or else a look every [`EXIT_CHECK_PERIOD`]) that ends with the
//! server, before it is reaped (a watch of the process names it by its pid).
//!
//! The server's stdout and stderr stay open (unread) until then, so a server writing its last
//! lines as it leaves is not killed by SIGPIPE; what it writes is dropped.
//!
//! [`CLOSE_GRACE`]: super::config::CLOSE_GRACE

use super::child::{self, EXIT_CHECK_PERIOD, EXIT_SETTLING};
use crate::error::Error;
use crate::sync::lock;
use crate::transport::reactor::{Event, Handle, Reactor, Registration, Source};
use std::any::Any;
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the pipes' owners hand over to keep them open until the server has gone.
pub type Kept = Box<dyn Any + Send + Sync>;

/// Hands `child` (stdin closed already) to the reactor to end as described above. Fails only
/// when the reactor cannot take it; the caller then ends the server itself.
pub fn hand_over(
    child: Arc<Mutex<Child>>,
    kept: Vec<Kept>,
    grace: Duration,
) -> Result<(), (Arc<Mutex<Child>>, Vec<Kept>)> {
    let Ok(reactor) = Reactor::shared() else {
        return Err((child, kept));
    };
    let pidfd = super::exit_notice::open_pidfd(lock(&child).id() as libc::pid_t);
    hand_over_to(&reactor, child, pidfd, kept, grace)
}

/// [`hand_over`] to `reactor`, with the server's pidfd if the kernel has one.
fn hand_over_to(
    reactor: &Arc<Reactor>,
    child: Arc<Mutex<Child>>,
    pidfd: Option<OwnedFd>,
    kept: Vec<Kept>,
    grace: Duration,
) -> Result<(), (Arc<Mutex<Child>>, Vec<Kept>)> {
    let pid = lock(&child).id() as libc::pid_t;
    let reaper = Arc::new(Reaper {
        child,
        pidfd,
        grace,
        state: Mutex::new(State {
            step: Step::Closed,
            next_step_at: Instant::now() + grace,
            registration: None,
            exit_told: false,
            exit_announced: false,
            kept,
        }),
    });
    // Held while registering, so a handler that runs at once finds its registration.
    let mut state = lock(&reaper.state);
    let (registered, exit_told) = match reaper.pidfd.as_ref().map(AsRawFd::as_raw_fd) {
        Some(pidfd) => (reactor.register(Some(pidfd), reaper.clone()), true),
        None => match reactor.watch_exit(pid, reaper.clone()) {
            Ok(watch) => (Ok(watch), true),
            Err(_) => (reactor.register(None, reaper.clone()), false),
        },
    };
    match registered {
        Ok(registration) => {
            state.exit_told = exit_told;
            registration.handle().wake_at(reaper.next_look(&state));
            state.registration = Some(registration);
            Ok(())
        }
        Err(_) => {
            let kept = std::mem::take(&mut state.kept);
            drop(state);
            Err((reaper.child.clone(), kept))
        }
    }
}

struct Reaper {
    child: Arc<Mutex<Child>>,
    /// Readable once the server has exited (Linux 5.3 and later).
    pidfd: Option<OwnedFd>,
    grace: Duration,
    state: Mutex<State>,
}

struct State {
    /// The last step taken.
    step: Step,
    next_step_at: Instant,
    /// Dropped just before the server is reaped: the reactor forgets the reaper then.
    registration: Option<Registration>,
    /// The reactor runs the handler when the server exits (its pidfd, or kqueue watching it).
    exit_told: bool,
    /// The kernel announced the exit, which `waitid` does not see yet (macOS announces it a
    /// moment before the process becomes a zombie).
    exit_announced: bool,
    kept: Vec<Kept>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    /// stdin closed: the server was asked to leave.
    Closed,
    Terminated,
    Killed,
}

impl Reaper {
    /// When to look at the server next: its next step, or sooner when the reactor does not
    /// tell the exit or the exit is about to be seen.
    fn next_look(&self, state: &State) -> Instant {
        let look_in = match (state.exit_announced, state.exit_told) {
            (true, _) => Some(EXIT_SETTLING),
            (false, true) => None,
            (false, false) => Some(EXIT_CHECK_PERIOD),
        };
        look_in.map_or(state.next_step_at, |period| {
            state.next_step_at.min(Instant::now() + period)
        })
    }

    /// The server has exited: its group's last processes get SIGKILL (the group still is the
    /// server's: the leader is not reaped yet), the reactor forgets it, then it is reaped.
    fn finish(&self, child: &mut Child) {
        child::signal_group(child, libc::SIGKILL);
        let (registration, kept) = {
            let mut state = lock(&self.state);
            (state.registration.take(), std::mem::take(&mut state.kept))
        };
        // On the reactor thread: deregistering does not wait for this handler.
        drop(registration);
        let _ = child.try_wait();
        drop(kept);
    }
}

impl Source for Reaper {
    fn ready(&self, handle: &Handle, event: Event) {
        let mut child = lock(&self.child);
        if child::has_exited(&child) {
            self.finish(&mut child);
            return;
        }
        let now = Instant::now();
        let mut state = lock(&self.state);
        if state.registration.is_none() {
            return; // Reaped already.
        }
        state.exit_announced |= event == Event::Readable;
        if now >= state.next_step_at {
            let (signal, step) = match state.step {
                Step::Closed => (libc::SIGTERM, Step::Terminated),
                Step::Terminated | Step::Killed => (libc::SIGKILL, Step::Killed),
            };
            child::signal_group(&child, signal);
            state.step = step;
            state.next_step_at = now + self.grace;
        }
        handle.wake_at(self.next_look(&state));
        handle.arm();
    }

    fn panicked(&self, _error: Error) {
        // A bug: nobody is left to tell. The server must not outlive it unended. The reactor
        // forgets it before it is reaped.
        let registration = lock(&self.state).registration.take();
        drop(registration);
        if let Ok(mut child) = self.child.try_lock() {
            child::signal_group(&child, libc::SIGKILL);
            let _ = child.try_wait();
        }
    }
}

/// Run with the reactor's Linux stand-in for kqueue, which tells when a watch is removed.
#[cfg(all(test, any(target_os = "linux", target_os = "android")))]
mod tests {
    use super::*;
    use crate::transport::reactor::exit_tests::{stand_in, watching_exits};
    use std::process::{Command, Stdio};

    /// Without a pidfd the reactor watches the server itself (its watch is removed in the
    /// end, which the stand-in records), the reaper ends it at its exit (its next step is a
    /// minute away here), and the watch is gone before the reap (the pid is free once reaped).
    #[test]
    fn a_server_without_a_pidfd_is_reaped_at_its_exit_after_its_watch_is_dropped() {
        let reactor = watching_exits().expect("a reactor that watches processes");
        let mut server = Command::new("cat")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = server.stdin.take();
        let pid = server.id() as libc::pid_t;
        let server = Arc::new(Mutex::new(server));
        let handed = hand_over_to(&reactor, server, None, Vec::new(), Duration::from_secs(60));
        assert!(handed.is_ok(), "the reactor did not take the server");
        drop(stdin); // the server leaves
        let deadline = Instant::now() + Duration::from_secs(10);
        while !stand_in::reaped(pid) || stand_in::removed_after_reap(pid).is_none() {
            assert!(Instant::now() < deadline, "the server was not reaped");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(
            stand_in::removed_after_reap(pid),
            Some(false),
            "the watch of the server outlived its reap"
        );
    }
}
