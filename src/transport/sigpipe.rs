//! Writing to the server's stdin without SIGPIPE killing the host when the server has gone.
//! The library may not change the host's signal dispositions, so each platform uses what it
//! has:
//! - macOS (and iOS): the pipe itself is told never to raise SIGPIPE (`F_SETNOSIGPIPE`), once;
//!   a write to a pipe with no reader then just fails with EPIPE.
//! - Linux and other unix: no such flag exists for pipes, so a write on a host thread blocks
//!   the signal for its duration and consumes a SIGPIPE it raised (`sigtimedwait`) before the
//!   mask is restored. The writer thread blocks it for good instead.

use std::io;
use std::os::fd::RawFd;

/// Sets up the write end of the server's stdin (`fd`) before the first write.
#[cfg(any(target_os = "macos", target_os = "ios"))]
pub fn prepare(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl with an integer argument on a descriptor the caller owns.
    match unsafe { libc::fcntl(fd, libc::F_SETNOSIGPIPE, 1) } {
        -1 => Err(io::Error::last_os_error()),
        _ => Ok(()),
    }
}

#[cfg(not(any(target_os = "macos", target_os = "ios")))]
pub fn prepare(_fd: RawFd) -> io::Result<()> {
    Ok(())
}

/// Runs `write` on a host thread. With `F_SETNOSIGPIPE` set (see [`prepare`]) there is no
/// signal to hold off.
#[cfg(any(target_os = "macos", target_os = "ios"))]
pub fn no_sigpipe<T>(write: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    write()
}

/// Runs `write` on a host thread with SIGPIPE blocked, consuming the SIGPIPE it raised (and
/// only that one: one already pending for the host is left alone) before the mask is restored.
/// Two signal-mask calls per write; a third only where the host itself blocks SIGPIPE.
#[cfg(not(any(target_os = "macos", target_os = "ios")))]
pub fn no_sigpipe<T>(write: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    // SAFETY: plain signal-mask calls on sets we own.
    unsafe {
        let mut sigpipe: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut sigpipe);
        libc::sigaddset(&mut sigpipe, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &sigpipe, &mut old);
        // A SIGPIPE can be pending before our write only if the host blocks it on this thread
        // (an unblocked one would have been delivered): only then is it worth a system call
        // to find out, so that we consume the one our write raised and never the host's.
        let was_pending = libc::sigismember(&old, libc::SIGPIPE) == 1 && {
            let mut pending: libc::sigset_t = std::mem::zeroed();
            libc::sigpending(&mut pending);
            libc::sigismember(&pending, libc::SIGPIPE) == 1
        };
        let result = write();
        if matches!(&result, Err(e) if e.kind() == io::ErrorKind::BrokenPipe) && !was_pending {
            let zero = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            while libc::sigtimedwait(&sigpipe, std::ptr::null_mut(), &zero) == -1
                && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
            {}
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        result
    }
}

/// Whether SIGPIPE's disposition in this process is `SIG_IGN` (a host's promise to check).
pub fn is_ignored() -> bool {
    // SAFETY: sigaction with no new action only reads the current one into `current`.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGPIPE, std::ptr::null(), &mut current) == 0
            && current.sa_sigaction == libc::SIG_IGN
    }
}

/// Blocks SIGPIPE for good on the calling thread (the library's writer thread, ours alone): a
/// SIGPIPE its writes raise stays pending there and goes when the thread ends.
pub fn block_sigpipe() {
    // SAFETY: a signal-mask call on a set we own, for the current thread only.
    unsafe {
        let mut sigpipe: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut sigpipe);
        libc::sigaddset(&mut sigpipe, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &sigpipe, std::ptr::null_mut());
    }
}
