//! Writing to the server's stdin without SIGPIPE killing the host when the server has gone.
//! The library may not change the host's signal dispositions, so each platform uses what it
//! has:
//! - macOS (and iOS): the pipe itself is told never to raise SIGPIPE (`F_SETNOSIGPIPE`), once;
//!   a write to a pipe with no reader then just fails with EPIPE.
//! - Linux 6.18 and later: each write says so itself (`pwritev2` with `RWF_NOSIGNAL`), at no
//!   cost. Whether the kernel knows the flag is learnt from the first write (an older kernel
//!   refuses it before writing anything) and remembered for the process.
//! - Older Linux and other unix: a write on a host thread blocks the signal for its duration
//!   and consumes a SIGPIPE it raised (`sigtimedwait`) before the mask is restored: two
//!   signal-mask calls per write. The writer thread blocks it for good instead.

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

/// One `writev` to `fd` (the server's stdin, see [`prepare`]) from a host thread, raising no
/// SIGPIPE in the host. With `F_SETNOSIGPIPE` set there is no signal to hold off.
#[cfg(any(target_os = "macos", target_os = "ios"))]
pub fn writev_from_host(fd: RawFd, slices: &[io::IoSlice<'_>]) -> io::Result<usize> {
    writev(fd, slices)
}

/// One `writev` to `fd` (the server's stdin) from a host thread, raising no SIGPIPE in the
/// host: with `RWF_NOSIGNAL` where the kernel has it, under the signal mask elsewhere.
#[cfg(all(target_os = "linux", any(target_env = "gnu", target_env = "musl")))]
pub fn writev_from_host(fd: RawFd, slices: &[io::IoSlice<'_>]) -> io::Result<usize> {
    use std::sync::atomic::{AtomicU8, Ordering};
    /// What this process knows of the kernel and the flag.
    const NOT_TRIED: u8 = 0;
    const WORKS: u8 = 1;
    const REFUSED: u8 = 2;
    /// Linux's `RWF_NOSIGNAL` (6.18): EPIPE without SIGPIPE, for this write only.
    const RWF_NOSIGNAL: libc::c_int = 0x100;
    static FLAG: AtomicU8 = AtomicU8::new(NOT_TRIED);

    let known = FLAG.load(Ordering::Relaxed);
    if known != REFUSED {
        // SAFETY: IoSlice has the layout of iovec; the slices live for the call. Offset -1:
        // the file position, as writev uses (a pipe has none).
        let n = unsafe {
            libc::pwritev2(
                fd,
                slices.as_ptr().cast(),
                slices.len() as libc::c_int,
                -1,
                RWF_NOSIGNAL,
            )
        };
        let result = match n {
            n if n >= 0 => Ok(n as usize),
            _ => Err(io::Error::last_os_error()),
        };
        // A kernel without the flag (or without pwritev2, or a sandbox that forbids it)
        // refuses before writing a byte: the masked write below does it instead, now and
        // from now on. Once the flag has worked, every error is the write's own.
        let refused = matches!(
            &result,
            Err(e) if matches!(
                e.raw_os_error(),
                Some(libc::EOPNOTSUPP | libc::ENOSYS | libc::EINVAL | libc::EPERM)
            )
        );
        if !refused || known == WORKS {
            if known == NOT_TRIED {
                FLAG.store(WORKS, Ordering::Relaxed);
            }
            return result;
        }
        FLAG.store(REFUSED, Ordering::Relaxed);
    }
    masked(|| writev(fd, slices))
}

/// One `writev` to `fd` from a host thread, raising no SIGPIPE in the host (see [`masked`]).
#[cfg(not(any(
    target_os = "macos",
    target_os = "ios",
    all(target_os = "linux", any(target_env = "gnu", target_env = "musl"))
)))]
pub fn writev_from_host(fd: RawFd, slices: &[io::IoSlice<'_>]) -> io::Result<usize> {
    masked(|| writev(fd, slices))
}

/// One plain `writev()`: for a thread where SIGPIPE cannot reach the host (ours, with it
/// blocked; or a host that promised it is ignored).
pub fn writev(fd: RawFd, slices: &[io::IoSlice<'_>]) -> io::Result<usize> {
    // SAFETY: IoSlice has the layout of iovec; the slices live for the call.
    let n = unsafe { libc::writev(fd, slices.as_ptr().cast(), slices.len() as libc::c_int) };
    match n {
        n if n >= 0 => Ok(n as usize),
        _ => Err(io::Error::last_os_error()),
    }
}

/// Runs `write` on a host thread with SIGPIPE blocked, consuming the SIGPIPE it raised (and
/// only that one: one already pending for the host is left alone) before the mask is restored.
/// Two signal-mask calls per write; a third only where the host itself blocks SIGPIPE.
#[cfg(not(any(target_os = "macos", target_os = "ios")))]
fn masked<T>(write: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
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
