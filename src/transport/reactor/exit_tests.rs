//! Tests of [`Reactor::watch_exit`] with real child processes: on macOS and the BSDs against
//! kqueue itself; on Linux, whose backends cannot watch a process, against a stand-in that
//! answers as kqueue does (the process's pidfd in a poll set, ESRCH once it has exited), so
//! that the reactor's part (keys, the exit already past, deregistering) runs here too.

use super::tests::until;
use super::*;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Counts the exits reported.
#[derive(Default)]
struct Exits(AtomicUsize);

impl Source for Exits {
    fn ready(&self, _handle: &Handle, event: Event) {
        assert_eq!(event, Event::Readable, "only the exit is watched");
        self.0.fetch_add(1, Ordering::SeqCst);
    }

    fn panicked(&self, _error: Error) {}
}

impl Exits {
    fn seen(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// A started reactor that watches processes (kqueue, or on Linux the stand-in), for the tests
/// of what uses it.
pub(crate) fn watching_exits() -> Option<Arc<Reactor>> {
    reactors().into_iter().next().map(|(_, reactor)| reactor)
}

/// Each reactor here that can watch a process, started.
fn reactors() -> Vec<(&'static str, Arc<Reactor>)> {
    let all: Vec<_> = watching_backends()
        .into_iter()
        .map(|(way, poller)| (way, Reactor::with(poller)))
        .collect();
    for (_, reactor) in &all {
        reactor.start().unwrap();
    }
    all
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn watching_backends() -> Vec<(&'static str, Box<dyn Poller>)> {
    vec![("pidfd stand-in", Box::new(stand_in::PidfdExits::new()))]
}

#[cfg(mcpc_kqueue)]
fn watching_backends() -> Vec<(&'static str, Box<dyn Poller>)> {
    vec![("kqueue", Box::new(super::kqueue::Kqueue::new().unwrap()))]
}

#[cfg(not(any(target_os = "linux", target_os = "android", mcpc_kqueue)))]
fn watching_backends() -> Vec<(&'static str, Box<dyn Poller>)> {
    Vec::new()
}

/// A child that runs until its stdin is closed.
fn waiting_child() -> Child {
    Command::new("cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

fn pid(child: &Child) -> libc::pid_t {
    child.id() as libc::pid_t
}

/// Whether `pid` has exited (not reaped).
fn has_exited(pid: libc::pid_t) -> bool {
    // SAFETY: waitid only writes into the zeroed siginfo we own.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) == -1 || info.si_pid() != 0
    }
}

#[test]
fn an_exit_is_reported_once_when_it_happens() {
    for (way, reactor) in reactors() {
        let mut child = waiting_child();
        let exits = Arc::new(Exits::default());
        let watch = reactor.watch_exit(pid(&child), exits.clone()).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(exits.seen(), 0, "{way}: reported while it runs");
        drop(child.stdin.take());
        until(way, || exits.seen() == 1);
        // Arming does not watch it again: a process exits once.
        watch.handle().arm();
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(exits.seen(), 1, "{way}: reported twice");
        // Dropped before the reap, as the pid is free once reaped.
        drop(watch);
        child.wait().unwrap();
    }
}

#[test]
fn a_process_that_has_exited_already_is_reported_at_once() {
    for (way, reactor) in reactors() {
        let mut child = waiting_child();
        drop(child.stdin.take());
        until(way, || has_exited(pid(&child)));
        let exits = Arc::new(Exits::default());
        let watch = reactor.watch_exit(pid(&child), exits.clone()).unwrap();
        until(way, || exits.seen() == 1);
        drop(watch);
        child.wait().unwrap();
    }
}

#[test]
fn a_watch_dropped_before_the_exit_reports_nothing() {
    for (way, reactor) in reactors() {
        let mut child = waiting_child();
        let exits = Arc::new(Exits::default());
        let watch = reactor.watch_exit(pid(&child), exits.clone()).unwrap();
        drop(watch);
        drop(child.stdin.take());
        until(way, || has_exited(pid(&child)));
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(exits.seen(), 0, "{way}");
        child.wait().unwrap();
    }
}

/// epoll and poll cannot watch a process: they say so, and keep nothing of the registration
/// (the caller watches the pidfd, or looks now and then).
#[test]
fn a_backend_that_cannot_watch_a_process_says_so() {
    #[allow(unused_mut)] // epoll joins on Linux only
    let mut backends: Vec<(&str, Arc<Reactor>)> =
        vec![("poll", Reactor::with(Box::new(poll::Poll::new().unwrap())))];
    #[cfg(any(target_os = "linux", target_os = "android"))]
    backends.push((
        "epoll",
        Reactor::with(Box::new(super::epoll::Epoll::new().unwrap())),
    ));
    let mut child = waiting_child();
    for (way, reactor) in backends {
        let refused = reactor.watch_exit(pid(&child), Arc::new(Exits::default()));
        let error = refused.err().unwrap_or_else(|| panic!("{way}: accepted"));
        assert_eq!(error.kind(), io::ErrorKind::Unsupported, "{way}");
        assert!(lock(&reactor.state).sources.is_empty(), "{way}: kept it");
    }
    drop(child.stdin.take());
    child.wait().unwrap();
}

#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) mod stand_in {
    use super::super::{poll, Poller};
    use crate::sync::lock;
    use std::collections::HashMap;
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
    use std::sync::Mutex;
    use std::time::Duration;

    /// Each process whose watch was removed, and whether it had been reaped by then (then
    /// another process may have had its pid: kqueue would have removed that one's watch).
    static REMOVED: Mutex<Vec<(libc::pid_t, bool)>> = Mutex::new(Vec::new());

    /// Whether `pid` (our child) has been reaped.
    pub fn reaped(pid: libc::pid_t) -> bool {
        // SAFETY: waitid only writes into the zeroed siginfo we own.
        let rc = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
            libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags)
        };
        rc == -1 && io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD)
    }

    /// Once the watch of `pid` was removed: whether the process had been reaped by then.
    pub fn removed_after_reap(pid: libc::pid_t) -> Option<bool> {
        lock(&REMOVED)
            .iter()
            .find(|&&(removed, _)| removed == pid)
            .map(|&(_, after_reap)| after_reap)
    }

    /// Answers as kqueue does for a process (reported once at its exit, ESRCH once it has
    /// exited), with the process's pidfd in a poll set; descriptors go to that set.
    pub struct PidfdExits {
        fds: poll::Poll,
        pidfds: Mutex<HashMap<u64, OwnedFd>>,
    }

    impl PidfdExits {
        pub fn new() -> PidfdExits {
            PidfdExits {
                fds: poll::Poll::new().unwrap(),
                pidfds: Mutex::new(HashMap::new()),
            }
        }
    }

    impl Poller for PidfdExits {
        fn add(&self, fd: RawFd, key: u64) -> io::Result<()> {
            self.fds.add(fd, key)
        }
        fn arm(&self, fd: RawFd, key: u64) {
            self.fds.arm(fd, key)
        }
        fn disarm(&self, fd: RawFd, key: u64) {
            self.fds.disarm(fd, key)
        }
        fn remove(&self, fd: RawFd, key: u64) {
            self.fds.remove(fd, key)
        }
        fn wait(&self, timeout: Option<Duration>, ready: &mut Vec<u64>) {
            self.fds.wait(timeout, ready)
        }
        fn wake(&self) {
            self.fds.wake()
        }

        fn add_process(&self, pid: libc::pid_t, key: u64) -> io::Result<()> {
            if super::has_exited(pid) {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
            let fd = libc::c_int::try_from(fd).unwrap();
            assert!(fd >= 0, "pidfd_open: {}", io::Error::last_os_error());
            // SAFETY: a descriptor pidfd_open just opened, owned by nobody else.
            let pidfd = unsafe { OwnedFd::from_raw_fd(fd) };
            // One-shot, as EV_ONESHOT: the poll set disarms it once reported.
            self.fds.add(pidfd.as_raw_fd(), key)?;
            lock(&self.pidfds).insert(key, pidfd);
            Ok(())
        }

        fn remove_process(&self, pid: libc::pid_t, key: u64) {
            lock(&REMOVED).push((pid, reaped(pid)));
            if let Some(pidfd) = lock(&self.pidfds).remove(&key) {
                self.fds.remove(pidfd.as_raw_fd(), key);
            }
        }
    }
}
