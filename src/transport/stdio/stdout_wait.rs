//! A caller's wait while it reads its own answer: until the server's stdout is readable or
//! the thread's wake pipe has a byte (a cancel, a timeout, close; the server's exit, when the
//! reactor watches it), or, where the caller must watch the exit itself, its pidfd is
//! readable. `poll` on those: nothing of it is kept per connection.

use crate::transport::wake::{self, WakePipe};
use std::os::fd::RawFd;
use std::time::Duration;

/// Waits until one of the descriptors is readable or `timeout` passes (a spurious return is
/// allowed: the caller reads, finds nothing and waits again). Drains the wake pipe when it was
/// the reason. Returns whether the server has exited.
pub fn wait(
    stdout: RawFd,
    wake: &WakePipe,
    exit: Option<RawFd>,
    timeout: Option<Duration>,
) -> bool {
    let pollfd = |fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let mut fds = [
        pollfd(stdout),
        pollfd(wake.read_fd()),
        pollfd(exit.unwrap_or(-1)),
    ];
    // Each descriptor polled costs the wait (a wait queue joined and left): the exit only when
    // the caller must watch it itself.
    let count = if exit.is_some() { 3 } else { 2 };
    // SAFETY: `fds` is a valid array of three pollfd, of which `count` are passed.
    let ready = unsafe { libc::poll(fds.as_mut_ptr(), count, wake::timeout_ms(timeout)) };
    if ready > 0 && fds[1].revents != 0 {
        wake.drain();
    }
    ready > 0 && fds[2].revents != 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::wake::test_fds::{pipe, put_byte};
    use std::os::fd::AsRawFd;
    use std::time::Instant;

    #[test]
    fn it_returns_for_output_for_a_wake_and_for_the_exit_and_times_out_otherwise() {
        let (stdout, server) = pipe();
        let (exit, exiting) = pipe();
        let wake = WakePipe::new().unwrap();
        let (stdout_fd, exit_fd) = (stdout.as_raw_fd(), exit.as_raw_fd());
        let wait = |wake: &WakePipe, timeout| wait(stdout_fd, wake, Some(exit_fd), timeout);
        {
            let way = "poll";
            // Nothing ready: the timeout ends it, and no sooner.
            let start = Instant::now();
            assert!(!wait(&wake, Some(Duration::from_millis(30))), "{way}");
            assert!(
                start.elapsed() >= Duration::from_millis(30),
                "{way}: returned early"
            );

            // A wake: returns at once, not as an exit, and the wake pipe is emptied (the next
            // wait times out again).
            wake.wake();
            assert!(!wait(&wake, Some(Duration::from_secs(10))), "{way}");
            let start = Instant::now();
            wait(&wake, Some(Duration::from_millis(30)));
            assert!(
                start.elapsed() >= Duration::from_millis(30),
                "{way}: wake not drained"
            );

            // Output: returns at once, not as an exit.
            put_byte(&server);
            let start = Instant::now();
            assert!(!wait(&wake, None), "{way}");
            assert!(start.elapsed() < Duration::from_secs(5), "{way}");
            let mut byte = [0u8; 1];
            // SAFETY: reads one byte into a local buffer.
            assert_eq!(
                unsafe { libc::read(stdout.as_raw_fd(), byte.as_mut_ptr().cast(), 1) },
                1
            );
        }
        // The exit: reported as such, by both (the exit descriptor stays readable, as a
        // pidfd does once its process has exited).
        put_byte(&exiting);
        assert!(wait(&wake, None), "the exit was not reported");
        assert!(wait(&wake, None), "the exit was reported once only");
    }
}
