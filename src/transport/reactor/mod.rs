//! The process-wide reactor: one thread, `mcpc-reactor`, that watches the descriptors of every
//! stdio connection (stdout, stderr, the server's exit) and runs a handler when one is ready or
//! when a handler's timer comes due. An idle connection so holds no thread of its own. Where
//! the kernel has no descriptor for a process's exit (no pidfd: macOS, the BSDs), kqueue
//! watches the process itself ([`Reactor::watch_exit`]).
//!
//! A registration is one-shot: once its handler was told the descriptor is ready, the
//! descriptor is not watched again until the owner re-arms it ([`Handle::arm`]). A descriptor
//! that a caller reads itself therefore never makes the reactor spin. Each registration also
//! has one timer ([`Handle::wake_at`]); setting it again replaces it.
//!
//! Handlers run on the reactor thread, one at a time: they never block and never call host
//! code (they queue it for a worker). A handler that panics is told so ([`Source::panicked`])
//! and the reactor goes on with the others.

#[cfg(any(target_os = "linux", target_os = "android"))]
mod epoll;
#[cfg(mcpc_kqueue)]
pub(crate) mod kqueue;
mod poll;

#[cfg(test)]
pub(crate) mod exit_tests;

use crate::error::Error;
use crate::sync::{lock, wait};
use std::collections::{BTreeSet, HashMap};
use std::io;
use std::os::fd::RawFd;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

/// Why a handler runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The descriptor is readable, or at its end (it is disarmed now); for a process watched by
    /// [`Reactor::watch_exit`], it has exited.
    Readable,
    /// The registration's timer came due.
    Timer,
}

/// What the reactor runs for a registration.
pub trait Source: Send + Sync {
    /// Runs on the reactor thread: must not block nor call host code.
    fn ready(&self, handle: &Handle, event: Event);
    /// `ready` panicked (a bug): end what the source serves with this INTERNAL_ERROR.
    fn panicked(&self, error: Error);
}

/// How the reactor waits: epoll on Linux, kqueue on macOS and the BSDs, poll elsewhere. Keys
/// name the registrations.
trait Poller: Send + Sync {
    /// Watches `fd` for input, armed, one-shot.
    fn add(&self, fd: RawFd, key: u64) -> io::Result<()>;
    /// Watches `fd` again after an event disarmed it.
    fn arm(&self, fd: RawFd, key: u64);
    /// Stops watching `fd` for input until it is armed again (its end may still be reported).
    fn disarm(&self, fd: RawFd, key: u64);
    fn remove(&self, fd: RawFd, key: u64);
    /// Watches process `pid` until it exits, once: its key is then reported ready like a
    /// descriptor's. `Unsupported` where the backend cannot (epoll, poll: a pidfd is a
    /// descriptor there); ESRCH when the process has exited already (or is exiting).
    fn add_process(&self, _pid: libc::pid_t, _key: u64) -> io::Result<()> {
        Err(io::ErrorKind::Unsupported.into())
    }
    /// Stops watching `pid` (nothing to do once its exit was reported).
    fn remove_process(&self, _pid: libc::pid_t, _key: u64) {}
    /// Waits for events or the timeout, and puts the keys of the ready descriptors in `ready`
    /// (disarming them). A wake-up (`wake`) returns early with none.
    fn wait(&self, timeout: Option<Duration>, ready: &mut Vec<u64>);
    /// Makes `wait` return soon (a timer was set earlier than the one it waits for).
    fn wake(&self);
}

pub struct Reactor {
    poller: Box<dyn Poller>,
    state: Mutex<State>,
    /// Signalled each time a handler has finished running.
    handler_done: Condvar,
    thread: OnceLock<ThreadId>,
}

#[derive(Default)]
struct State {
    sources: HashMap<u64, Entry>,
    /// Every registration's timer, the earliest first.
    timers: BTreeSet<(Instant, u64)>,
    /// The latest the reactor's current wait ends (the earliest timer when it began); `None`
    /// while it waits for descriptors only. A timer set for later needs no wake-up: the
    /// reactor looks at the timers again by then (a connection's idle timer is set anew
    /// after each request).
    wait_ends: Option<Instant>,
    next_key: u64,
    /// The registration whose handler runs now.
    running: Option<u64>,
    /// Threads waiting in `deregister` for that handler to end: only they need `handler_done`
    /// (a notify is a system call even when nobody waits, and a handler runs per event).
    waiting_for_handler: usize,
    /// Process watches whose process had exited before it could be watched: reported ready at
    /// the reactor's next round.
    exited_already: Vec<u64>,
}

struct Entry {
    source: Arc<dyn Source>,
    watched: Watched,
    timer: Option<Instant>,
}

/// What a registration watches besides its timer.
#[derive(Clone, Copy)]
enum Watched {
    Nothing,
    Fd(RawFd),
    /// A process's exit ([`Reactor::watch_exit`]).
    Process(libc::pid_t),
}

/// Names one registration, to arm it and set its timer (from any thread). Cheap to clone; it
/// does not keep the registration (see [`Registration`]).
#[derive(Clone)]
pub struct Handle {
    reactor: Arc<Reactor>,
    key: u64,
    watched: Watched,
}

/// A registration: deregistered when dropped (or by [`Registration::deregister`]).
pub struct Registration {
    handle: Handle,
}

impl Reactor {
    /// The process's reactor, its thread started on first use.
    pub fn shared() -> io::Result<Arc<Reactor>> {
        static SHARED: OnceLock<Arc<Reactor>> = OnceLock::new();
        static STARTING: Mutex<()> = Mutex::new(());
        if let Some(reactor) = SHARED.get() {
            return Ok(reactor.clone());
        }
        let _one_at_a_time = lock(&STARTING);
        if let Some(reactor) = SHARED.get() {
            return Ok(reactor.clone());
        }
        let reactor = Reactor::new()?;
        reactor.start()?;
        Ok(SHARED.get_or_init(|| reactor).clone())
    }

    /// A reactor of its own, not started (tests; the process uses [`Reactor::shared`]).
    pub fn new() -> io::Result<Arc<Reactor>> {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if let Ok(poller) = epoll::Epoll::new() {
            return Ok(Reactor::with(Box::new(poller)));
        }
        #[cfg(mcpc_kqueue)]
        if let Ok(poller) = kqueue::Kqueue::new() {
            return Ok(Reactor::with(Box::new(poller)));
        }
        Ok(Reactor::with(Box::new(poll::Poll::new()?)))
    }

    fn with(poller: Box<dyn Poller>) -> Arc<Reactor> {
        Arc::new(Reactor {
            poller,
            state: Mutex::new(State::default()),
            handler_done: Condvar::new(),
            thread: OnceLock::new(),
        })
    }

    /// Starts the reactor thread. It runs for the rest of the process.
    pub fn start(self: &Arc<Self>) -> io::Result<()> {
        let reactor = self.clone();
        let thread = crate::panic_guard::spawn("mcpc-reactor", move || reactor.run(), |_| ())?;
        let _ = self.thread.set(thread.thread().id());
        Ok(())
    }

    /// Watches `fd` (armed) for `source`; with `None`, the registration has a timer only. The
    /// descriptor must stay open until the registration is dropped.
    pub fn register(
        self: &Arc<Self>,
        fd: Option<RawFd>,
        source: Arc<dyn Source>,
    ) -> io::Result<Registration> {
        let watched = fd.map_or(Watched::Nothing, Watched::Fd);
        let key = self.insert(watched, source);
        if let Some(fd) = fd {
            if let Err(e) = self.poller.add(fd, key) {
                self.forget(key);
                return Err(e);
            }
        }
        Ok(self.registration(key, watched))
    }

    /// Runs `source` with [`Event::Readable`] once process `pid` (a child not reaped yet) has
    /// exited, also when it has already. `Unsupported` where the backend cannot watch a process
    /// (then its pidfd, or a look now and then, tells). The registration must be dropped before
    /// the child is reaped: a watch names the process by its pid, which is free for another
    /// process once reaped.
    pub fn watch_exit(
        self: &Arc<Self>,
        pid: libc::pid_t,
        source: Arc<dyn Source>,
    ) -> io::Result<Registration> {
        let watched = Watched::Process(pid);
        let key = self.insert(watched, source);
        match self.poller.add_process(pid, key) {
            Ok(()) => {}
            // Exited (or exiting) already: the kernel has nothing left to watch.
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {
                lock(&self.state).exited_already.push(key);
                self.poller.wake();
            }
            Err(e) => {
                self.forget(key);
                return Err(e);
            }
        }
        Ok(self.registration(key, watched))
    }

    /// Enters `source` under a new key (the poller is not told yet).
    fn insert(&self, watched: Watched, source: Arc<dyn Source>) -> u64 {
        let mut state = lock(&self.state);
        let key = state.next_key;
        state.next_key += 1;
        state.sources.insert(
            key,
            Entry {
                source,
                watched,
                timer: None,
            },
        );
        key
    }

    /// Takes back an entry the poller refused.
    fn forget(&self, key: u64) {
        let entry = lock(&self.state).sources.remove(&key);
        // Outside the lock: the source's drop may deregister others.
        drop(entry);
    }

    fn registration(self: &Arc<Self>, key: u64, watched: Watched) -> Registration {
        Registration {
            handle: Handle {
                reactor: self.clone(),
                key,
                watched,
            },
        }
    }

    fn on_reactor_thread(&self) -> bool {
        self.thread.get() == Some(&std::thread::current().id())
    }

    fn run(self: &Arc<Self>) {
        let mut ready = Vec::new();
        let mut due = Vec::new();
        loop {
            let timeout = {
                let mut state = lock(&self.state);
                state.wait_ends = state.timers.first().map(|&(at, _)| at);
                state
                    .wait_ends
                    .map(|at| at.saturating_duration_since(Instant::now()))
            };
            ready.clear();
            self.poller.wait(timeout, &mut ready);
            due.clear();
            {
                let mut state = lock(&self.state);
                ready.append(&mut state.exited_already);
                let now = Instant::now();
                while let Some(&(at, key)) = state.timers.first() {
                    if at > now {
                        break;
                    }
                    state.timers.pop_first();
                    if let Some(entry) = state.sources.get_mut(&key) {
                        entry.timer = None;
                    }
                    due.push(key);
                }
            }
            for &key in &ready {
                self.dispatch(key, Event::Readable);
            }
            for &key in &due {
                self.dispatch(key, Event::Timer);
            }
        }
    }

    /// Runs the handler of `key`, unless it was deregistered meanwhile.
    fn dispatch(self: &Arc<Self>, key: u64, event: Event) {
        let (source, watched) = {
            let mut state = lock(&self.state);
            let Some(entry) = state.sources.get(&key) else {
                return;
            };
            let found = (entry.source.clone(), entry.watched);
            state.running = Some(key);
            found
        };
        let handle = Handle {
            reactor: self.clone(),
            key,
            watched,
        };
        if let Err(error) = crate::panic_guard::catch(|| source.ready(&handle, event)) {
            let _ = crate::panic_guard::catch(|| source.panicked(error));
        }
        let waiters = {
            let mut state = lock(&self.state);
            state.running = None;
            state.waiting_for_handler
        };
        if waiters > 0 {
            self.handler_done.notify_all();
        }
        // The source's last reference may go here, outside the lock (its drop may deregister).
        drop(source);
    }
}

impl Handle {
    /// Watches the descriptor again after an event disarmed it (no effect without one; a
    /// process exits once).
    pub fn arm(&self) {
        if let Watched::Fd(fd) = self.watched {
            self.reactor.poller.arm(fd, self.key);
        }
    }

    /// Stops watching the descriptor until [`Handle::arm`]: its owner reads it meanwhile.
    pub fn disarm(&self) {
        if let Watched::Fd(fd) = self.watched {
            self.reactor.poller.disarm(fd, self.key);
        }
    }

    /// Runs the handler with [`Event::Timer`] at `at` (replacing the timer set before).
    pub fn wake_at(&self, at: Instant) {
        let earliest = {
            let mut state = lock(&self.reactor.state);
            let State {
                sources,
                timers,
                wait_ends,
                ..
            } = &mut *state;
            let Some(entry) = sources.get_mut(&self.key) else {
                return;
            };
            if let Some(old) = entry.timer.replace(at) {
                timers.remove(&(old, self.key));
            }
            timers.insert((at, self.key));
            let wakes_in_time = wait_ends.is_some_and(|ends| ends <= at);
            timers.first() == Some(&(at, self.key)) && !wakes_in_time
        };
        // The reactor waits past this timer (for a later one, or none): tell it, unless it is
        // the caller (it looks at the timers again before it waits).
        if earliest && !self.reactor.on_reactor_thread() {
            self.reactor.poller.wake();
        }
    }

    /// Runs the handler with [`Event::Timer`] as soon as the reactor can.
    pub fn wake_now(&self) {
        self.wake_at(Instant::now());
    }
}

impl Registration {
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Stops watching: once this returns, the handler is not running and will not run again.
    /// On the reactor thread (from a handler) it does not wait for the handler that calls it.
    /// Later calls do nothing.
    pub fn deregister(&self) {
        let handle = &self.handle;
        let reactor = &handle.reactor;
        let mut state = lock(&reactor.state);
        let Some(entry) = state.sources.remove(&handle.key) else {
            return;
        };
        if let Some(at) = entry.timer {
            state.timers.remove(&(at, handle.key));
        }
        match handle.watched {
            Watched::Nothing => {}
            Watched::Fd(fd) => reactor.poller.remove(fd, handle.key),
            Watched::Process(pid) => reactor.poller.remove_process(pid, handle.key),
        }
        if !reactor.on_reactor_thread() {
            while state.running == Some(handle.key) {
                state.waiting_for_handler += 1;
                state = wait(&reactor.handler_done, state);
                state.waiting_for_handler -= 1;
            }
        }
        drop(state);
        // Outside the lock: the source's drop may deregister others.
        drop(entry);
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.deregister();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::wake::test_fds::{pipe, put_byte};
    use std::os::fd::AsRawFd;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    /// Each way the reactor waits here, started: epoll (Linux) or kqueue (macOS, the BSDs), and
    /// poll.
    fn reactors() -> Vec<(&'static str, Arc<Reactor>)> {
        let mut all = vec![("poll", Reactor::with(Box::new(poll::Poll::new().unwrap())))];
        #[cfg(any(target_os = "linux", target_os = "android"))]
        all.push((
            "epoll",
            Reactor::with(Box::new(epoll::Epoll::new().unwrap())),
        ));
        #[cfg(mcpc_kqueue)]
        all.push((
            "kqueue",
            Reactor::with(Box::new(kqueue::Kqueue::new().unwrap())),
        ));
        for (_, reactor) in &all {
            reactor.start().unwrap();
        }
        all
    }

    /// Counts its events; optionally sleeps in the handler or panics.
    #[derive(Default)]
    struct Counter {
        readable: AtomicUsize,
        timers: AtomicUsize,
        running: AtomicBool,
        slow: AtomicBool,
        panic: AtomicBool,
        panicked: Mutex<Option<Error>>,
    }

    impl Source for Counter {
        fn ready(&self, _handle: &Handle, event: Event) {
            self.running.store(true, Ordering::SeqCst);
            if self.slow.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(200));
            }
            self.running.store(false, Ordering::SeqCst);
            if self.panic.load(Ordering::SeqCst) {
                panic!("a handler bug");
            }
            match event {
                Event::Readable => self.readable.fetch_add(1, Ordering::SeqCst),
                Event::Timer => self.timers.fetch_add(1, Ordering::SeqCst),
            };
        }

        fn panicked(&self, error: Error) {
            *self.panicked.lock().unwrap() = Some(error);
        }
    }

    /// Waits (10 s at most, else fails) until `condition` holds. Also the exit tests'.
    pub(super) fn until(what: &str, condition: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !condition() {
            assert!(Instant::now() < deadline, "never: {what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn an_event_is_delivered_once_until_the_descriptor_is_armed_again() {
        for (way, reactor) in reactors() {
            let (read, write) = pipe();
            let counter = Arc::new(Counter::default());
            let registration = reactor
                .register(Some(read.as_raw_fd()), counter.clone())
                .unwrap();
            put_byte(&write);
            until(way, || counter.readable.load(Ordering::SeqCst) == 1);
            // Still readable (nobody read the byte), but disarmed: no second event.
            std::thread::sleep(Duration::from_millis(50));
            assert_eq!(counter.readable.load(Ordering::SeqCst), 1, "{way}: spun");
            registration.handle().arm();
            until(way, || counter.readable.load(Ordering::SeqCst) == 2);
            registration.deregister();
        }
    }

    #[test]
    fn a_disarmed_descriptor_is_not_reported_until_armed() {
        for (way, reactor) in reactors() {
            let (read, write) = pipe();
            let counter = Arc::new(Counter::default());
            let registration = reactor
                .register(Some(read.as_raw_fd()), counter.clone())
                .unwrap();
            registration.handle().disarm();
            put_byte(&write);
            std::thread::sleep(Duration::from_millis(50));
            assert_eq!(counter.readable.load(Ordering::SeqCst), 0, "{way}");
            registration.handle().arm();
            until(way, || counter.readable.load(Ordering::SeqCst) == 1);
        }
    }

    #[test]
    fn a_timer_runs_the_handler_once_at_its_time_and_a_new_one_replaces_it() {
        for (way, reactor) in reactors() {
            let counter = Arc::new(Counter::default());
            let registration = reactor.register(None, counter.clone()).unwrap();
            let start = Instant::now();
            registration
                .handle()
                .wake_at(start + Duration::from_secs(3600));
            registration
                .handle()
                .wake_at(start + Duration::from_millis(30));
            until(way, || counter.timers.load(Ordering::SeqCst) == 1);
            assert!(start.elapsed() >= Duration::from_millis(30), "{way}: early");
            std::thread::sleep(Duration::from_millis(50));
            assert_eq!(counter.timers.load(Ordering::SeqCst), 1, "{way}");
            registration.handle().wake_now();
            until(way, || counter.timers.load(Ordering::SeqCst) == 2);
        }
    }

    /// A timer set for after the one the reactor waits for wakes nobody: it still runs, also
    /// when the earlier one was removed meanwhile.
    #[test]
    fn a_later_timer_runs_also_when_the_earlier_one_is_gone() {
        for (way, reactor) in reactors() {
            let early = Arc::new(Counter::default());
            let late = Arc::new(Counter::default());
            let early_registration = reactor.register(None, early.clone()).unwrap();
            let late_registration = reactor.register(None, late.clone()).unwrap();
            let start = Instant::now();
            early_registration
                .handle()
                .wake_at(start + Duration::from_millis(30));
            // Let the reactor begin its wait for the early timer.
            std::thread::sleep(Duration::from_millis(10));
            late_registration
                .handle()
                .wake_at(start + Duration::from_millis(60));
            early_registration.deregister();
            until(way, || late.timers.load(Ordering::SeqCst) == 1);
            assert!(start.elapsed() >= Duration::from_millis(60), "{way}: early");
            assert_eq!(early.timers.load(Ordering::SeqCst), 0, "{way}");
        }
    }

    #[test]
    fn deregistering_waits_for_the_running_handler_and_no_event_follows() {
        for (way, reactor) in reactors() {
            let (read, write) = pipe();
            let counter = Arc::new(Counter::default());
            counter.slow.store(true, Ordering::SeqCst);
            let registration = reactor
                .register(Some(read.as_raw_fd()), counter.clone())
                .unwrap();
            put_byte(&write);
            until(way, || counter.running.load(Ordering::SeqCst));
            registration.deregister();
            assert!(
                !counter.running.load(Ordering::SeqCst),
                "{way}: deregister returned while the handler ran"
            );
            let seen = counter.readable.load(Ordering::SeqCst);
            registration.handle().arm();
            registration.handle().wake_now();
            std::thread::sleep(Duration::from_millis(50));
            assert_eq!(counter.readable.load(Ordering::SeqCst), seen, "{way}");
            assert_eq!(counter.timers.load(Ordering::SeqCst), 0, "{way}");
        }
    }

    #[test]
    fn a_panicking_handler_is_told_and_the_reactor_goes_on() {
        for (way, reactor) in reactors() {
            let bad = Arc::new(Counter::default());
            bad.panic.store(true, Ordering::SeqCst);
            let _bad = reactor.register(None, bad.clone()).unwrap();
            _bad.handle().wake_now();
            until(way, || bad.panicked.lock().unwrap().is_some());
            let error = bad.panicked.lock().unwrap().take().unwrap();
            assert_eq!(error.status, crate::error::Status::InternalError, "{way}");
            let good = Arc::new(Counter::default());
            let registration = reactor.register(None, good.clone()).unwrap();
            registration.handle().wake_now();
            until(way, || good.timers.load(Ordering::SeqCst) == 1);
        }
    }
}
