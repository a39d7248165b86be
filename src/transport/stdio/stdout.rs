//! Reading the server's stdout. Whoever holds the baton reads and routes every line:
//! - a caller whose call is the only one in flight takes it and reads its own response, so a
//!   sequential call costs no hand-off between threads (a wake-up of another thread and two
//!   context switches, the largest share of a call's CPU: see docs/benchmarks.md);
//! - otherwise the process's reactor reads (`reactor`): when stdout is readable and nobody
//!   holds the baton, it reads and routes what is there, without ever waiting, and gives the
//!   baton back.
//!
//! The reactor keeps out of a sequential caller's way: stdout is watched one-shot, and once
//! the reactor found the baton held, it leaves stdout unwatched and looks again a grace period
//! later (and again, while calls follow each other), so a caller's next call is neither raced
//! nor costs a system call to tell the reactor anything. What arrives between calls waits at
//! most about two grace periods.
//!
//! A caller blocks in `poll` on stdout, the server's exit and its thread's wake pipe; a cancel,
//! a timeout or close wakes it through that pipe (`wake_reader`).

use super::child::{ExitWatch, EXIT_CHECK_PERIOD};
use super::frames::Frames;
use super::lines::{Line, LineReader};
use super::read_buffer::ReadBuffer;
use super::serial::Serial;
use crate::error::Error;
use crate::sync::{lock, wait};
use crate::transport::reactor::{self, Event, Handle, Reactor, Registration};
use crate::transport::wake::{self, WakePipe};
use std::io::{self, Read};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// How long after a caller lets go the reactor waits before it reads: a sequential caller's
/// next call takes the baton well within it.
const GRACE: Duration = Duration::from_millis(2);

/// A caller that has held the baton this many grace periods running is in a long call: the
/// reactor stops looking and lets the caller's release set its next look. Short calls, the
/// sequential case, never cost the caller that (nor a clock read beyond the release's).
const PARK_AFTER_LOOKS: u32 = 10;

/// At most this many lines are read per turn of the reactor.
const LINES_PER_TURN: usize = 256;

/// How soon after a turn that grew the read buffer the reactor looks whether the connection is
/// idle again, to give the buffer back.
const SHRINK_AFTER: Duration = Duration::from_millis(50);

pub struct StdoutReader {
    baton: Mutex<Baton>,
    /// A caller waits here for the reactor to give the baton up.
    caller_turn: Condvar,
    fd: RawFd,
    /// stdout's registration on the reactor, once registered.
    watch: OnceLock<Handle>,
    /// The stream and the line in progress; only the baton holder locks it.
    io: Mutex<Io>,
    frames: Arc<dyn Frames>,
    /// The server's exit, watched by whoever reads: stdout alone may never end, when a
    /// process the server started holds it open.
    exit: Option<ExitWatch>,
    /// The reactor saw the server exit: a caller that reads, and cannot see the exit in its
    /// own wait (no pidfd), learns it here.
    exit_seen: AtomicBool,
    /// Where the end of stdout is told when the reactor finds it (telling it waits a while for
    /// the exit status and the last stderr lines).
    notices: Arc<Serial>,
    /// The reactor's turn must end at its next line: a lone caller wants the baton
    /// (`yield_wanted`) or stdout is closing. Written under the baton's lock, read without it,
    /// so a turn does not contend with callers for that lock at every line.
    turn_over: AtomicBool,
}

struct Io {
    stream: ReadBuffer<ShortReads>,
    lines: LineReader,
}

/// stdout as the line reader reads it. A read that returned less than it asked for emptied the
/// pipe: the next read, once the lines it brought are routed, would only find nothing. So it
/// is answered `WouldBlock` without a system call and the reader goes straight to its wait
/// (which returns at once if more came meanwhile): one `read` fewer per batch of responses.
/// Any wait clears the mark, so a read after a wait always reads.
struct ShortReads {
    stdout: Box<dyn Read + Send>,
    emptied: bool,
}

impl Read for ShortReads {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if std::mem::take(&mut self.emptied) {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = self.stdout.read(buf)?;
        self.emptied = n > 0 && n < buf.len();
        Ok(n)
    }
}

#[derive(Debug, PartialEq, Clone, Copy)]
enum Holder {
    Nobody,
    Reactor,
    Caller,
}

struct Baton {
    holder: Holder,
    /// A caller waits without reading: the reactor must read as soon as the data is there.
    needed: bool,
    /// A lone caller asked the reactor for the baton, and has not taken it yet.
    yield_wanted: bool,
    released_at: Instant,
    /// How many times a caller has taken the baton: tells one long hold from many short ones.
    takes: u64,
    /// The caller's hold (by its number in `takes`) the reactor saw at its last looks, and how
    /// many looks.
    held_looks: (u64, u32),
    /// stdout is watched by the reactor (not yet disarmed by an event).
    armed: bool,
    /// When the reactor looks again (its timer for stdout), if it will.
    look_due: Option<Instant>,
    /// The wake pipe of the caller that holds the baton.
    reader_wake: Option<Arc<WakePipe>>,
    /// The server has exited: what it wrote is read to the last byte and then reading ends.
    exited: bool,
    /// stdout ended: nobody reads any more.
    ended: bool,
    closing: bool,
    /// How often the reactor looked while a caller held the baton (for tests).
    #[cfg(test)]
    held_looks_total: usize,
}

impl StdoutReader {
    /// `stdout` is made non-blocking; `fd` is its descriptor. With `exit`, reading ends once
    /// the server has exited and what it wrote before is read, whoever still holds stdout.
    /// Nothing reads until [`StdoutReader::register`].
    pub fn new(
        stdout: Box<dyn Read + Send>,
        fd: RawFd,
        max_line_bytes: usize,
        frames: Box<dyn Frames>,
        exit: Option<ExitWatch>,
    ) -> io::Result<StdoutReader> {
        wake::set_flags(fd)?;
        Ok(StdoutReader {
            baton: Mutex::new(Baton {
                holder: Holder::Nobody,
                needed: false,
                yield_wanted: false,
                released_at: Instant::now(),
                takes: 0,
                held_looks: (0, 0),
                armed: true,
                look_due: None,
                reader_wake: None,
                exited: false,
                ended: false,
                closing: false,
                #[cfg(test)]
                held_looks_total: 0,
            }),
            caller_turn: Condvar::new(),
            fd,
            watch: OnceLock::new(),
            io: Mutex::new(Io {
                stream: ReadBuffer::new(ShortReads {
                    stdout,
                    emptied: false,
                }),
                lines: LineReader::new(max_line_bytes),
            }),
            frames: Arc::from(frames),
            exit,
            exit_seen: AtomicBool::new(false),
            notices: Serial::new(1),
            turn_over: AtomicBool::new(false),
        })
    }

    /// Hands stdout and the server's exit to `reactor`: returns their registrations. Reading
    /// stops once they are dropped; the exit's must be dropped before the server is reaped (see
    /// [`Reactor::watch_exit`]).
    pub fn register(
        self: &Arc<Self>,
        reactor: &Arc<Reactor>,
    ) -> io::Result<(Registration, Option<Registration>)> {
        let stdout = reactor.register(Some(self.fd), self.clone())?;
        let _ = self.watch.set(stdout.handle().clone());
        let Some(exit) = &self.exit else {
            return Ok((stdout, None));
        };
        let source = Arc::new(ExitSource(self.clone()));
        let watch = match exit.fd() {
            Some(pidfd) => {
                let watch = reactor.register(Some(pidfd), source)?;
                exit.set_watched_by_reactor();
                watch
            }
            // No pidfd: the reactor watches the process itself where it can (kqueue), else
            // looks now and then.
            None => match reactor.watch_exit(exit.pid(), source.clone()) {
                Ok(watch) => {
                    exit.set_watched_by_reactor();
                    watch
                }
                Err(_) => {
                    let watch = reactor.register(None, source)?;
                    watch.handle().wake_at(Instant::now() + EXIT_CHECK_PERIOD);
                    watch
                }
            },
        };
        Ok((stdout, Some(watch)))
    }

    /// See [`super::Transport::read_here`].
    pub fn read_here(
        &self,
        done: &dyn Fn() -> bool,
        deadline: Option<Instant>,
        alone: bool,
    ) -> bool {
        // Without a wake pipe (no descriptor left) the caller cannot be woken: the reactor reads.
        let wake = wake::thread_wake().ok();
        let alone = alone && wake.is_some();
        let mut baton = self.lock();
        if alone {
            while baton.holder == Holder::Reactor && !baton.ended && !baton.closing {
                // The reactor never waits while it holds the baton: it gives it up at its
                // next line.
                baton.yield_wanted = true;
                self.turn_over.store(true, Ordering::Relaxed);
                baton = wait(&self.caller_turn, baton);
            }
            baton.yield_wanted = false;
            self.turn_over.store(baton.closing, Ordering::Relaxed);
        }
        if baton.ended || baton.closing {
            return false;
        }
        if !alone || baton.holder != Holder::Nobody {
            // Someone else reads for us: the reactor, as soon as the answer is there.
            baton.needed = true;
            if baton.holder == Holder::Nobody && !baton.armed {
                self.look_at(&mut baton, None, Instant::now());
            }
            return false;
        }
        baton.holder = Holder::Caller;
        baton.takes += 1;
        baton.reader_wake = wake.clone();
        if std::mem::take(&mut baton.armed) {
            // The first call of a run: stdout's readiness would wake the reactor for nothing
            // on every answer this caller reads. Once unwatched it stays so while calls follow
            // each other (the reactor looks every grace period meanwhile).
            if let Some(watch) = self.watch.get() {
                watch.disarm();
            }
        }
        drop(baton);
        let _release = Release {
            reader: self,
            caller: true,
        };
        // The caller's request has just gone out, so its answer is rarely in the pipe yet: a
        // first read would mostly find nothing and cost a system call before the wait. Wait
        // first (it returns at once when the server was quicker).
        let wake = wake.expect("a lone caller has a wake pipe");
        self.read_frames(done, deadline, &wake);
        true
    }

    /// Wakes the caller that reads (holds the baton), so it looks at its call again.
    pub fn wake_reader(&self) {
        if let Some(wake) = &self.lock().reader_wake {
            wake.wake();
        }
    }

    /// Ends reading: no caller reads any more, and the reactor reads no more once the
    /// registrations are dropped.
    pub fn close(&self) {
        let mut baton = self.lock();
        baton.closing = true;
        self.turn_over.store(true, Ordering::Relaxed);
        if let Some(wake) = &baton.reader_wake {
            wake.wake();
        }
        drop(baton);
        self.caller_turn.notify_all();
        self.notices.close(crate::transport::THREAD_WAIT_ON_CLOSE);
    }

    /// A caller reads and routes lines until `stop()` holds, the deadline passes or stdout
    /// ends, waiting in `poll` (woken through `wake`). It waits before its first read when
    /// nothing is buffered.
    fn read_frames(&self, stop: &dyn Fn() -> bool, deadline: Option<Instant>, wake: &WakePipe) {
        let mut io = lock(&self.io);
        let Io { stream, lines } = &mut *io;
        let mut wait_first = stream.buffer().is_empty();
        // Set once the server has exited: what it wrote is read to the last byte buffered in
        // the pipe, and then reading ends, whether or not stdout has.
        let mut exited = false;
        loop {
            if stop() {
                return;
            }
            if memchr::memchr(b'\n', stream.buffer()).is_none() {
                // The lines read so far are routed: their hosts are woken before this thread
                // reads the descriptor again or waits (see `deferred_wakes`).
                crate::deferred_wakes::wake_deferred();
            }
            let read = match std::mem::take(&mut wait_first) {
                true => Err(io::ErrorKind::WouldBlock.into()), // straight to the wait below
                false => {
                    // Once the server has exited, read until the pipe itself says it is empty.
                    stream.get_mut().emptied &= !exited;
                    lines.read(stream)
                }
            };
            match read {
                Ok(Line::Complete) => {
                    self.frames.line(lines.line());
                    lines.shrink();
                }
                Ok(Line::TooLong) => self.frames.too_long(),
                Ok(Line::Eof) => return self.end(None, false),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && exited => {
                    return self.end(None, false)
                }
                Err(e)
                    if e.kind() == io::ErrorKind::WouldBlock
                        && self.exit_seen.load(Ordering::Acquire) =>
                {
                    // The reactor saw the exit: read to the last byte without waiting.
                    exited = true;
                    stream.get_mut().emptied = false;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let mut timeout = match deadline {
                        Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                            Some(left) if !left.is_zero() => Some(left),
                            _ => return,
                        },
                        None => None,
                    };
                    let exit = self.exit.as_ref();
                    if let Some(period) = exit.and_then(ExitWatch::check_period) {
                        timeout = Some(timeout.map_or(period, |t| t.min(period)));
                    }
                    // The reactor tells the exit when it watches it: one descriptor less to poll.
                    let exit_fd = exit
                        .filter(|exit| !exit.is_watched_by_reactor())
                        .and_then(ExitWatch::fd);
                    exited = super::stdout_wait::wait(self.fd, wake, exit_fd, timeout)
                        || exit.is_some_and(|e| e.check_period().is_some() && e.has_exited());
                    // After a wait, read (see `ShortReads`).
                    stream.get_mut().emptied = false;
                }
                Err(e) => return self.end(Some(e), false),
            }
        }
    }

    /// The reactor reads and routes what stdout holds now, never waiting: until the pipe is
    /// empty, a lone caller wants the baton, or stdout ends. A turn that finds nothing gives a
    /// grown buffer back; returns whether the buffer is still grown.
    fn read_available(&self, exited: bool) -> bool {
        let mut io = lock(&self.io);
        let Io { stream, lines } = &mut *io;
        // A server that writes without pause: the other connections get their turn first (the
        // release looks again at once, or re-arms stdout, which is still readable).
        for read in 0..LINES_PER_TURN {
            if self.turn_over.load(Ordering::Relaxed) {
                return stream.is_grown();
            }
            if memchr::memchr(b'\n', stream.buffer()).is_none() {
                crate::deferred_wakes::wake_deferred();
            }
            if exited {
                stream.get_mut().emptied = false;
            }
            match lines.read(stream) {
                Ok(Line::Complete) => {
                    self.frames.line(lines.line());
                    lines.shrink();
                }
                Ok(Line::TooLong) => self.frames.too_long(),
                Ok(Line::Eof) => {
                    self.end(None, true);
                    return false;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && exited => {
                    self.end(None, true);
                    return false;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    // The next read after the reactor's next event reads (see `ShortReads`).
                    stream.get_mut().emptied = false;
                    if read == 0 {
                        // Idle: nothing came since the last reader.
                        stream.shrink();
                    }
                    return stream.is_grown();
                }
                Err(e) => {
                    self.end(Some(e), true);
                    return false;
                }
            }
        }
        stream.is_grown()
    }

    /// stdout ended (or reading it failed). Telling the engine waits a while for the exit
    /// status: on the reactor (`queued`) that is a worker's job.
    fn end(&self, error: Option<io::Error>, queued: bool) {
        self.lock().ended = true;
        self.caller_turn.notify_all();
        match queued {
            false => self.frames.ended(error),
            // The end of a server being closed tells nobody anything: no worker for it.
            true if self.frames.is_closing() => {}
            true => {
                let frames = self.frames.clone();
                self.notices.push(move || frames.ended(error));
            }
        }
    }

    /// The server has exited: read what it wrote, then end.
    fn server_exited(&self) {
        self.exit_seen.store(true, Ordering::Release);
        let mut baton = self.lock();
        baton.exited = true;
        baton.needed = true;
        // A caller that reads does not poll the exit the reactor watches: it is told.
        if self
            .exit
            .as_ref()
            .is_some_and(ExitWatch::is_watched_by_reactor)
        {
            if let Some(wake) = &baton.reader_wake {
                wake.wake();
            }
        }
        self.look_at(&mut baton, None, Instant::now());
    }

    /// Sets the reactor's next look at stdout (`handle` on the reactor thread, else the
    /// registration's own).
    fn look_at(&self, baton: &mut Baton, handle: Option<&Handle>, at: Instant) {
        let Some(handle) = handle.or(self.watch.get()) else {
            return;
        };
        baton.look_due = Some(at);
        handle.wake_at(at);
    }

    fn lock(&self) -> MutexGuard<'_, Baton> {
        lock(&self.baton)
    }
}

impl reactor::Source for StdoutReader {
    fn ready(&self, handle: &Handle, event: Event) {
        let mut baton = self.lock();
        match event {
            Event::Readable => baton.armed = false,
            Event::Timer => baton.look_due = None,
        }
        if baton.ended || baton.closing {
            return;
        }
        let now = Instant::now();
        if baton.holder != Holder::Nobody || baton.yield_wanted {
            // A caller reads, or is about to: stdout stays unwatched, and the reactor looks
            // again in a grace period; once one caller has held it for PARK_AFTER_LOOKS of
            // them, not before it lets go (its release sets the next look).
            #[cfg(test)]
            {
                baton.held_looks_total += 1;
            }
            let takes = baton.takes;
            baton.held_looks = match baton.held_looks {
                (hold, looks) if hold == takes => (hold, looks + 1),
                _ => (takes, 1),
            };
            if baton.held_looks.1 <= PARK_AFTER_LOOKS {
                self.look_at(&mut baton, Some(handle), now + GRACE);
            }
            return;
        }
        let due = baton.released_at + GRACE;
        if !baton.needed && !baton.exited && now < due {
            // A caller let go a moment ago: its next call may be on its way.
            if baton.look_due != Some(due) {
                self.look_at(&mut baton, Some(handle), due);
            }
            return;
        }
        baton.holder = Holder::Reactor;
        baton.needed = false;
        let exited = baton.exited;
        drop(baton);
        let _release = Release {
            reader: self,
            caller: false,
        };
        // The completions of one read wake their hosts once, after the last is routed.
        let grown = crate::deferred_wakes::deferring_wakes(|| self.read_available(exited));
        if grown {
            // Look again once the connection may be idle, to give the buffer back.
            let mut baton = self.lock();
            if baton.look_due.is_none() {
                self.look_at(&mut baton, Some(handle), Instant::now() + SHRINK_AFTER);
            }
        }
    }

    fn panicked(&self, error: Error) {
        // Calls must not wait for a reader that is gone: they fail with the INTERNAL_ERROR.
        let first = !std::mem::replace(&mut self.lock().ended, true);
        self.caller_turn.notify_all();
        if first {
            let frames = self.frames.clone();
            self.notices.push(move || frames.failed(error));
        }
    }
}

/// The server's exit, on the reactor: its pidfd, the process itself (kqueue), or a timer.
struct ExitSource(Arc<StdoutReader>);

impl reactor::Source for ExitSource {
    fn ready(&self, handle: &Handle, event: Event) {
        let Some(exit) = &self.0.exit else { return };
        match event == Event::Readable || exit.has_exited() {
            true => self.0.server_exited(),
            false => handle.wake_at(Instant::now() + EXIT_CHECK_PERIOD),
        }
    }

    fn panicked(&self, error: Error) {
        self.0.panicked(error);
    }
}

/// Gives the baton back, also when reading panicked, and makes sure the reactor reads what
/// comes next: bytes already buffered now, and stdout watched again.
struct Release<'a> {
    reader: &'a StdoutReader,
    caller: bool,
}

impl Drop for Release<'_> {
    fn drop(&mut self) {
        let reader = self.reader;
        let buffered = !lock(&reader.io).stream.buffer().is_empty();
        let mut baton = reader.lock();
        let yielded = baton.yield_wanted; // cleared by the caller that takes the baton
        baton.holder = Holder::Nobody;
        if self.caller {
            baton.released_at = Instant::now();
            baton.reader_wake = None;
        }
        baton.needed |= buffered;
        if yielded {
            // A lone caller takes it now; its own release sees to the rest.
            drop(baton);
            reader.caller_turn.notify_all();
            return;
        }
        if baton.ended || baton.closing {
            return;
        }
        if baton.needed && (self.caller || buffered) {
            reader.look_at(&mut baton, None, Instant::now());
        } else if !baton.armed && !self.caller {
            baton.armed = true;
            if let Some(watch) = reader.watch.get() {
                watch.arm();
            }
        } else if !baton.armed && baton.look_due.is_none() {
            let due = baton.released_at + GRACE;
            reader.look_at(&mut baton, None, due);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    /// Frames that keep the lines they are handed.
    struct Recorded(Arc<Mutex<Vec<Vec<u8>>>>);

    impl Frames for Recorded {
        fn line(&self, line: &[u8]) {
            self.0.lock().unwrap().push(line.to_vec());
        }
        fn too_long(&self) {}
        fn ended(&self, _error: Option<io::Error>) {}
    }

    /// Without a pidfd a caller waiting alone for its answer cannot see the server's exit in
    /// its own wait: the reactor, watching the process, tells it, and reading ends once what
    /// the server wrote is read, although a process the server started still holds stdout.
    #[test]
    fn a_caller_without_a_pidfd_is_told_the_exit_by_the_reactor() {
        use std::os::unix::process::CommandExt;
        use std::process::{Command, Stdio};
        let reactor = crate::transport::reactor::exit_tests::watching_exits()
            .expect("a reactor that watches processes");
        let mut server = Command::new("sh")
            .args(["-c", "sleep 30 & echo '{\"last\":1}'; read line"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let stdout = server.stdout.take().unwrap();
        let fd = stdout.as_raw_fd();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let frames = Box::new(Recorded(lines.clone()));
        let exit = Some(ExitWatch::without_pidfd(&server));
        let reader = Arc::new(StdoutReader::new(Box::new(stdout), fd, 1024, frames, exit).unwrap());
        let (stdout_watch, exit_watch) = reader.register(&reactor).unwrap();
        let exit = reader.exit.as_ref().unwrap();
        assert_eq!(exit.check_period(), None, "the reactor does not watch it");

        let (returned, caller_returned) = std::sync::mpsc::channel();
        let caller = reader.clone();
        std::thread::spawn(move || {
            let _ = returned.send(caller.read_here(&|| false, None, true));
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        while reader.lock().holder != Holder::Caller {
            assert!(Instant::now() < deadline, "the caller never took the baton");
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(server.stdin.take()); // the server leaves; `sleep` keeps stdout open
        let outcome = caller_returned.recv_timeout(Duration::from_secs(10));

        drop(exit_watch); // before the reap
        drop(stdout_watch);
        // SAFETY: kill has no memory effects; the group is the server's (not reaped yet).
        unsafe { libc::kill(-(server.id() as libc::pid_t), libc::SIGKILL) };
        server.wait().unwrap();
        assert_eq!(
            outcome,
            Ok(true),
            "the caller was not told the server exited"
        );
        assert_eq!(lines.lock().unwrap().as_slice(), [b"{\"last\":1}".to_vec()]);
    }

    /// A read that came back short answers the next read `WouldBlock` itself (the pipe was just
    /// emptied), and only the next: a full read or a refused one is not taken as empty.
    #[test]
    fn a_short_read_spares_the_next_read_and_only_it() {
        /// Hands out `chunks` one per read, counting the reads that reached it.
        struct Chunks(std::vec::IntoIter<io::Result<Vec<u8>>>, Arc<Mutex<usize>>);
        impl Read for Chunks {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                *self.1.lock().unwrap() += 1;
                let chunk = self.0.next().expect("a chunk for every read")?;
                buf[..chunk.len()].copy_from_slice(&chunk);
                Ok(chunk.len())
            }
        }
        let reads = Arc::new(Mutex::new(0));
        let would_block = || Err(io::ErrorKind::WouldBlock.into());
        let chunks = vec![
            Ok(vec![1; 4]),
            Ok(vec![2; 8]),
            would_block(),
            Ok(vec![3; 2]),
        ];
        let mut stdout = ShortReads {
            stdout: Box::new(Chunks(chunks.into_iter(), reads.clone())),
            emptied: false,
        };
        let mut buf = [0; 8];
        let mut read = |stdout: &mut ShortReads| stdout.read(&mut buf).map_err(|e| e.kind());
        assert_eq!(read(&mut stdout), Ok(4)); // short: the pipe is empty now
        assert_eq!(read(&mut stdout), Err(io::ErrorKind::WouldBlock));
        assert_eq!(
            *reads.lock().unwrap(),
            1,
            "the second read reached the pipe"
        );
        assert_eq!(read(&mut stdout), Ok(8)); // full: there may be more
        assert_eq!(read(&mut stdout), Err(io::ErrorKind::WouldBlock));
        assert_eq!(
            *reads.lock().unwrap(),
            3,
            "a full read was taken as emptying the pipe"
        );
        assert_eq!(read(&mut stdout), Ok(2));
        assert_eq!(*reads.lock().unwrap(), 4);
    }

    /// A caller in a long call holds the baton: the reactor stops looking every grace period
    /// after PARK_AFTER_LOOKS of them (about 150 looks in 300 ms otherwise), and the caller
    /// letting go makes it look again, so what arrives after the call is still read.
    #[test]
    fn the_reactor_leaves_a_long_call_alone_and_reads_after_it() {
        use std::io::Write;
        use std::sync::atomic::{AtomicBool, Ordering};
        let reactor = Reactor::new().unwrap();
        reactor.start().unwrap();
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        let fd = ours.as_raw_fd();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let frames = Box::new(Recorded(lines.clone()));
        let reader = Arc::new(StdoutReader::new(Box::new(ours), fd, 1024, frames, None).unwrap());
        let registrations = reader.register(&reactor).unwrap();
        let done = Arc::new(AtomicBool::new(false));
        let caller = {
            let (reader, done) = (reader.clone(), done.clone());
            std::thread::spawn(move || {
                reader.read_here(&|| done.load(Ordering::SeqCst), None, true)
            })
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while reader.lock().holder != Holder::Caller {
            assert!(Instant::now() < deadline, "the caller never took the baton");
            std::thread::sleep(Duration::from_millis(1));
        }
        // Half a line: the caller reads it and waits on; the reactor saw stdout readable.
        theirs.write_all(b"{\"partial\":").unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let looks = reader.lock().held_looks_total;
        assert!(
            looks < 40,
            "the reactor looked {looks} times during a 300 ms call"
        );
        done.store(true, Ordering::SeqCst);
        reader.wake_reader();
        assert!(caller.join().unwrap(), "the caller read for itself");
        theirs.write_all(b"1}\n{\"after\":1}\n").unwrap();
        while lines.lock().unwrap().len() < 2 {
            assert!(
                Instant::now() < deadline,
                "the lines sent after the long call were never read"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(lines.lock().unwrap()[1], b"{\"after\":1}");
        reader.close();
        drop(registrations);
    }

    /// A large line grows the read buffer; once the connection is idle again the reactor gives
    /// it back, so an idle connection holds a small buffer whatever passed through it.
    #[test]
    fn the_read_buffer_is_given_back_once_a_large_line_has_passed() {
        use std::io::Write;
        let reactor = Reactor::new().unwrap();
        reactor.start().unwrap();
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        let fd = ours.as_raw_fd();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let frames = Box::new(Recorded(lines.clone()));
        let max = 1024 * 1024;
        let reader = Arc::new(StdoutReader::new(Box::new(ours), fd, max, frames, None).unwrap());
        let registrations = reader.register(&reactor).unwrap();
        let writer = std::thread::spawn(move || {
            let mut line = vec![b'x'; 300 * 1024];
            line.push(b'\n');
            theirs.write_all(&line).unwrap();
            theirs
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        while lines.lock().unwrap().is_empty() {
            assert!(Instant::now() < deadline, "the large line was never read");
            std::thread::sleep(Duration::from_millis(1));
        }
        let _theirs = writer.join().unwrap();
        while lock(&reader.io).stream.is_grown() {
            assert!(
                Instant::now() < deadline,
                "the read buffer was not given back"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        reader.close();
        drop(registrations);
    }

    /// A handler that panics on the reactor (a bug of ours, here in routing a line) ends its
    /// own connection with INTERNAL_ERROR; the reactor goes on serving the others.
    #[test]
    fn a_panic_while_the_reactor_reads_fails_that_connection_only() {
        use std::io::Write;
        struct Panicking(Arc<Mutex<Option<Error>>>);
        impl Frames for Panicking {
            fn line(&self, _line: &[u8]) {
                panic!("a routing bug");
            }
            fn too_long(&self) {}
            fn ended(&self, _error: Option<io::Error>) {}
            fn failed(&self, error: Error) {
                *self.0.lock().unwrap() = Some(error);
            }
        }
        let reactor = Reactor::new().unwrap();
        reactor.start().unwrap();
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        let fd = ours.as_raw_fd();
        let failure = Arc::new(Mutex::new(None));
        let frames = Box::new(Panicking(failure.clone()));
        let bad = Arc::new(StdoutReader::new(Box::new(ours), fd, 1024, frames, None).unwrap());
        let _bad = bad.register(&reactor).unwrap();
        theirs.write_all(b"{}\n").unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while failure.lock().unwrap().is_none() {
            assert!(Instant::now() < deadline, "the failure was never reported");
            std::thread::sleep(Duration::from_millis(1));
        }
        let error = failure.lock().unwrap().take().unwrap();
        assert_eq!(error.status, crate::error::Status::InternalError);
        assert!(error.message.contains("a routing bug"), "{error}");
        assert!(
            !bad.read_here(&|| false, None, true),
            "nobody reads any more"
        );

        let (ours, mut theirs) = UnixStream::pair().unwrap();
        let fd = ours.as_raw_fd();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let frames = Box::new(Recorded(lines.clone()));
        let good = Arc::new(StdoutReader::new(Box::new(ours), fd, 1024, frames, None).unwrap());
        let _good = good.register(&reactor).unwrap();
        theirs.write_all(b"{\"ok\":1}\n").unwrap();
        while lines.lock().unwrap().is_empty() {
            assert!(Instant::now() < deadline, "the reactor stopped serving");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}
