//! One request's exchange, run on the caller's thread (a blocking call) or on a worker: POST
//! it, read the answer (one JSON body, or an SSE stream resumed by GET if it drops early), and
//! hand every message to the engine. On the caller's thread, what follows the response on its
//! stream waits parked (`drain_parked`; where it cannot, a worker reads it: `drain_rest`), so
//! the caller returns at its answer and the connection still goes back to the pool. On a worker, a stream with nothing to read for now
//! waits parked (`quiet_reply`), its reader a small owned state ([`Reply`], [`Quiet`]). Also
//! the exchanges that answer nothing: notification POSTs and the session DELETE.

use super::auth;
use super::connector::{Exchange, Watched};
use super::endpoint::{
    content_type, discard_body, events_of, header, open_stream, post_authorized, read_limited,
    request_error, status_error, unsupported_content_type, Events,
};
use super::headers::{self, Headers, MessageInfo};
use super::legacy_sse;
use super::parking;
use super::sse::SseError;
use super::{Parked, Session, Shared, DRAIN_AFTER_RESPONSE, NOTIFY_TIMEOUT};
use crate::error::{Error, Result, Status};
use crate::protocol::jsonrpc::{self, Incoming};
use crate::protocol::methods;
use std::cell::Cell;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use ureq::Body;

/// SEP-1699: the delay before resuming when the server named none, and the least we wait.
const DEFAULT_RETRY: Duration = Duration::from_millis(1000);
const MIN_RETRY: Duration = Duration::from_millis(100);
/// Resumptions in a row that bring nothing new before we give up.
const MAX_RESUME_ATTEMPTS: u32 = 2;
/// How long a caller that has its answer waits for more of the stream before it leaves the
/// rest to a worker: not at all. What has arrived (often the stream's end) it reads; when
/// ureq already holds the end, the worker reads it at once, and the next request waits for
/// that (`DRAIN_WAIT`) so it reuses the connection. Any wait here is paid by every call, and
/// buys little: the end is mostly in ureq's buffer, not in the socket (docs/benchmarks.md).
const END_WITHIN: Duration = Duration::ZERO;
/// How long a worker waits in a read for more of a stream before it parks the stream: a short
/// grace, so that an answer that follows at once costs no turn through the reactor.
const PARK_AFTER: Duration = Duration::from_millis(1);

/// Runs a request's exchange. Failures go to the engine, unless the exchange was aborted: then
/// the call is already over, and its thread just goes on. With `on_caller`, the rest of the
/// stream after the response is handed to a worker; returns true when it was, or when the
/// stream was handed to `park` (`quiet_reply::park`: whoever reads it last then ends the
/// exchange).
#[allow(clippy::too_many_arguments)] // one request's parts, as the transport holds them
pub(super) fn run(
    shared: &Arc<Shared>,
    exchange: &Arc<Exchange>,
    id: i64,
    frame: &str,
    info: MessageInfo,
    routing: Headers,
    on_caller: bool,
    park: impl FnOnce(Reply, Quiet),
) -> bool {
    let _entered = exchange.enter();
    let mut reply = Reply {
        shared: shared.clone(),
        exchange: exchange.clone(),
        id,
        info,
        modern: false,
        answered: false,
        on_caller,
        handed_off: false,
        drains: false,
    };
    match reply.run(frame, routing) {
        Ok(None) => reply.handed_off,
        Ok(Some(quiet)) => {
            park(reply, quiet);
            true
        }
        Err(error) => {
            reply.failed(error);
            reply.handed_off
        }
    }
}

/// Reading the answer to one request: what it needs and what it learned so far, owned, so
/// that a parked stream's reader can be taken up again by another thread.
pub(super) struct Reply {
    shared: Arc<Shared>,
    exchange: Arc<Exchange>,
    id: i64,
    info: MessageInfo,
    modern: bool,
    /// The response for our id has been delivered.
    answered: bool,
    /// Running on the caller's thread: once answered, the rest of the stream is a worker's.
    on_caller: bool,
    /// The rest of the stream went to a worker (which ends the exchange).
    handed_off: bool,
    /// The rest of the stream, after the caller's answer, waits parked (`drain_parked`).
    drains: bool,
}

/// A stream with nothing to read for now, on a worker: parked until its socket is readable.
pub(super) struct Quiet {
    pub events: Events,
    pub state: StreamState,
    /// Its connection, for the reactor to watch.
    pub watched: Watched,
}

/// How far following a stream went.
enum Followed {
    Ended(StreamEnd),
    /// Nothing more there for now (a worker's stream that can be parked).
    Quiet(Box<Events>, Watched),
}

/// How an SSE stream ended.
pub(super) enum StreamEnd {
    /// The server ended it.
    Closed,
    /// Reading stopped when asked (`read_events`' `stop`), the stream still open.
    Stopped,
    /// The connection broke (or the body was cut short).
    Broke(std::io::Error),
}

/// What a stream told us about resuming it.
#[derive(Default)]
pub(super) struct StreamState {
    pub last_event_id: Option<String>,
    pub retry: Option<Duration>,
    /// Messages read so far.
    pub events: u64,
}

impl Reply {
    /// Sends the request and reads its answer; `Quiet` when the answer's stream waits to be
    /// parked.
    fn run(&mut self, frame: &str, routing: Headers) -> Result<Option<Quiet>> {
        let session = self.shared.session();
        self.modern = session.modern;
        let mut headers = self.shared.base_headers(&session);
        // The probe goes out before the era is known: its envelope names the version.
        if let Some(version) = self.info.envelope_version() {
            headers.retain(|(name, _)| name != headers::PROTOCOL_VERSION);
            headers.push((headers::PROTOCOL_VERSION.into(), version.to_owned()));
        }
        headers.extend(routing);
        let (shared, exchange) = (&self.shared, &self.exchange);
        if shared.legacy_sse.in_use() {
            legacy_sse::send(shared, exchange, frame, &self.info, &headers)?;
            return Ok(None);
        }
        let url = &shared.config.url;
        let response = post_authorized(shared, Some(exchange), url, frame, &headers, None)?;
        let status = response.status().as_u16();
        if shared.legacy_sse.falls_back(&self.info, status) {
            let refusal = status_error(shared, response, &self.info, &session);
            legacy_sse::fall_back(shared, exchange, frame, &self.info, &headers, refusal)?;
            return Ok(None);
        }
        if self.info.is(methods::INITIALIZE) && (200..300).contains(&status) {
            if let Some(id) = header(&response, headers::SESSION_ID) {
                self.shared.capture_session(id)?;
            }
        }
        if !(200..300).contains(&status) {
            return Err(status_error(&self.shared, response, &self.info, &session));
        }
        match content_type(&response).as_str() {
            "application/json" => self.json(response.into_body()).map(|()| None),
            "text/event-stream" => {
                let events = events_of(&self.shared, response.into_body());
                self.read_on(events, StreamState::default())
            }
            "" if status == 202 || status == 204 => Err(Error::protocol(format!(
                "the server answered the {} request with HTTP {status} and no response",
                self.method()
            ))),
            other => Err(unsupported_content_type(other)),
        }
    }

    fn json(&mut self, body: Body) -> Result<()> {
        let limit = self.shared.config.max_message_bytes;
        let bytes = read_limited(body, limit)?.ok_or_else(|| {
            Error::protocol(format!(
                "the server's response body is over the limit of {limit} bytes{}",
                crate::transport::raise_limit_with("HttpConfig::max_message_bytes")
            ))
        })?;
        jsonrpc::read_messages(&bytes, |message| self.deliver(message))
            .map_err(|e| Error::protocol(format!("the server's response body is not JSON: {e}")))?;
        self.require_answer()
    }

    /// Reads the request's stream on (from its start, or where it was parked): `Quiet` when it
    /// is to be parked again, else to its end, resumed by GET if it drops before the answer.
    pub(super) fn read_on(
        &mut self,
        events: Events,
        mut state: StreamState,
    ) -> Result<Option<Quiet>> {
        match self.follow(events, &mut state, true)? {
            Followed::Quiet(events, watched) => Ok(Some(Quiet {
                events: *events,
                state,
                watched,
            })),
            Followed::Ended(ended) => self.after_stream(ended, state).map(|()| None),
        }
    }

    /// As `read_on`, on this thread to the stream's end, never parked.
    pub(super) fn read_to_end(&mut self, events: Events, mut state: StreamState) -> Result<()> {
        match self.follow(events, &mut state, false)? {
            Followed::Ended(ended) => self.after_stream(ended, state),
            Followed::Quiet(..) => unreachable!("a stream that may not park never parks"),
        }
    }

    /// The request's stream ended: its answer came, or it is resumed (SEP-1699), or the call
    /// fails.
    fn after_stream(&mut self, ended: StreamEnd, state: StreamState) -> Result<()> {
        if self.answered {
            return Ok(());
        }
        if state.last_event_id.is_none() || self.modern {
            // Not primed, there is nothing to resume from; and the modern era has no resumption
            // (a broken stream loses its request).
            let why = match ended {
                StreamEnd::Closed | StreamEnd::Stopped => String::new(),
                StreamEnd::Broke(e) => format!(" ({e})"),
            };
            return Err(Error::protocol(format!(
                "the server closed the SSE stream without a response to the {} request{why}",
                self.method()
            )));
        }
        self.resume(state)
    }

    /// SEP-1699: the stream was primed and closed early, so the response is fetched by GET with
    /// `Last-Event-ID`, after the delay the server asked for.
    fn resume(&mut self, mut state: StreamState) -> Result<()> {
        let budget = self.shared.config.resume_budget;
        // `None`: a budget too large to end (Duration::MAX) never runs out.
        let mut give_up_at = Instant::now().checked_add(budget);
        let mut fruitless = 0;
        while !self.answered {
            if fruitless == MAX_RESUME_ATTEMPTS {
                return Err(Error::protocol(format!(
                    "the server closed the SSE stream without a response to the {} request, \
                     also after {MAX_RESUME_ATTEMPTS} reconnections",
                    self.method()
                )));
            }
            let delay = state.retry.unwrap_or(DEFAULT_RETRY).max(MIN_RETRY);
            let resume_at = Instant::now().checked_add(delay);
            if give_up_at.is_some_and(|give_up_at| resume_at.is_none_or(|at| at > give_up_at)) {
                return Err(Error::protocol(format!(
                    "the server closed the SSE stream of the {} request and asked for a \
                     reconnection delay of {} ms, past the budget of {} ms",
                    self.method(),
                    delay.as_millis(),
                    budget.as_millis()
                )));
            }
            if !self.exchange.sleep(delay) {
                return Err(Error::new(Status::Cancelled, "the exchange was aborted"));
            }
            fruitless += 1;
            let response = open_stream(&self.shared, state.last_event_id.as_deref())?;
            let session = self.shared.session();
            if !(200..300).contains(&response.status().as_u16()) {
                return Err(status_error(&self.shared, response, &self.info, &session));
            }
            match content_type(&response).as_str() {
                "text/event-stream" => {}
                other => return Err(unsupported_content_type(other)),
            }
            let before = state.events;
            let events = events_of(&self.shared, response.into_body());
            // However it ends, what counts is whether it brought anything. A resumed stream
            // is read on this thread (never parked).
            let _ = self.follow(events, &mut state, false)?;
            if state.events > before {
                fruitless = 0;
                give_up_at = Instant::now().checked_add(budget);
            }
        }
        Ok(())
    }

    /// Reads an SSE stream to its end, delivering each message. Once the response is in, the
    /// rest is still read (so the connection can be reused), within a deadline. A stream that
    /// breaks is not an error by itself: a primed one is resumed. On a worker, with `parks`,
    /// it stops (`Quiet`) where nothing more is there for now, for the stream to be parked.
    fn follow(
        &mut self,
        mut events: Events,
        state: &mut StreamState,
        parks: bool,
    ) -> Result<Followed> {
        let (shared, exchange) = (self.shared.clone(), self.exchange.clone());
        let draining = Cell::new(self.answered);
        let on_caller = self.on_caller;
        // Never with an idle timeout: that is a limit on a read's wait, which a parked stream
        // does not make.
        let watched = match parks && !on_caller && shared.config.idle_timeout.is_none() {
            true => parking::watchable(&exchange),
            false => None,
        };
        let quiet = |events: &Events| {
            watched
                .as_ref()
                .is_some_and(|watched| !events.has_buffered() && !watched.input_within(PARK_AFTER))
        };
        let ended = match quiet(&events) {
            true => Ok(StreamEnd::Stopped),
            false => read_events(
                &shared,
                &mut events,
                state,
                |message| {
                    self.deliver(message);
                    if self.answered && !draining.get() {
                        draining.set(true);
                        let deadline = Instant::now() + DRAIN_AFTER_RESPONSE;
                        shared.watchdog.abort_at(deadline, &exchange);
                    }
                },
                // The caller has its answer: it reads on only what is there already (then the
                // stream's end returns the connection to the pool at once); for the rest it
                // returns now, and a worker reads it.
                |events| {
                    quiet(events)
                        || on_caller
                            && draining.get()
                            && !events.has_buffered()
                            && !exchange.input_within(END_WITHIN)
                },
            ),
        };
        match ended {
            Ok(StreamEnd::Stopped) => match watched.or_else(|| self.drain_parked()) {
                Some(watched) => Ok(Followed::Quiet(Box::new(events), watched)),
                None => {
                    self.handed_off = drain_rest(&shared, &exchange, self.id, events);
                    Ok(Followed::Ended(StreamEnd::Closed))
                }
            },
            // After the response, nothing that follows matters.
            Err(_) if self.answered => Ok(Followed::Ended(StreamEnd::Closed)),
            other => other.map(Followed::Ended),
        }
    }

    /// The caller has its answer, and the rest of its stream is not there yet: the rest waits
    /// parked and is read by workers as it comes, as a started call's stream is, so a server
    /// that leaves its streams open after their answers holds no thread per call. The socket
    /// to watch, or `None` where it cannot be (then a worker waits for the rest in its read).
    /// Counted in `draining` until its reader goes (`drains`).
    fn drain_parked(&mut self) -> Option<Watched> {
        if self.shared.config.idle_timeout.is_some() {
            return None;
        }
        let watched = parking::watchable(&self.exchange)?;
        self.on_caller = false;
        self.drains = true;
        self.shared.lock_exchanges().draining += 1;
        Some(watched)
    }

    /// Whether this is the rest of a stream whose caller has its answer (see `drain_parked`).
    pub(super) fn drains(&self) -> bool {
        self.drains
    }

    /// The call fails with `error`, unless it is over already (its exchange aborted, or the
    /// transport closed).
    pub(super) fn failed(&self, error: Error) {
        if !self.exchange.is_aborted() && !self.shared.closed.load(Ordering::Acquire) {
            self.shared.inbound.request_failed(self.id, error);
        }
    }

    pub(super) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    pub(super) fn exchange(&self) -> &Arc<Exchange> {
        &self.exchange
    }

    pub(super) fn id(&self) -> i64 {
        self.id
    }

    /// Hands a message to the engine, noting our response.
    fn deliver(&mut self, incoming: Incoming) {
        let ours = match &incoming {
            Incoming::Response { id, .. } => id.as_i64() == Some(self.id),
            Incoming::Answer { id, .. } => *id == self.id,
            _ => false,
        };
        self.answered |= ours;
        // Only a modern tools/list result is looked into (a kept text's tree built then).
        if ours && self.modern && self.info.is(methods::TOOLS_LIST) {
            let result = match &incoming {
                Incoming::Response { frame, .. } => frame.get("result"),
                Incoming::Answer { reply, .. } => Some(&**reply),
                _ => None,
            };
            if let Some(result) = result {
                self.shared.lock_tools().learn(self.info.params(), result);
            }
        }
        self.shared.inbound.message(incoming);
    }

    fn require_answer(&self) -> Result<()> {
        match self.answered {
            true => Ok(()),
            false => Err(Error::protocol(format!(
                "the server's answer to the {} request holds no response for id {}",
                self.method(),
                self.id
            ))),
        }
    }

    fn method(&self) -> &str {
        self.info.method.as_deref().unwrap_or("(unknown)")
    }
}

/// Hands the rest of a stream whose response has arrived to a worker, which reads it to its
/// end (delivering what else it carries) so the connection can be reused, then ends the
/// exchange. Its deadline to do so was set when the response arrived. False when no worker
/// could be had: the stream is dropped (its connection closed) and the exchange ends here.
fn drain_rest(shared: &Arc<Shared>, exchange: &Arc<Exchange>, id: i64, mut events: Events) -> bool {
    let job = {
        let shared = shared.clone();
        let _keep = exchange.clone(); // aborted by its deadline or close while draining
        move || {
            let _ = read_events(
                &shared,
                &mut events,
                &mut StreamState::default(),
                |message| deliver_loose(&shared, message),
                |_| false,
            );
            drop(_keep);
            let mut exchanges = shared.lock_exchanges();
            exchanges.running.remove(&id);
            exchanges.draining -= 1;
            drop(exchanges);
            shared.drained.notify_all();
        }
    };
    let parked = Parked {
        id,
        job: Box::new(job),
    };
    shared.lock_exchanges().draining += 1;
    let handed = super::run_on_worker(shared, parked).is_ok();
    if !handed {
        shared.lock_exchanges().draining -= 1;
    }
    handed
}

/// Hands a message that is no call's response to the engine.
fn deliver_loose(shared: &Shared, message: Incoming) {
    shared.inbound.message(message)
}

/// Reads SSE events until the stream ends, passing each JSON message to `message`, and
/// noting what resuming the stream would need. Stops (`StreamEnd::Stopped`) when `stop()`
/// holds after an event.
pub(super) fn read_events(
    shared: &Shared,
    events: &mut Events,
    state: &mut StreamState,
    mut message: impl FnMut(Incoming),
    stop: impl Fn(&Events) -> bool,
) -> Result<StreamEnd> {
    loop {
        let event = match events.next_event() {
            Ok(Some(event)) => event,
            Ok(None) => return Ok(StreamEnd::Closed),
            Err(SseError::Io(e)) => return Ok(StreamEnd::Broke(e)),
            Err(SseError::TooLarge(limit)) => {
                return Err(Error::protocol(format!(
                    "the server sent an SSE event over the limit of {limit} bytes{}",
                    crate::transport::raise_limit_with("HttpConfig::max_message_bytes")
                )))
            }
        };
        if let Some(id) = events.last_event_id().filter(|id| !id.is_empty()) {
            state.last_event_id = Some(id.to_owned());
        }
        if let Some(retry) = events.retry() {
            state.retry = Some(retry);
        }
        // A priming event carries no message, but may be all there is for now.
        if !event.data.trim().is_empty() {
            state.events += 1;
            match jsonrpc::read_messages(event.data.as_bytes(), &mut message) {
                Ok(()) => {}
                Err(e) => shared.inbound.bad_frame(
                    Error::protocol(format!("skipped an SSE event that is not JSON: {e}")),
                    false,
                ),
            }
        }
        if stop(events) {
            return Ok(StreamEnd::Stopped);
        }
    }
}

/// POSTs a notification, or an answer to a server request: the server acknowledges it (202).
pub(super) fn notify(shared: &Arc<Shared>, frame: &str, info: &MessageInfo) -> Result<()> {
    let session = shared.session();
    let mut headers = shared.base_headers(&session);
    let routing = headers::routing(info, None);
    headers::check_size(&headers, &routing)?;
    headers.extend(routing);
    if shared.legacy_sse.in_use() {
        return legacy_sse::notify(shared, frame, info, &headers);
    }
    let url = &shared.config.url;
    let response = post_authorized(shared, None, url, frame, &headers, Some(NOTIFY_TIMEOUT))?;
    if !(200..300).contains(&response.status().as_u16()) {
        return Err(status_error(shared, response, info, &session));
    }
    discard_body(response);
    Ok(())
}

/// Ends the legacy session. 404 (already gone) and 405 (no DELETE here) count as success.
pub(super) fn delete_session(shared: &Shared, session: &Session) -> Result<()> {
    let mut request = shared
        .agent
        .delete(&shared.config.url)
        .config()
        .timeout_global(super::limit(shared.config.close_timeout))
        .build();
    for (name, value) in shared.base_headers(session) {
        request = request.header(name, value);
    }
    let request = auth::add_headers(shared, request)?;
    let response = request.call().map_err(|e| request_error(shared, e))?;
    match response.status().as_u16() {
        200..=299 | 404 | 405 => Ok(()),
        status => Err(Error::transport(format!(
            "the session DELETE failed with HTTP {status}"
        ))),
    }
}
