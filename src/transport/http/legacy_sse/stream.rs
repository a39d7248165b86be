//! The HTTP+SSE transport's event stream (`legacy_sse`): the GET of the server's URL whose
//! first event names the endpoint, and which then carries every message of the session, the
//! answers included. A worker opens it and reads it up to the endpoint event, as the opener
//! waits for that (`Opening`).
//!
//! From then on, while the server is quiet, the stream holds no thread (Unix): its reader is
//! parked (`parking`), and the process's reactor watches its socket. When the socket is
//! readable, a worker reads what has come for as long as more is there without waiting, then
//! parks the reader again; a read that stops mid-event waits on that worker for the rest.
//! Where the socket cannot be watched (Windows, behind a proxy, no reactor), the worker reads
//! on, waiting in the read, as before. No idle timeout applies to this stream: it is quiet
//! for as long as the session is.
//!
//! There is no resumption in this transport: the stream's end or break ends the connection
//! (every pending call fails), unless the client closed it or the opener gave up on it.

use super::super::auth;
use super::super::connector::{Exchange, Watched};
use super::super::endpoint::{self, Events};
use super::super::parking::{self, Park, Parking};
use super::super::sse::SseError;
use super::super::Shared;
use super::{resolve_endpoint, Opening};
use crate::error::{Error, Result, Status};
use crate::protocol::jsonrpc;
#[cfg(unix)]
use crate::transport::reactor::{Event, Handle, Source};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

/// One connection's event stream.
pub(super) struct EventStream {
    /// Weak: the connection's shared state holds this.
    shared: Weak<Shared>,
    /// The GET's exchange: aborting it ends the stream.
    exchange: Arc<Exchange>,
    /// Its reader, while it waits for the server.
    parked: Parking<Events>,
}

impl EventStream {
    /// Opens the stream on a worker, which tells `opening` the endpoint (or why there is none)
    /// and goes on reading.
    pub(super) fn start(shared: &Arc<Shared>, opening: &Arc<Opening>) -> Result<Arc<EventStream>> {
        let stream = Arc::new(EventStream {
            shared: Arc::downgrade(shared),
            exchange: Exchange::parking(),
            parked: Parking::default(),
        });
        let reader = {
            let (me, shared, opening) = (stream.clone(), shared.clone(), opening.clone());
            move || me.open_and_read(&shared, &opening)
        };
        let on_panic = stream.on_panic(shared, Some(opening.clone()));
        shared.workers.run(reader, on_panic)?;
        Ok(stream)
    }

    /// Ends the stream at once (close, or the opener gave up): a worker reading it wakes, a
    /// parked reader is dropped, and the reactor runs nothing more for it once this returns.
    pub(super) fn stop(&self) {
        self.exchange.abort();
        self.parked.stop();
    }

    /// The first turn: GETs the URL and reads the stream.
    fn open_and_read(self: &Arc<Self>, shared: &Arc<Shared>, opening: &Opening) {
        let _entered = self.exchange.enter();
        let ended = match open(shared, &self.exchange) {
            Ok(response) => {
                let events = endpoint::events_of(shared, response.into_body());
                self.read(shared, events, Some(opening))
            }
            Err(error) => Some(error),
        };
        if let Some(why) = ended {
            self.ended(shared, Some(opening), why);
        }
    }

    /// A later turn: reads on the parked stream.
    #[cfg_attr(not(unix), allow(dead_code))] // nothing parks there
    fn turn(self: &Arc<Self>) {
        let (Some(shared), Some(events)) = (self.shared.upgrade(), self.parked.take()) else {
            return;
        };
        let _entered = self.exchange.enter();
        if let Some(why) = self.read(&shared, events, None) {
            self.ended(&shared, None, why);
        }
    }

    /// Reads and delivers events (telling `opening` the endpoint), as long as more is there
    /// without waiting once the endpoint is known and the stream can be parked (then parks it),
    /// to the stream's end otherwise. Why the stream ended, or `None` once it is parked.
    fn read(
        self: &Arc<Self>,
        shared: &Shared,
        mut events: Events,
        opening: Option<&Opening>,
    ) -> Option<Error> {
        // The session's stream: no idle timeout applies to it (`open_session_stream`).
        let watched = parking::watchable(&self.exchange);
        let quiet = |events: &Events| {
            watched
                .as_ref()
                .is_some_and(|watched| !events.has_buffered() && !watched.has_input())
        };
        let mut ended = read_events(shared, &mut events, opening, quiet);
        if ended.is_ok() {
            if let Some(watched) = watched {
                match self.park(events, watched) {
                    Some(back) => events = back,
                    None => return None,
                }
            }
            // It cannot be parked: read on here, waiting in the read.
            ended = read_events(shared, &mut events, None, |_| false);
        }
        // The socket stops being watched before the stream (maybe its last user) goes.
        self.parked.unwatch();
        drop(events);
        ended.err()
    }

    /// Parks the reader and has the reactor watch its socket (once stopped, the reader is
    /// dropped); hands it back when the socket cannot be registered.
    fn park(self: &Arc<Self>, events: Events, watched: Watched) -> Option<Events> {
        #[cfg(unix)]
        let waker = || Arc::new(Waker(Arc::downgrade(self))) as Arc<dyn Source>;
        #[cfg(not(unix))]
        let waker = ();
        match self.parked.park(events, watched, waker) {
            Park::Parked | Park::Stopped => None,
            Park::Failed(events) => Some(events),
        }
    }

    /// The stream ended (`why`): the opener learns why when it still waits for the endpoint;
    /// otherwise the connection ends, unless the client closed it or the opener gave up.
    fn ended(&self, shared: &Shared, opening: Option<&Opening>, why: Error) {
        if self.exchange.is_aborted() || shared.closed.load(Ordering::Acquire) {
            if let Some(opening) = opening {
                opening.tell(Err(Error::new(
                    Status::Cancelled,
                    "the HTTP+SSE stream was closed",
                )));
            }
            return;
        }
        if !opening.is_some_and(|opening| opening.tell(Err(why.clone()))) {
            shared.inbound.closed(why);
        }
    }

    /// What a panic of a turn (a bug) does: it ends the stream, and the connection with it.
    fn on_panic(
        self: &Arc<Self>,
        shared: &Arc<Shared>,
        opening: Option<Arc<Opening>>,
    ) -> impl FnOnce(Error) + Send + 'static {
        let (me, shared) = (self.clone(), shared.clone());
        move |error| {
            me.ended(&shared, opening.as_deref(), error);
            me.stop();
        }
    }

    /// The socket is readable: a worker takes its turn. Without a worker the stream stays
    /// parked, unread, until close.
    #[cfg(unix)]
    fn resume(self: &Arc<Self>) {
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        if shared.closed.load(Ordering::Acquire) {
            return;
        }
        let me = self.clone();
        let on_panic = self.on_panic(&shared, None);
        let _ = shared.workers.run(move || me.turn(), on_panic);
    }
}

/// What the reactor holds of a stream: weak, so a stream nobody else holds goes.
#[cfg(unix)]
struct Waker(Weak<EventStream>);

#[cfg(unix)]
impl Source for Waker {
    fn ready(&self, _handle: &Handle, _event: Event) {
        if let Some(stream) = self.0.upgrade() {
            stream.resume();
        }
    }

    fn panicked(&self, error: Error) {
        // A bug: the stream ends, and the connection with it (on a worker: not the reactor's
        // business to call the engine).
        let Some(stream) = self.0.upgrade() else {
            return;
        };
        if let Some(shared) = stream.shared.upgrade() {
            let on_panic = stream.on_panic(&shared, None);
            let _ = shared.workers.run(move || on_panic(error), |_| ());
        }
    }
}

/// Reads events until `quiet` says nothing more is there for now, once the endpoint is known
/// (`Ok`), or until the stream ends (why). With `opening`, the first event must name the
/// endpoint, which `opening` is told; without, it was named already.
fn read_events(
    shared: &Shared,
    events: &mut Events,
    mut opening: Option<&Opening>,
    quiet: impl Fn(&Events) -> bool,
) -> std::result::Result<(), Error> {
    loop {
        let event = match events.next_event() {
            Ok(Some(event)) => event,
            Ok(None) if opening.is_none() => {
                return Err(Error::transport("the server ended the HTTP+SSE stream"))
            }
            Ok(None) => {
                return Err(Error::protocol(
                    "the server ended the HTTP+SSE stream before an endpoint event",
                ))
            }
            Err(SseError::Io(e)) => {
                return Err(Error::transport(format!("the HTTP+SSE stream broke: {e}")))
            }
            Err(SseError::TooLarge(limit)) => {
                return Err(Error::protocol(format!(
                "the server sent an event over the limit of {limit} bytes on the HTTP+SSE stream"
            )))
            }
        };
        match (event.kind.as_str(), opening) {
            ("endpoint", None) => {
                return Err(Error::protocol(
                    "the server sent a second endpoint event on the HTTP+SSE stream",
                ))
            }
            ("endpoint", Some(waiting)) => {
                let endpoint = resolve_endpoint(&shared.config.url, event.data.trim())?;
                shared
                    .secrets
                    .add(endpoint.split_once('?').map_or("", |(_, q)| q));
                opening = None;
                waiting.tell(Ok(endpoint));
            }
            (kind, Some(_)) => {
                return Err(Error::protocol(format!(
                    "the HTTP+SSE stream's first event is {kind:?}, not endpoint"
                )))
            }
            ("message", None) => {
                if let Err(e) =
                    jsonrpc::read_messages(event.data.as_bytes(), |m| shared.inbound.message(m))
                {
                    shared.inbound.bad_frame(
                        Error::protocol(format!("skipped an SSE message that is not JSON: {e}")),
                        false,
                    );
                }
            }
            _ => {} // other event types are not ours
        }
        if opening.is_none() && quiet(events) {
            return Ok(());
        }
    }
}

/// The GET that opens the stream; a 401 or 403 goes to the auth hook, as POSTs do.
fn open(shared: &Shared, stream: &Arc<Exchange>) -> Result<ureq::http::Response<ureq::Body>> {
    let mut refusals = 0;
    let response = loop {
        let sent = auth::before_request(shared);
        let response = endpoint::open_session_stream(shared, None)?;
        if !auth::is_refusal(response.status().as_u16()) {
            auth::accepted(shared, &response);
            break response;
        }
        auth::refused(shared, Some(stream), response, &mut refusals, &sent)?;
    };
    let status = response.status().as_u16();
    if !(200..300).contains(&status) {
        return Err(Error::transport(format!(
            "the server answered the GET of its URL with HTTP {status}"
        )));
    }
    let content_type = endpoint::content_type(&response);
    if content_type != "text/event-stream" {
        return Err(Error::transport(format!(
            "the server answered the GET of its URL with Content-Type {content_type:?}, not an \
             event stream"
        )));
    }
    Ok(response)
}
