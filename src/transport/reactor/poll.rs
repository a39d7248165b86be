//! The reactor's wait where there is neither epoll nor kqueue (other unix): `poll` on every armed
//! descriptor and a wake pipe. Arming or adding a descriptor wakes the wait, so that the next
//! one includes it.

use super::Poller;
use crate::sync::lock;
use crate::transport::wake::WakePipe;
use std::collections::HashMap;
use std::io;
use std::os::fd::RawFd;
use std::sync::Mutex;
use std::time::Duration;

pub struct Poll {
    /// Every registered descriptor by key, and whether it is armed.
    fds: Mutex<HashMap<u64, (RawFd, bool)>>,
    wake: WakePipe,
}

impl Poll {
    pub fn new() -> io::Result<Poll> {
        Ok(Poll {
            fds: Mutex::new(HashMap::new()),
            wake: WakePipe::new()?,
        })
    }
}

impl Poller for Poll {
    fn add(&self, fd: RawFd, key: u64) -> io::Result<()> {
        lock(&self.fds).insert(key, (fd, true));
        self.wake.wake();
        Ok(())
    }

    fn arm(&self, _fd: RawFd, key: u64) {
        if let Some((_, armed)) = lock(&self.fds).get_mut(&key) {
            *armed = true;
        }
        self.wake.wake();
    }

    fn disarm(&self, _fd: RawFd, key: u64) {
        if let Some((_, armed)) = lock(&self.fds).get_mut(&key) {
            *armed = false;
        }
    }

    fn remove(&self, _fd: RawFd, key: u64) {
        lock(&self.fds).remove(&key);
        // Not polled again: the wait in progress may still report it (its key is gone then).
        self.wake.wake();
    }

    fn wait(&self, timeout: Option<Duration>, ready: &mut Vec<u64>) {
        let (keys, mut fds): (Vec<u64>, Vec<libc::pollfd>) = lock(&self.fds)
            .iter()
            .filter(|(_, &(_, armed))| armed)
            .map(|(&key, &(fd, _))| {
                let pollfd = libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                };
                (key, pollfd)
            })
            .unzip();
        fds.push(libc::pollfd {
            fd: self.wake.read_fd(),
            events: libc::POLLIN,
            revents: 0,
        });
        let timeout_ms = crate::transport::wake::timeout_ms(timeout);
        // SAFETY: `fds` is a valid array of pollfd for the length given.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
        if n <= 0 {
            return;
        }
        let (wake, watched) = fds.split_last().expect("the wake is in the list");
        if wake.revents != 0 {
            self.wake.drain();
        }
        let mut registered = lock(&self.fds);
        for (pollfd, key) in watched.iter().zip(keys) {
            if pollfd.revents == 0 {
                continue;
            }
            // One-shot: disarmed until its owner arms it again.
            if let Some((_, armed)) = registered.get_mut(&key) {
                *armed = false;
                ready.push(key);
            }
        }
    }

    fn wake(&self) {
        self.wake.wake();
    }
}
