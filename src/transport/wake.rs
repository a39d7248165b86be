//! A self-pipe: lets any thread wake one that is blocked in `poll` on a file descriptor (the
//! stdio reader waiting for the server's stdout), without touching that descriptor. On Linux it
//! is an eventfd, one descriptor for both ends: a pipe's first byte allocates a page for the
//! pipe's buffer and the drain frees it again, each time, where an eventfd only counts.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;

pub struct WakePipe {
    read: OwnedFd,
    /// The write end; `None` for an eventfd (the read end is both).
    write: Option<OwnedFd>,
}

impl WakePipe {
    #[cfg(target_os = "linux")]
    pub fn new() -> io::Result<WakePipe> {
        // SAFETY: eventfd takes two integers and returns a new descriptor or -1.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: eventfd() succeeded, so `fd` is an open descriptor that nothing else owns.
        let read = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(WakePipe { read, write: None })
    }

    #[cfg(not(target_os = "linux"))]
    pub fn new() -> io::Result<WakePipe> {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors pipe() writes.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: pipe() succeeded, so both are open descriptors that nothing else owns.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        for fd in [&read, &write] {
            set_flags(fd.as_raw_fd())?;
        }
        Ok(WakePipe {
            read,
            write: Some(write),
        })
    }

    /// Makes the read end readable. Never blocks: when the pipe is full (the eventfd's count at
    /// its limit), a wake is already due.
    pub fn wake(&self) {
        let fd = self.write.as_ref().unwrap_or(&self.read).as_raw_fd();
        // An eventfd takes an 8-byte count to add; a pipe takes it as 8 bytes, as good as one.
        let one = 1u64.to_ne_bytes();
        // SAFETY: writes 8 bytes from a local to a descriptor we own.
        unsafe { libc::write(fd, one.as_ptr().cast(), one.len()) };
    }

    /// Empties the read end after a wake. A read that returns less than the buffer took all
    /// there was, so the usual wake costs one system call (an eventfd's read always takes all);
    /// a wake written meanwhile only makes a later wake-up early, which every waiter tolerates.
    pub fn drain(&self) {
        let mut sink = [0u8; 64];
        // SAFETY: reads into a local buffer of the given size, from a non-blocking descriptor.
        while unsafe { libc::read(self.read.as_raw_fd(), sink.as_mut_ptr().cast(), sink.len()) }
            == sink.len() as isize
        {}
    }

    pub fn read_fd(&self) -> RawFd {
        self.read.as_raw_fd()
    }
}

/// Makes `fd` non-blocking and close-on-exec (a server we start must not inherit it).
pub fn set_flags(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor the caller owns, with flag arguments only.
    unsafe {
        // Set only what is not set already (the pipes of a server are close-on-exec from
        // the start): each call is a system call, and a connect makes a dozen of these.
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0
            || (flags & libc::O_NONBLOCK == 0
                && libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) < 0)
        {
            return Err(io::Error::last_os_error());
        }
        let fd_flags = libc::fcntl(fd, libc::F_GETFD);
        if fd_flags < 0
            || (fd_flags & libc::FD_CLOEXEC == 0
                && libc::fcntl(fd, libc::F_SETFD, fd_flags | libc::FD_CLOEXEC) < 0)
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A timeout as `poll` and `epoll_wait` take it: whole milliseconds, -1 for none. Rounded up,
/// so a deadline 0.4 ms away is not a busy loop of zero-time waits.
pub fn timeout_ms(timeout: Option<std::time::Duration>) -> i32 {
    match timeout {
        Some(t) => i32::try_from(t.as_micros().div_ceil(1000)).unwrap_or(i32::MAX),
        None => -1,
    }
}

thread_local! {
    /// This thread's wake pipe, made on its first wait for a server (see [`thread_wake`]).
    static THREAD_WAKE: std::cell::OnceCell<Arc<WakePipe>> = const { std::cell::OnceCell::new() };
}

/// The wake pipe of the calling thread: what wakes it while it waits for a server's output,
/// whichever connection that is. One per thread that waits, none per connection; it is closed
/// when the thread ends.
pub fn thread_wake() -> io::Result<Arc<WakePipe>> {
    THREAD_WAKE.with(|cell| {
        if let Some(wake) = cell.get() {
            return Ok(wake.clone());
        }
        let wake = Arc::new(WakePipe::new()?);
        Ok(cell.get_or_init(|| wake).clone())
    })
}

/// Descriptors for the tests of what waits on them (`reactor`, `stdio::stdout_wait`).
#[cfg(test)]
pub(crate) mod test_fds {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    /// A pipe: (read end, write end).
    pub fn pipe() -> (OwnedFd, OwnedFd) {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors pipe() writes.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: both are open descriptors that nothing else owns.
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
    }

    /// Makes `fd`'s reader readable.
    pub fn put_byte(fd: &OwnedFd) {
        // SAFETY: writes one byte from a local to an open descriptor.
        assert_eq!(
            unsafe { libc::write(fd.as_raw_fd(), [7u8].as_ptr().cast(), 1) },
            1
        );
    }
}
