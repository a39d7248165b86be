//! The reactor's wait on Linux: one epoll set for the process, each descriptor added one-shot
//! (`EPOLLONESHOT`), and an eventfd to wake the wait.

use super::Poller;
use crate::transport::wake::WakePipe;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// The key of the wake eventfd in the set; registrations count up from 0.
const WAKE: u64 = u64::MAX;
/// At most this many events per wait; more wait for the next round.
const EVENTS: usize = 64;

pub struct Epoll {
    set: OwnedFd,
    wake: WakePipe,
}

impl Epoll {
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: epoll_create1 takes flags only and returns a new descriptor or -1.
        let raw = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a descriptor epoll_create1 just opened, owned by nobody else.
        let set = unsafe { OwnedFd::from_raw_fd(raw) };
        let epoll = Epoll {
            set,
            wake: WakePipe::new()?,
        };
        // The wake stays armed (not one-shot): it is drained when it fires.
        epoll.ctl(libc::EPOLL_CTL_ADD, epoll.wake.read_fd(), WAKE, 0)?;
        Ok(epoll)
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, key: u64, extra: libc::c_int) -> io::Result<()> {
        let mut event = libc::epoll_event {
            events: (libc::EPOLLIN | extra) as u32,
            u64: key,
        };
        // SAFETY: changes our set for an open descriptor, with an event the call only reads.
        match unsafe { libc::epoll_ctl(self.set.as_raw_fd(), op, fd, &mut event) } {
            0 => Ok(()),
            _ => Err(io::Error::last_os_error()),
        }
    }
}

impl Poller for Epoll {
    fn add(&self, fd: RawFd, key: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, key, libc::EPOLLONESHOT)
    }

    fn arm(&self, fd: RawFd, key: u64) {
        // Fails only for a descriptor that is not in the set: then there is nothing to arm.
        let _ = self.ctl(libc::EPOLL_CTL_MOD, fd, key, libc::EPOLLONESHOT);
    }

    fn disarm(&self, fd: RawFd, key: u64) {
        // Without EPOLLIN only the descriptor's end or an error is reported (once).
        let mut event = libc::epoll_event {
            events: libc::EPOLLONESHOT as u32,
            u64: key,
        };
        // SAFETY: changes our set for an open descriptor, with an event the call only reads.
        unsafe { libc::epoll_ctl(self.set.as_raw_fd(), libc::EPOLL_CTL_MOD, fd, &mut event) };
    }

    fn remove(&self, fd: RawFd, _key: u64) {
        let _ = self.ctl(libc::EPOLL_CTL_DEL, fd, 0, 0);
    }

    fn wait(&self, timeout: Option<Duration>, ready: &mut Vec<u64>) {
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; EVENTS];
        let timeout_ms = crate::transport::wake::timeout_ms(timeout);
        // SAFETY: `events` has room for the EVENTS events asked for; the set is ours.
        let n = unsafe {
            libc::epoll_wait(
                self.set.as_raw_fd(),
                events.as_mut_ptr(),
                EVENTS as libc::c_int,
                timeout_ms,
            )
        };
        for event in &events[..usize::try_from(n).unwrap_or(0)] {
            match event.u64 {
                WAKE => self.wake.drain(),
                key => ready.push(key),
            }
        }
    }

    fn wake(&self) {
        self.wake.wake();
    }
}
