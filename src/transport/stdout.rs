//! Reading the server's stdout. Whoever holds the baton reads and routes every line:
//! - a caller whose call is the only one in flight takes it and reads its own response, so a
//!   sequential call costs no hand-off between threads (a wake-up of the reader thread and two
//!   context switches, the largest share of a call's CPU: see docs/benchmarks.md);
//! - otherwise the background reader thread reads, as it does whenever nobody waits, after a
//!   short grace period, so that notifications between calls are still read at once.
//!
//! A caller blocks in a wait on stdout, the server's exit and a wake pipe (`StdoutWait`); a cancel, a timeout or close wakes it
//! through the pipe (`waker`). The background thread gives the baton up when a lone caller
//! asks for it.

use super::child::ExitWatch;
use super::lines::{Line, LineReader};
use super::stdio::Frames;
use super::stdout_wait::StdoutWait;
use super::wake::{self, WakePipe};
use super::Waker;
use crate::sync::{lock, wait};
use std::io::{self, BufReader, Read};
use std::os::fd::RawFd;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long after a caller lets go the background thread waits before it reads: a sequential
/// caller's next call takes the baton well within it. Also how often it looks again while a
/// caller reads, for a while. What arrives between calls waits at most about twice this long.
const GRACE: Duration = Duration::from_millis(2);

/// A caller that has held the baton this many grace periods running is in a long call: the
/// background thread stops looking and sleeps until the caller lets go (which then wakes it).
/// Short calls, the sequential case, never cost the caller that wake-up (nor a clock read).
const PARK_AFTER_LOOKS: u32 = 10;

pub struct StdoutReader {
    baton: Mutex<Baton>,
    /// The background thread waits here for the baton.
    background_turn: Condvar,
    /// A caller waits here for the background thread to give the baton up.
    caller_turn: Condvar,
    wake: Arc<WakePipe>,
    /// `wake` as every call's reader waker: made once, shared by cloning.
    waker: Waker,
    /// Waits for stdout, the wake pipe and the server's exit.
    wait: StdoutWait,
    /// The stream and the line in progress; only the baton holder locks it.
    io: Mutex<Io>,
    frames: Box<dyn Frames>,
    /// The server's exit, watched by whoever reads: stdout alone may never end, when a
    /// process the server started holds it open.
    exit: Option<ExitWatch>,
}

struct Io {
    stream: BufReader<ShortReads>,
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
    Background,
    Caller,
}

struct Baton {
    holder: Holder,
    /// A caller waits without reading: the background thread must read now.
    needed: bool,
    /// A lone caller asked the background thread for the baton, and has not taken it yet.
    yield_wanted: bool,
    released_at: Instant,
    /// How many times a caller has taken the baton: tells one long hold from many short ones.
    takes: u64,
    /// The background thread sleeps without a timeout until a caller lets go (see
    /// PARK_AFTER_LOOKS).
    parked: bool,
    /// stdout ended: nobody reads any more.
    ended: bool,
    closing: bool,
    /// How often the background thread has decided to wait (for tests: a signal that it has
    /// looked at the baton, instead of a sleep that hopes it has).
    #[cfg(test)]
    background_waits: usize,
}

impl StdoutReader {
    /// `stdout` is made non-blocking; `fd` is its descriptor. With `exit`, reading ends once
    /// the server has exited and what it wrote before is read, whoever still holds stdout.
    pub fn new(
        stdout: Box<dyn Read + Send>,
        fd: RawFd,
        max_line_bytes: usize,
        frames: Box<dyn Frames>,
        exit: Option<ExitWatch>,
    ) -> io::Result<StdoutReader> {
        wake::set_flags(fd)?;
        let wake = Arc::new(WakePipe::new()?);
        let wait = StdoutWait::new(fd, &wake, exit.as_ref().and_then(ExitWatch::fd));
        let waker: Waker = {
            let wake = wake.clone();
            Arc::new(move || wake.wake())
        };
        Ok(StdoutReader {
            baton: Mutex::new(Baton {
                holder: Holder::Nobody,
                needed: false,
                yield_wanted: false,
                released_at: Instant::now(),
                takes: 0,
                parked: false,
                ended: false,
                closing: false,
                #[cfg(test)]
                background_waits: 0,
            }),
            background_turn: Condvar::new(),
            caller_turn: Condvar::new(),
            wake,
            waker,
            wait,
            io: Mutex::new(Io {
                stream: BufReader::with_capacity(
                    64 * 1024,
                    ShortReads {
                        stdout,
                        emptied: false,
                    },
                ),
                lines: LineReader::new(max_line_bytes),
            }),
            frames,
            exit,
        })
    }

    /// The background reader thread's body: returns when stdout ends or on close.
    pub fn run_background(&self) {
        // The caller's hold (by its number in `takes`) seen at the last looks, and how many.
        let mut held: (u64, u32) = (0, 0);
        loop {
            {
                let mut baton = self.lock();
                loop {
                    if baton.ended || baton.closing {
                        return;
                    }
                    let idle = baton.released_at.elapsed();
                    let free = baton.holder == Holder::Nobody && !baton.yield_wanted;
                    if free && (baton.needed || idle >= GRACE) {
                        break;
                    }
                    // Free but not yet due: wait out the rest of the grace period. Otherwise
                    // (held, or being handed to a caller) look again in a grace period, or,
                    // once one caller has held it for PARK_AFTER_LOOKS of them, sleep until it
                    // lets go.
                    let look_again = match free {
                        true => GRACE.saturating_sub(idle),
                        false => GRACE,
                    };
                    #[cfg(test)]
                    {
                        baton.background_waits += 1;
                    }
                    held = match baton.holder == Holder::Caller {
                        true if held.0 == baton.takes => (held.0, held.1 + 1),
                        true => (baton.takes, 1),
                        false => (0, 0),
                    };
                    if held.1 > PARK_AFTER_LOOKS {
                        // Until the caller lets go: Release wakes a parked thread.
                        baton.parked = true;
                        baton = wait(&self.background_turn, baton);
                        baton.parked = false;
                        continue;
                    }
                    baton = self
                        .background_turn
                        .wait_timeout(baton, look_again)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
                baton.holder = Holder::Background;
                baton.needed = false;
            }
            let _release = Release(self);
            // The completions of one read wake their hosts once, after the last is routed.
            crate::deferred_wakes::deferring_wakes(|| {
                self.read_frames(
                    &|| {
                        let baton = self.lock();
                        baton.yield_wanted || baton.closing
                    },
                    None,
                    false,
                )
            });
        }
    }

    /// See [`super::Transport::read_here`].
    pub fn read_here(
        &self,
        done: &dyn Fn() -> bool,
        deadline: Option<Instant>,
        alone: bool,
    ) -> bool {
        let mut baton = self.lock();
        if alone {
            while baton.holder == Holder::Background && !baton.ended && !baton.closing {
                // Asked again each time round: the background thread may have taken the
                // baton back (for buffered bytes) before this thread got the lock.
                baton.yield_wanted = true;
                self.wake.wake();
                baton = self
                    .caller_turn
                    .wait(baton)
                    .unwrap_or_else(|e| e.into_inner());
            }
            baton.yield_wanted = false;
        }
        if baton.ended || baton.closing {
            return false;
        }
        if !alone || baton.holder != Holder::Nobody {
            // Someone else reads for us: the background thread, now.
            baton.needed = true;
            if baton.holder == Holder::Nobody {
                self.background_turn.notify_one();
            }
            return false;
        }
        baton.holder = Holder::Caller;
        baton.takes += 1;
        drop(baton);
        let _release = Release(self);
        // The caller's request has just gone out, so its answer is rarely in the pipe yet: a
        // first read would mostly find nothing and cost a system call before the wait. Wait
        // first (it returns at once when the server was quicker).
        self.read_frames(done, deadline, true);
        true
    }

    /// Wakes the baton holder from its wait.
    pub fn waker(&self) -> Waker {
        self.waker.clone()
    }

    /// Ends reading for good after the background thread panicked (a bug): the pending and
    /// later calls fail with `reason` instead of waiting for a reader that is gone.
    pub fn fail(&self, reason: &str) {
        self.end(Some(io::Error::other(reason.to_owned())));
    }

    /// Stops the background thread (it returns from `run_background`).
    pub fn close(&self) {
        self.lock().closing = true;
        self.background_turn.notify_all();
        self.caller_turn.notify_all();
        self.wake.wake();
    }

    /// Reads and routes lines until `stop()` holds, the deadline passes or stdout ends. With
    /// `wait_first` and nothing buffered, it waits before its first read.
    fn read_frames(&self, stop: &dyn Fn() -> bool, deadline: Option<Instant>, wait_first: bool) {
        let mut io = lock(&self.io);
        let Io { stream, lines } = &mut *io;
        let mut wait_first = wait_first && stream.buffer().is_empty();
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
                Ok(Line::Eof) => return self.end(None),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && exited => return self.end(None),
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
                    exited = self.wait.wait(&self.wake, timeout)
                        || exit.is_some_and(|e| e.check_period().is_some() && e.has_exited());
                    // After a wait, read (see `ShortReads`).
                    stream.get_mut().emptied = false;
                }
                Err(e) => return self.end(Some(e)),
            }
        }
    }

    fn end(&self, error: Option<io::Error>) {
        self.lock().ended = true;
        self.caller_turn.notify_all();
        self.frames.ended(error);
    }

    fn lock(&self) -> MutexGuard<'_, Baton> {
        lock(&self.baton)
    }
}

/// Gives the baton back, also when reading panicked. Bytes already buffered but not yet read
/// are the background thread's to read now.
struct Release<'a>(&'a StdoutReader);

impl Drop for Release<'_> {
    fn drop(&mut self) {
        let reader = self.0;
        let buffered = !lock(&reader.io).stream.buffer().is_empty();
        let mut baton = reader.lock();
        let yielded = baton.yield_wanted; // cleared by the caller that takes the baton
        baton.holder = Holder::Nobody;
        baton.released_at = Instant::now();
        baton.needed |= buffered;
        if baton.needed || baton.parked {
            reader.background_turn.notify_one();
        }
        if yielded {
            reader.caller_turn.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    struct NoFrames;

    impl Frames for NoFrames {
        fn line(&self, _line: &[u8]) {}
        fn too_long(&self) {}
        fn ended(&self, _error: Option<io::Error>) {}
    }

    /// Frames that keep the lines they are handed.
    struct Recorded(Arc<Mutex<Vec<Vec<u8>>>>);

    impl Frames for Recorded {
        fn line(&self, line: &[u8]) {
            self.0.lock().unwrap().push(line.to_vec());
        }
        fn too_long(&self) {}
        fn ended(&self, _error: Option<io::Error>) {}
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

    /// A caller in a long call holds the baton: the background thread stops looking every grace
    /// period after PARK_AFTER_LOOKS of them (about 150 wake-ups in 300 ms otherwise), and the
    /// caller letting go wakes it, so a line that arrives after the call is still read.
    #[test]
    fn the_background_thread_sleeps_through_a_long_call_and_wakes_when_it_ends() {
        use std::io::Write;
        use std::sync::atomic::{AtomicBool, Ordering};
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        let fd = ours.as_raw_fd();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let frames = Box::new(Recorded(lines.clone()));
        let reader = Arc::new(StdoutReader::new(Box::new(ours), fd, 1024, frames, None).unwrap());
        let background = {
            let reader = reader.clone();
            std::thread::spawn(move || reader.run_background())
        };
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
        let before = reader.lock().background_waits;
        std::thread::sleep(Duration::from_millis(300));
        let waits = reader.lock().background_waits - before;
        assert!(
            waits < 40,
            "the background thread woke {waits} times during a 300 ms call"
        );
        done.store(true, Ordering::SeqCst);
        (reader.waker())();
        assert!(caller.join().unwrap(), "the caller read for itself");
        theirs.write_all(b"{\"after\":1}\n").unwrap();
        while lines.lock().unwrap().is_empty() {
            assert!(
                Instant::now() < deadline,
                "the line sent after the long call was never read"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(lines.lock().unwrap()[0], b"{\"after\":1}");
        reader.close();
        background.join().expect("no panic");
    }

    /// The baton free, a caller's request for it still pending, the grace period long over:
    /// the background thread waits for the caller to take it, without computing a negative rest
    /// of the grace period (an overflow there would panic the reader and leave calls waiting).
    #[test]
    fn the_background_thread_waits_while_a_caller_is_handed_the_baton() {
        let (ours, _theirs) = UnixStream::pair().unwrap();
        let fd = ours.as_raw_fd();
        let reader = StdoutReader::new(Box::new(ours), fd, 1024, Box::new(NoFrames), None).unwrap();
        let reader = Arc::new(reader);
        {
            let mut baton = reader.lock();
            baton.yield_wanted = true;
            baton.released_at = Instant::now() - 10 * GRACE;
        }
        let background = {
            let reader = reader.clone();
            std::thread::spawn(move || reader.run_background())
        };
        // Until the thread has looked at this baton twice (or ended): then it has computed
        // its wait with the grace period long over, which is where the old code overflowed.
        let deadline = Instant::now() + Duration::from_secs(10);
        while reader.lock().background_waits < 2 && !background.is_finished() {
            assert!(
                Instant::now() < deadline,
                "the background thread never waited"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(!background.is_finished(), "it must still be waiting");
        assert_eq!(
            reader.lock().holder,
            Holder::Nobody,
            "the baton is the caller's to take"
        );
        reader.close();
        background.join().expect("no panic");
    }
}
