//! The few things the server does through the operating system rather than std: closing its
//! own stdout, ignoring SIGTERM, starting a detached descendant, and waiting for an HTTP
//! client to hang up. Unix (Linux, macOS) and Windows each get their own version here, so the rest
//! of the server is portable as written.

use std::net::TcpStream;

/// Closes the process's stdout for good: later writes fail (and are ignored by the server).
pub fn close_stdout() {
    #[cfg(unix)]
    // SAFETY: closing our own stdout; later writes fail and are ignored.
    unsafe {
        libc::close(1);
    }
    #[cfg(windows)]
    // SAFETY: GetStdHandle returns the handle std writes through; closing it makes those
    // writes fail, as closing fd 1 does on unix.
    unsafe {
        windows::CloseHandle(windows::GetStdHandle(windows::STD_OUTPUT_HANDLE));
    }
}

/// `--ignore-sigterm`. Windows has no SIGTERM: a client ends a process there with
/// TerminateProcess (or by closing its Job object), which cannot be ignored, so the flag does
/// nothing on Windows.
pub fn ignore_sigterm() {
    #[cfg(unix)]
    // SAFETY: installs the predefined "ignore" disposition; no handler code runs.
    unsafe {
        libc::signal(libc::SIGTERM, libc::SIG_IGN);
    }
}

/// A descendant that keeps the server's stdout and stderr open after the server has gone;
/// returns its pid. Unix: `sleep secs` in a session of its own (setsid), outside the server's
/// process group, inheriting stdin, stdout and stderr: what a daemonizing helper does.
#[cfg(unix)]
pub fn detach_child(secs: u64) -> std::io::Result<u32> {
    use std::os::unix::process::CommandExt;
    let mut command = std::process::Command::new("sleep");
    command.arg(secs.to_string());
    // SAFETY: setsid is async-signal-safe, as required between fork and exec.
    unsafe {
        command.pre_exec(|| match libc::setsid() {
            -1 => Err(std::io::Error::last_os_error()),
            _ => Ok(()),
        });
    }
    Ok(command.spawn()?.id())
}

/// Windows: this server again, idle (its stdin empty, its end ignored), holding the server's
/// stdout and stderr. There is no session to leave: it stays in the server's Job object, which
/// is what tests/windows_job.rs checks that close ends. (`secs` is not used: it lives until
/// the job ends.)
#[cfg(windows)]
pub fn detach_child(_secs: u64) -> std::io::Result<u32> {
    let child = std::process::Command::new(std::env::current_exe()?)
        .arg("--ignore-stdin-eof")
        .stdin(std::process::Stdio::null())
        .spawn()?;
    Ok(child.id())
}

/// Blocks, with no time limit, until the peer hangs up or resets (true) or the connection is
/// readable (false: bytes, or an end of stream that only a peek tells from them; also after a
/// failed or interrupted poll, where the caller's blocking peek does the waiting).
#[cfg(unix)]
pub fn wait_for_peer(connection: &TcpStream) -> bool {
    use std::os::fd::AsRawFd;
    // POLLRDHUP (the peer shut down its side) is Linux's; elsewhere the caller's peek sees it.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    const HANGUP: libc::c_short = libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    const HANGUP: libc::c_short = libc::POLLHUP | libc::POLLERR;
    let mut poll = libc::pollfd {
        fd: connection.as_raw_fd(),
        events: libc::POLLIN | HANGUP,
        revents: 0,
    };
    // SAFETY: one valid pollfd; -1: no time limit.
    let ready = unsafe { libc::poll(&mut poll, 1, -1) };
    ready > 0 && poll.revents & HANGUP != 0
}

#[cfg(windows)]
pub fn wait_for_peer(connection: &TcpStream) -> bool {
    use std::os::windows::io::AsRawSocket;
    let mut poll = windows::WSAPOLLFD {
        fd: connection.as_raw_socket() as usize,
        events: windows::POLLRDNORM,
        revents: 0,
    };
    // SAFETY: one valid WSAPOLLFD, -1: no time limit; std has already started Winsock for
    // the socket.
    let ready = unsafe { windows::WSAPoll(&mut poll, 1, -1) };
    ready > 0 && poll.revents & (windows::POLLHUP | windows::POLLERR) != 0
}

/// The Win32 functions used above, declared here rather than pulling in a bindings crate for
/// four of them (std links kernel32 and ws2_32 already).
#[cfg(windows)]
#[allow(non_snake_case, clippy::upper_case_acronyms)]
mod windows {
    use std::ffi::c_void;

    pub const STD_OUTPUT_HANDLE: u32 = -11i32 as u32;
    pub const POLLRDNORM: i16 = 0x0100;
    pub const POLLHUP: i16 = 0x0002;
    pub const POLLERR: i16 = 0x0001;

    #[repr(C)]
    pub struct WSAPOLLFD {
        pub fd: usize,
        pub events: i16,
        pub revents: i16,
    }

    #[link(name = "kernel32")]
    extern "system" {
        pub fn GetStdHandle(which: u32) -> *mut c_void;
        pub fn CloseHandle(handle: *mut c_void) -> i32;
    }

    #[link(name = "ws2_32")]
    extern "system" {
        pub fn WSAPoll(fds: *mut WSAPOLLFD, count: u32, timeout_ms: i32) -> i32;
    }
}
