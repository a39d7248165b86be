//! The completion thread: where calls started without blocking end.
//!
//! A blocking call waits for its outcome on its caller's thread. A started call has no thread
//! of its own: the engine makes it exactly like a blocking one (`Connection::start`), but its
//! `Call` is given a `notify` hook instead of a waiter. When the call's outcome is decided (the
//! response routed by the reader, a cancel from any thread, close), the hook queues the call's
//! key here; the client's completion thread takes the outcome, finishes the call
//! (`Started::finish`, the same code the blocking path runs) and runs the call's continuation.
//! It also keeps the started calls' timeouts (the same `Timeout` the blocking path uses) and
//! the pauses an operation asks for between its requests, so none is parked per call.
//!
//! "The completion thread" of a client is a strand of the process's completion pool
//! (`pool::completions`, threads named `mcpc-complete`): the client's work runs there one job
//! at a time, in order, as on a thread of its own, but a client holds no thread while it has
//! nothing to complete, so a thousand clients that used the completion API hold a few threads
//! in all. The strand runs while events wait in the client's queue; the process's one clock
//! (`completion_timer`) queues a wake-up when the client's earliest timeout or pause comes due.
//!
//! A continuation may start the next request of a longer operation (a page walk, an
//! `input_required` round, a version retry: see `client::operation`), or deliver the final
//! result to the host. Every operation holds a `Ticket` from `admit` until it is delivered:
//! close stops admitting, ends every call (each then completes here with CLOSED), and waits
//! for the tickets to be given back, so every started operation is delivered exactly once.
//! Close made on this thread (from a completion) drains the queue itself instead of waiting.
//!
//! One hand-off is skipped when it can be: a call whose continuation may run anywhere
//! (`call`'s [`Finish::Inbox`]: the operation ends by pushing to a completion queue, no host
//! code on the way) is not finished on this thread. The thread that routed its response (the
//! transport's reader) hands the host's queue a [`Ready`], and the host's next pop finishes it
//! on the host's thread: the reader goes straight back to reading, no thread is woken but the
//! host's, and what the call allocated on the host's thread is freed there (an allocator's
//! per-thread caches refill only from frees on their own thread). There the continuation runs
//! inside [`inline`]: whatever it does next that may block or call the host (another request,
//! a pause, host code) it hands to this thread instead (see `client::operation`).
//!
//! Nothing runs for a client before its first started call: a client that only blocks never
//! uses the pool.

use super::call::{Notify, Watcher};
use super::completion_timer::{self, Alarm};
use super::timeout::Timeout;
use super::{CallOptions, Connection, RequestBody, Started};
use crate::cancellation::{CancellationToken, HookId};
use crate::error::{Error, Result, Status};
use crate::id_map::IdMap;
use crate::pool::Strand;
use crate::protocol::reply::Reply;
use crate::sync::{lock, wait_until};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use std::cell::Cell;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::Instant;

/// What to do with a started call's result, on the completion thread.
pub type Then = Box<dyn FnOnce(Result<Reply>) + Send>;
/// Work for the completion thread.
pub type Job = Box<dyn FnOnce() + Send>;

/// How many events one run of the strand handles before it lets the pool's other strands in.
const EVENTS_PER_RUN: usize = 64;

/// One client's completion thread. Cloning shares it.
#[derive(Clone, Default)]
pub struct Completer {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    /// Signalled when the last ticket is given back.
    idle: Condvar,
    events: Sender<Event>,
    /// Read by the strand's runs, and by a close made on the strand.
    receiver: Receiver<Event>,
    /// Where the client's completion work runs, one job at a time.
    strand: Strand,
    /// A run is queued on the strand and has not begun reading the events yet.
    scheduled: AtomicBool,
}

impl Default for Shared {
    fn default() -> Self {
        let (events, receiver) = crossbeam_channel::unbounded();
        Shared {
            state: Mutex::default(),
            idle: Condvar::new(),
            events,
            receiver,
            strand: Strand::on(crate::pool::completions()),
            scheduled: AtomicBool::new(false),
        }
    }
}

enum Event {
    /// The call under this key has its outcome.
    Ready(u64),
    Run(Job),
    /// A timeout or a pause may be due.
    Wake,
}

#[derive(Default)]
struct State {
    next_key: u64,
    watched: IdMap<u64, Watched>,
    /// The watched calls' deadlines, earliest first.
    deadlines: BTreeSet<(Instant, u64)>,
    pauses: Vec<Pause>,
    /// Operations admitted and not yet delivered.
    tickets: usize,
    closed: bool,
    /// An operation was admitted once: there may be work on the strand.
    started: bool,
    /// The time the clock will wake the strand at (`None`: it will not): only an earlier
    /// deadline or pause needs another alarm.
    alarm_at: Option<Instant>,
}

/// An operation waiting between two requests.
struct Pause {
    key: u64,
    until: Instant,
    job: Job,
    /// Ends the pause early when the operation's token is cancelled.
    hook: Option<(CancellationToken, HookId)>,
}

struct Watched {
    started: Started,
    connection: Arc<Connection>,
    timeout: Timeout,
    then: Then,
    finish: Finish,
}

/// Where a started call is finished (its outcome taken, its continuation run) once the thread
/// that reads the transport has routed its response. See the module docs.
#[derive(Clone)]
pub enum Finish {
    /// On the completion thread: the continuation may call the host.
    CompletionThread,
    /// The continuation neither blocks nor calls the host: on the thread of the host that takes
    /// the [`Ready`] from this inbox (its completion queue), or on the routing thread if the
    /// inbox refuses it.
    Inbox(Arc<dyn Inbox>),
}

impl Finish {
    /// Whether the continuation may run away from the completion thread.
    pub fn anywhere(&self) -> bool {
        !matches!(self, Finish::CompletionThread)
    }
}

/// Holds answered calls for a host to finish on its own thread (a completion queue).
pub trait Inbox: Send + Sync {
    /// Keeps `ready` until the host takes it; gives it back when it cannot (the host has let
    /// the inbox go).
    fn hold(self: Arc<Self>, ready: Ready) -> std::result::Result<(), Ready>;
}

/// A started call whose response has been routed, to be finished by whoever takes it. Dropped
/// unfinished, it goes to the completion thread, which finishes it: an operation is delivered
/// whatever becomes of its `Ready`.
pub struct Ready {
    shared: Option<Arc<Shared>>,
    key: u64,
}

impl Ready {
    /// Finishes the call and runs its continuation on this thread (inside [`inline`]).
    pub fn finish(mut self) {
        if let Some(shared) = self.shared.take() {
            shared.complete_inline(self.key);
        }
    }
}

impl Drop for Ready {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.take() {
            shared.send(Event::Ready(self.key));
        }
    }
}

thread_local! {
    /// Set while a continuation runs on the thread that routed its call's response.
    static INLINE: Cell<bool> = const { Cell::new(false) };
}

/// Whether this thread is running a continuation away from the completion thread: it must
/// then hand anything that may block or call the host to the completion thread.
pub fn inline() -> bool {
    INLINE.with(Cell::get)
}

/// An operation admitted and not yet delivered; giving it back (dropping it) lets close end.
pub struct Ticket {
    shared: Arc<Shared>,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.tickets -= 1;
        // Only `close` waits for the last ticket, and it sets `closed` (under this lock) first;
        // a notify with nobody waiting would still be a system call, once per window of calls.
        if state.tickets == 0 && state.closed {
            self.shared.idle.notify_all();
        }
    }
}

impl Completer {
    /// Admits one operation. CLOSED once `close` began.
    pub fn admit(&self) -> Result<Ticket> {
        let mut state = self.shared.lock();
        if state.closed {
            return Err(Error::new(Status::Closed, "the client is closed"));
        }
        state.started = true;
        state.tickets += 1;
        Ok(Ticket {
            shared: self.shared.clone(),
        })
    }

    /// Starts a request on `connection`; its result goes to `then` on the completion thread,
    /// or where `finish` says (see [`Finish`]).
    pub fn call(
        &self,
        connection: &Arc<Connection>,
        request: RequestBody,
        opts: CallOptions,
        finish: Finish,
        then: Then,
    ) {
        let key = {
            let mut state = self.shared.lock();
            state.next_key += 1;
            state.next_key
        };
        let watcher: Weak<dyn Watcher> = Arc::downgrade(&self.shared) as Weak<dyn Watcher>;
        let notify = Notify { watcher, key };
        let started = connection.start(request, opts, Some(notify));
        // Finishing a call with its own progress callback waits for that host code.
        let finish = match started.has_own_progress() {
            true => Finish::CompletionThread,
            false => finish,
        };
        let anywhere = finish.anywhere();
        let timeout = Timeout::start(started.options());
        let call = started.call().clone();
        let deadline = timeout.deadline();
        {
            let mut state = self.shared.lock();
            state.watched.insert(
                key,
                Watched {
                    started,
                    connection: connection.clone(),
                    timeout,
                    then,
                    finish,
                },
            );
            if let Some(deadline) = deadline {
                state.deadlines.insert((deadline, key));
                self.shared.set_alarm(&mut state, deadline);
            }
        }
        // An outcome decided before the entry was in the table (a token already cancelled,
        // a closed connection, a fast answer) found no entry: finish it here when it may run
        // anywhere (else a fast answer would wait behind a busy completion thread), or queue
        // it again.
        if call.is_finished() && !(anywhere && self.shared.complete_here(key)) {
            self.send(Event::Ready(key));
        }
    }

    /// Runs `job` on the completion thread once `until` has passed, or at once when
    /// `cancellation` is cancelled (the operation's next request then ends CANCELLED at once)
    /// or the completer closes.
    pub fn after(&self, until: Instant, cancellation: Option<&CancellationToken>, job: Job) {
        // Due already: no need to go through the clock.
        let due = until <= Instant::now();
        let key = {
            let mut state = self.shared.lock();
            state.next_key += 1;
            let key = state.next_key;
            state.pauses.push(Pause {
                key,
                until,
                job,
                hook: None,
            });
            if !due {
                self.shared.set_alarm(&mut state, until);
            }
            key
        };
        if let Some(token) = cancellation {
            let shared = Arc::downgrade(&self.shared);
            // Runs at once (outside our lock) when the token is already cancelled.
            let hook = token.on_cancel(move |_| {
                if let Some(shared) = shared.upgrade() {
                    shared.end_pause(key);
                }
            });
            if let Some(hook) = hook {
                let mut state = self.shared.lock();
                match state.pauses.iter_mut().find(|p| p.key == key) {
                    Some(pause) => pause.hook = Some((token.clone(), hook)),
                    None => {
                        drop(state);
                        token.off_cancel(hook);
                    }
                }
            }
        }
        if due {
            self.send(Event::Wake);
        }
    }

    /// Runs `job` on the completion thread: now if this is it, else queued.
    pub fn run(&self, job: Job) {
        match self.is_current() {
            true => job(),
            false => self.send(Event::Run(job)),
        }
    }

    /// Queues `job` for the completion thread, even from the thread itself (behind what is
    /// queued already).
    pub fn post(&self, job: Job) {
        self.send(Event::Run(job));
    }

    /// Whether this is the client's completion thread (a job of its strand runs here).
    pub fn is_current(&self) -> bool {
        self.shared.strand.is_current()
    }

    /// Admits nothing more, then waits until every admitted operation is delivered (the
    /// caller has ended their calls: they complete with CLOSED) or `deadline`, and for the job
    /// running on the strand then to end. On the completion thread itself, it runs the queued
    /// work here instead.
    /// Returns false when operations were still undelivered at the deadline.
    pub fn close(&self, deadline: Instant) -> bool {
        let started = {
            let mut state = self.shared.lock();
            if state.closed {
                return true;
            }
            state.closed = true;
            // Pauses end now: their next request fails at once, and the operation ends.
            for pause in state.pauses.iter_mut() {
                pause.until = Instant::now();
            }
            // Answered calls waiting in a host's inbox are finished here instead: close does
            // not wait for the host to take them (it may be the host's own thread closing).
            // Whichever finishes a call first does; the other finds it gone.
            let held: Vec<u64> = state
                .watched
                .iter()
                .filter(|(_, w)| matches!(w.finish, Finish::Inbox(_)))
                .filter(|(_, w)| w.started.call().is_finished())
                .map(|(&key, _)| key)
                .collect();
            for key in held {
                let _ = self.shared.events.send(Event::Ready(key));
            }
            state.started
        };
        if !started {
            return true;
        }
        self.send(Event::Wake);
        let all_delivered = match self.is_current() {
            true => self.shared.drain_here(deadline),
            false => {
                let mut state = self.shared.lock();
                while state.tickets > 0 {
                    match wait_until(&self.shared.idle, state, Some(deadline)) {
                        Some(next) => state = next,
                        None => return self.stop(false, deadline),
                    }
                }
                drop(state);
                true
            }
        };
        self.stop(all_delivered, deadline)
    }

    /// Waits (unless this is the strand) until `deadline` for the job running on the strand,
    /// if any, to end: the work queued before close ran before close returns.
    fn stop(&self, all_delivered: bool, deadline: Instant) -> bool {
        if !self.is_current() {
            let (ran, last) = crossbeam_channel::bounded(1);
            if self
                .shared
                .strand
                .submit(move || {
                    let _ = ran.send(());
                })
                .is_ok()
            {
                // Bounded: a completion that never returns is not waited for.
                let _ = last.recv_deadline(deadline);
            }
        }
        all_delivered
    }

    fn send(&self, event: Event) {
        self.shared.send(event);
    }
}

impl Alarm for Shared {
    fn ring(self: Arc<Self>, at: Instant) {
        {
            let mut state = self.lock();
            if state.alarm_at == Some(at) {
                state.alarm_at = None;
            }
        }
        self.send(Event::Wake);
    }
}

impl Watcher for Shared {
    fn decided(self: Arc<Self>, key: u64, answered: bool) {
        if answered && self.complete_here(key) {
            return;
        }
        self.send(Event::Ready(key));
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Queues `event` and makes sure a run of the strand is coming to handle it.
    fn send(self: &Arc<Self>, event: Event) {
        let _ = self.events.send(event);
        self.schedule();
    }

    fn schedule(self: &Arc<Self>) {
        if self.scheduled.swap(true, Ordering::AcqRel) {
            return;
        }
        let shared = self.clone();
        // No thread to run it: the events wait for the next send, which tries again.
        if self.strand.submit(move || shared.run()).is_err() {
            self.scheduled.store(false, Ordering::Release);
        }
    }

    /// Asks the clock to wake the strand at `at`, unless it will already by then.
    fn set_alarm(self: &Arc<Self>, state: &mut State, at: Instant) {
        if state.alarm_at.is_none_or(|set| at < set) {
            state.alarm_at = Some(at);
            let alarm: Weak<dyn Alarm> = Arc::downgrade(self) as Weak<dyn Alarm>;
            completion_timer::ring_at(at, alarm);
        }
    }

    /// A paused operation's token was cancelled: its pause ends now.
    fn end_pause(self: &Arc<Self>, key: u64) {
        let found = {
            let mut state = self.lock();
            state
                .pauses
                .iter_mut()
                .find(|p| p.key == key)
                .map(|pause| pause.until = Instant::now())
                .is_some()
        };
        if found {
            self.send(Event::Wake);
        }
    }

    fn lock_tickets(&self) -> usize {
        self.lock().tickets
    }

    /// One run on the strand: handles the events queued, a few at a time.
    fn run(self: &Arc<Self>) {
        // From here on, what is queued is ours to handle; a send after this queues a new run.
        self.scheduled.swap(false, Ordering::AcqRel);
        for _ in 0..EVENTS_PER_RUN {
            match self.receiver.try_recv() {
                Ok(event) => self.handle(event),
                Err(_) => return,
            }
        }
        // More may wait: behind the other strands in line.
        self.schedule();
    }

    /// Close on the completion thread (a job of the strand): handles events here until every
    /// ticket is back, firing timeouts and pauses as they come due.
    fn drain_here(self: &Arc<Self>, deadline: Instant) -> bool {
        while self.lock_tickets() > 0 && Instant::now() < deadline {
            let until = {
                let state = self.lock();
                [
                    state.deadlines.first().map(|(d, _)| *d),
                    state.pauses.iter().map(|p| p.until).min(),
                ]
                .into_iter()
                .flatten()
                .fold(deadline, Instant::min)
            };
            match self.receiver.recv_deadline(until) {
                Ok(event) => self.handle(event),
                Err(RecvTimeoutError::Timeout) => self.fire_due(),
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        self.lock_tickets() == 0
    }

    /// Handles one event. A panic in a continuation (a Rust completion that panics) ends that
    /// operation only (its ticket is given back as it unwinds); the strand goes on.
    fn handle(self: &Arc<Self>, event: Event) {
        let _ = crate::panic_guard::catch(|| self.handle_inner(event));
    }

    fn handle_inner(self: &Arc<Self>, event: Event) {
        match event {
            Event::Ready(key) => self.complete(key),
            Event::Run(job) => job(),
            Event::Wake => self.fire_due(),
        }
    }

    /// The call under `key` has its outcome (a response routed on this thread, or one decided
    /// before `call` put it in the table): finishes it here if its continuation may run
    /// anywhere. False when the completion thread must do it; true also when the call is not in
    /// the table (yet: `call` looks again once it is; or any more: already finished).
    fn complete_here(self: &Arc<Self>, key: u64) -> bool {
        let finish = self.lock().watched.get(&key).map(|w| w.finish.clone());
        match finish {
            Some(Finish::CompletionThread) => false,
            Some(Finish::Inbox(inbox)) => {
                let ready = Ready {
                    shared: Some(self.clone()),
                    key,
                };
                if let Err(ready) = inbox.hold(ready) {
                    ready.finish();
                }
                true
            }
            None => true,
        }
    }

    /// `complete` away from the completion thread, inside [`inline`].
    fn complete_inline(&self, key: u64) {
        let was = INLINE.with(|inline| inline.replace(true));
        let _ = crate::panic_guard::catch(|| self.complete(key));
        INLINE.with(|inline| inline.set(was));
    }

    /// Finishes the call under `key` if its outcome is decided, and runs its continuation.
    fn complete(&self, key: u64) {
        let watched = {
            let mut state = self.lock();
            let Some(watched) = state.watched.remove(&key) else {
                return; // Already completed (a key can be queued twice).
            };
            match watched.started.call().try_take() {
                Some(outcome) => {
                    if let Some(deadline) = watched.timeout.deadline() {
                        state.deadlines.remove(&(deadline, key));
                    }
                    Some((watched, outcome))
                }
                None => {
                    state.watched.insert(key, watched);
                    None
                }
            }
        };
        if let Some((watched, outcome)) = watched {
            let result = watched.started.finish(&watched.connection, outcome);
            (watched.then)(result);
        }
    }

    /// Cancels the calls whose timeout passed (they complete through `Ready`), runs the pauses
    /// that are over, and sets the alarm for what comes next.
    fn fire_due(self: &Arc<Self>) {
        let now = Instant::now();
        let (expired, pauses) = {
            let mut state = self.lock();
            let mut expired = Vec::new();
            while let Some(&(deadline, key)) = state.deadlines.first() {
                if deadline > now {
                    break;
                }
                state.deadlines.pop_first();
                let Some(watched) = state.watched.get_mut(&key) else {
                    continue;
                };
                let call = watched.started.call().clone();
                match watched.timeout.expired(&call) {
                    Some(reason) => expired.push((call, reason)),
                    None => {
                        if let Some(moved) = watched.timeout.deadline() {
                            state.deadlines.insert((moved, key));
                        }
                    }
                }
            }
            let (due, waiting) = std::mem::take(&mut state.pauses)
                .into_iter()
                .partition::<Vec<_>, _>(|p| p.until <= now);
            state.pauses = waiting;
            let next = [
                state.deadlines.first().map(|(d, _)| *d),
                state.pauses.iter().map(|p| p.until).min(),
            ]
            .into_iter()
            .flatten()
            .min();
            if let Some(next) = next {
                self.set_alarm(&mut state, next);
            }
            (expired, due)
        };
        for (call, reason) in expired {
            // A response that beat the timeout still wins.
            call.cancel(Some(&reason), true);
        }
        for pause in pauses {
            if let Some((token, hook)) = pause.hook {
                token.off_cancel(hook);
            }
            (pause.job)();
        }
    }
}
