//! Starting servers from a thread with a descriptor table of its own (Linux).
//!
//! A new process starts with a copy of its parent's descriptor table, and `exec` then closes
//! every descriptor marked close-on-exec, one by one. In a host with many connections (each
//! stdio client keeps four descriptors) or many sockets of its own, that is most of the cost
//! of starting a server, and it grows with every server started. So servers are started by one
//! library thread, `mcpc-spawn`, that has unshared its descriptor table and closed all of it
//! but the standard three and one end of a socket pair: the server starts from a table of a few
//! entries, whatever the host holds. The pipes to the server are created in that table; their
//! ends the client keeps are then handed over the socket pair (`SCM_RIGHTS`), which installs
//! them in the process's table. The thread ends after a while without work, and starts again
//! for the next server.
//!
//! Where the thread cannot be had (it cannot start, or its table cannot be set up), and for a
//! server that writes to the host's stderr (the thread's copy of fd 2 is the one of its start),
//! the server is started from the caller's thread, as before.

use crate::sync::lock;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use std::sync::mpsc;
use std::sync::{Mutex, TryLockError};
use std::time::Duration;

/// How long the thread waits for the next server to start before it ends.
const KEEP_IDLE: Duration = Duration::from_secs(5);

/// A server to start, and where its outcome goes.
struct Job {
    command: Command,
    outcome: mpsc::Sender<io::Result<Started>>,
}

/// A server started by the thread, its pipe ends taken out (they come over the socket pair),
/// and which ends they are, in the order they come.
struct Started(Child, Vec<End>);

/// The running thread: where jobs go, and our end of the socket pair.
struct Spawner {
    jobs: mpsc::Sender<Job>,
    ours: OwnedFd,
}

/// The thread, if it runs.
enum State {
    Idle,
    Running(Spawner),
    /// It ended; the process's end of its socket is left for the next caller to close (the
    /// thread's table does not hold it).
    Ended(#[allow(dead_code)] OwnedFd),
    /// It could not be set up here (no thread, or no table of its own): servers start from
    /// their caller's thread.
    Unavailable,
}

/// One job at a time: the lock is held from a job's sending to the reception of its
/// descriptors, so they cannot be mistaken for another job's. The thread ends only under it,
/// with no job sent, so a job sent is always taken.
static SPAWNER: Mutex<State> = Mutex::new(State::Idle);

/// Starts `command` from the spawner thread; from this thread where that cannot be.
pub fn spawn(command: Command) -> io::Result<Child> {
    let mut state = lock(&SPAWNER);
    if matches!(*state, State::Idle | State::Ended(_)) {
        *state = match Spawner::start() {
            Ok(spawner) => State::Running(spawner),
            Err(_) => State::Unavailable,
        };
    }
    let State::Running(running) = &*state else {
        drop(state);
        return command_spawn(command);
    };
    let (outcome, told) = mpsc::channel();
    let job = Job { command, outcome };
    if let Err(mpsc::SendError(job)) = running.jobs.send(job) {
        // Gone without ending the way it should (a bug): a new one takes the job.
        *state = State::Idle;
        drop(state);
        return spawn(job.command);
    }
    let Started(mut child, ends) = match told.recv() {
        Ok(outcome) => outcome?,
        Err(_) => {
            *state = State::Idle;
            return Err(io::Error::other("the mcpc-spawn thread ended"));
        }
    };
    let received = receive_fds(running.ours.as_raw_fd(), ends.len());
    drop(state);
    let fds = match received {
        Ok(fds) => fds,
        Err(e) => {
            // The server runs without its pipes: end it (it is ours to reap).
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
    };
    for (end, fd) in ends.into_iter().zip(fds) {
        match end {
            End::Stdin => child.stdin = Some(ChildStdin::from(fd)),
            End::Stdout => child.stdout = Some(ChildStdout::from(fd)),
            End::Stderr => child.stderr = Some(ChildStderr::from(fd)),
        }
    }
    Ok(child)
}

/// One of the pipe ends the client keeps.
#[derive(Clone, Copy)]
enum End {
    Stdin,
    Stdout,
    Stderr,
}

fn command_spawn(mut command: Command) -> io::Result<Child> {
    command.spawn()
}

impl Spawner {
    /// Starts the thread and waits until its table is its own.
    fn start() -> io::Result<Spawner> {
        let mut pair = [0; 2];
        // SAFETY: socketpair writes two descriptors into the array we own.
        let done = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                pair.as_mut_ptr(),
            )
        };
        if done != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: two descriptors socketpair just opened, owned by nobody else.
        let (ours, theirs) =
            unsafe { (OwnedFd::from_raw_fd(pair[0]), OwnedFd::from_raw_fd(pair[1])) };
        let (jobs, next_job) = mpsc::channel::<Job>();
        let (ready, set_up) = mpsc::channel::<io::Result<()>>();
        let their_fd = theirs.as_raw_fd();
        let thread = std::thread::Builder::new()
            .name("mcpc-spawn".into())
            .spawn(move || {
                if let Err(e) = own_table(their_fd) {
                    let _ = ready.send(Err(e));
                    return;
                }
                let _ = ready.send(Ok(()));
                serve(&next_job, their_fd);
                // The thread's table, and `their_fd` in it, go with the thread.
            })?;
        match set_up.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                let _ = thread.join();
                return Err(e);
            }
            Err(_) => return Err(io::Error::other("the mcpc-spawn thread ended at its start")),
        }
        // The thread has its own table now: our table's copy of its end goes (its copy of
        // ours went with the rest of its table).
        drop(theirs);
        Ok(Spawner { jobs, ours })
    }
}

/// Gives this thread a descriptor table of its own, holding only the standard three and
/// `keep`.
fn own_table(keep: RawFd) -> io::Result<()> {
    // SAFETY: unshare takes flags only; CLONE_FILES affects this thread alone.
    if unsafe { libc::unshare(libc::CLONE_FILES) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let keep = keep as libc::c_uint;
    // SAFETY: close_range closes descriptors of this thread's own table (unshared above): the
    // process's descriptors stay open in its table.
    let closed = unsafe {
        (keep <= 3 || libc::syscall(libc::SYS_close_range, 3u32, keep - 1, 0u32) == 0)
            && libc::syscall(libc::SYS_close_range, keep + 1, u32::MAX, 0u32) == 0
    };
    match closed {
        true => Ok(()),
        false => Err(io::Error::last_os_error()),
    }
}

/// The thread's work: each job's server started, the ends the client keeps sent over
/// `socket`, until no job comes for `KEEP_IDLE`.
fn serve(jobs: &mpsc::Receiver<Job>, socket: RawFd) {
    loop {
        let job = match jobs.recv_timeout(KEEP_IDLE) {
            Ok(job) => job,
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
            Err(mpsc::RecvTimeoutError::Timeout) => match end_if_idle(jobs) {
                Some(job) => job,
                None => return,
            },
        };
        start(job, socket);
    }
}

/// Ends the thread's service unless a job is being handed to it: under the lock, so nobody
/// can send one after. A job that came meanwhile is returned; `None` once it has ended.
fn end_if_idle(jobs: &mpsc::Receiver<Job>) -> Option<Job> {
    loop {
        let mut state = match SPAWNER.try_lock() {
            Ok(state) => state,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            // A caller holds it: its job is on the way.
            Err(TryLockError::WouldBlock) => match jobs.recv_timeout(KEEP_IDLE) {
                Ok(job) => return Some(job),
                Err(_) => continue,
            },
        };
        if let Ok(job) = jobs.try_recv() {
            return Some(job);
        }
        if let State::Running(spawner) = std::mem::replace(&mut *state, State::Idle) {
            *state = State::Ended(spawner.ours);
        }
        return None;
    }
}

/// Starts one job's server and hands its pipe ends over `socket`.
fn start(job: Job, socket: RawFd) {
    let Job {
        mut command,
        outcome,
    } = job;
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            let _ = outcome.send(Err(e));
            return;
        }
    };
    let mut ends = Vec::new();
    let mut fds = Vec::new();
    if let Some(stdin) = child.stdin.take() {
        ends.push(End::Stdin);
        fds.push(OwnedFd::from(stdin));
    }
    if let Some(stdout) = child.stdout.take() {
        ends.push(End::Stdout);
        fds.push(OwnedFd::from(stdout));
    }
    if let Some(stderr) = child.stderr.take() {
        ends.push(End::Stderr);
        fds.push(OwnedFd::from(stderr));
    }
    let sent = send_fds(socket, &fds);
    // Closed in this thread's table: the process's table has them now.
    drop(fds);
    match sent {
        Ok(()) => {
            let _ = outcome.send(Ok(Started(child, ends)));
        }
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            let _ = outcome.send(Err(e));
        }
    }
}

/// At most this many descriptors go in one message (stdin, stdout, stderr).
const MAX_FDS: usize = 3;

/// Room for the control message that carries `MAX_FDS` descriptors, in u64s: the buffer must
/// be aligned for `cmsghdr`.
fn control_buffer() -> Vec<u64> {
    // SAFETY: CMSG_SPACE only computes a size.
    let bytes = unsafe { libc::CMSG_SPACE((MAX_FDS * std::mem::size_of::<RawFd>()) as u32) };
    vec![0u64; (bytes as usize).div_ceil(8)]
}

/// The header of a message of one byte (`iov`) with `control_len` bytes of `control`. It points
/// at both: they must outlive its use.
fn message(iov: &mut libc::iovec, control: &mut [u64], control_len: usize) -> libc::msghdr {
    // SAFETY: msghdr is plain data; all zeroes is a valid empty one.
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    message.msg_iov = iov;
    message.msg_iovlen = 1;
    if control_len > 0 {
        message.msg_control = control.as_mut_ptr().cast();
        message.msg_controllen = control_len as _;
    }
    message
}

fn one_byte(byte: &mut [u8; 1]) -> libc::iovec {
    libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    }
}

/// Sends `fds` over `socket` in one message (one byte of data, the descriptors as
/// `SCM_RIGHTS`).
fn send_fds(socket: RawFd, fds: &[OwnedFd]) -> io::Result<()> {
    assert!(fds.len() <= MAX_FDS);
    let (mut byte, mut control) = ([0u8; 1], control_buffer());
    let mut iov = one_byte(&mut byte);
    let data_len = fds.len() * std::mem::size_of::<RawFd>();
    let control_len = match fds.is_empty() {
        true => 0,
        // SAFETY: CMSG_SPACE only computes a size.
        false => unsafe { libc::CMSG_SPACE(data_len as u32) as usize },
    };
    let message = message(&mut iov, &mut control, control_len);
    if control_len > 0 {
        // SAFETY: the control buffer holds one header and `data_len` bytes of data (its size
        // is CMSG_SPACE of MAX_FDS descriptors); the header and data pointers come from the
        // CMSG macros over that buffer.
        unsafe {
            let header = libc::CMSG_FIRSTHDR(&message);
            (*header).cmsg_level = libc::SOL_SOCKET;
            (*header).cmsg_type = libc::SCM_RIGHTS;
            (*header).cmsg_len = libc::CMSG_LEN(data_len as u32) as _;
            let data = libc::CMSG_DATA(header).cast::<RawFd>();
            for (i, fd) in fds.iter().enumerate() {
                data.add(i).write_unaligned(fd.as_raw_fd());
            }
        }
    }
    // SAFETY: the message points at live buffers of the lengths it gives.
    match unsafe { libc::sendmsg(socket, &message, libc::MSG_NOSIGNAL) } {
        -1 => Err(io::Error::last_os_error()),
        _ => Ok(()),
    }
}

/// Receives the `count` descriptors of one message from `socket`, close-on-exec.
fn receive_fds(socket: RawFd, count: usize) -> io::Result<Vec<OwnedFd>> {
    let (mut byte, mut control) = ([0u8; 1], control_buffer());
    let mut iov = one_byte(&mut byte);
    let control_len = control.len() * 8;
    let mut message = message(&mut iov, &mut control, control_len);
    // SAFETY: the message points at live buffers of the lengths it gives.
    let read = unsafe { libc::recvmsg(socket, &mut message, libc::MSG_CMSG_CLOEXEC) };
    if read == -1 {
        return Err(io::Error::last_os_error());
    }
    let mut fds = Vec::new();
    // SAFETY: the CMSG macros walk the control buffer recvmsg filled in, within the length it
    // set; each SCM_RIGHTS descriptor is a new one, ours to own.
    unsafe {
        let mut header = libc::CMSG_FIRSTHDR(&message);
        while !header.is_null() {
            if (*header).cmsg_level == libc::SOL_SOCKET && (*header).cmsg_type == libc::SCM_RIGHTS {
                let data_len = (*header).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                let data = libc::CMSG_DATA(header).cast::<RawFd>();
                for i in 0..data_len / std::mem::size_of::<RawFd>() {
                    fds.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                }
            }
            header = libc::CMSG_NXTHDR(&message, header);
        }
    }
    if message.msg_flags & libc::MSG_CTRUNC != 0 || fds.len() != count {
        return Err(io::Error::other(format!(
            "the mcpc-spawn thread sent {} pipe ends, {count} expected",
            fds.len()
        )));
    }
    Ok(fds)
}
