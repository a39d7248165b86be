//! The HTTP+SSE transport of protocol version 2024-11-05, which servers deployed before
//! Streamable HTTP still speak. The client GETs the server's URL: an event stream whose first
//! event, `endpoint`, names the URL to POST messages to. Every message the server sends, the
//! answers included, comes back on that one stream as a `message` event; a POST is only
//! acknowledged (202).
//!
//! It is a mode of the HTTP transport, not a second HTTP stack: the POSTs and the GET go
//! through `exchange` (the same connector, proxy, TLS trust, headers and auth), and this file
//! only opens the stream (`stream` reads it) and says where messages go. A
//! request's exchange POSTs it and ends; the engine hands the caller its answer when the
//! stream brings it.
//!
//! Whether a server speaks it (`HttpTransportKind::Auto`) is the spec's backwards-compatibility
//! rule: an `initialize` POSTed to the URL answered 400, 404 or 405 means the old transport
//! (`falls_back`). What was found is remembered for the client's reconnects (`Memory`).
//!
//! Only the handshake era exists here. There is no session id and no resumption: a stream that
//! ends ends the connection. A cancel is the `notifications/cancelled` POSTed to the endpoint.

use super::connector::Exchange;
use super::endpoint::{self, status_error};
use super::headers::{Headers, MessageInfo};
mod stream;

use super::Shared;
use crate::cancellation::CancellationToken;
use crate::error::{Error, Result, Status};
use crate::protocol::methods;
use crate::sync::{lock, wait_until};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;
use stream::EventStream;
use ureq::http::Uri;

/// Which of the two HTTP transports to speak. The numbers are part of the C ABI.
// C knows it as `mcp_http_transport`: cbindgen.toml renames it.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HttpTransportKind {
    /// Streamable HTTP, unless the server refuses the `initialize` POST with 400, 404 or 405
    /// and its URL opens an HTTP+SSE event stream: then the 2024-11-05 HTTP+SSE transport
    /// (the spec's backwards-compatibility rule), remembered for reconnects (default).
    #[default]
    Auto = 0,
    /// Streamable HTTP only.
    Streamable = 1,
    /// The 2024-11-05 HTTP+SSE transport only (the handshake era).
    LegacySse = 2,
}

/// What a client found out about its server, kept across its connections: set once a server
/// was found to speak HTTP+SSE, so reconnecting goes straight to it.
pub(crate) type Memory = Arc<AtomicBool>;

/// The transport's HTTP+SSE side.
pub(super) struct LegacySse {
    /// HTTP+SSE is the transport (pinned, remembered, or found by this connection).
    in_use: AtomicBool,
    /// The host pinned Streamable HTTP: never fall back.
    streamable_only: bool,
    memory: Memory,
    channel: Mutex<Option<Channel>>,
    /// Held while the stream is being opened, so that there is only one.
    opening: Mutex<()>,
}

/// The open stream.
struct Channel {
    /// Where messages are POSTed (absolute, same origin as the URL).
    endpoint: String,
    stream: Arc<EventStream>,
}

impl LegacySse {
    pub(super) fn new(kind: HttpTransportKind, memory: Memory) -> LegacySse {
        let pinned = kind == HttpTransportKind::LegacySse;
        let remembered = kind == HttpTransportKind::Auto && memory.load(Ordering::Acquire);
        LegacySse {
            in_use: AtomicBool::new(pinned || remembered),
            streamable_only: kind == HttpTransportKind::Streamable,
            memory,
            channel: Mutex::default(),
            opening: Mutex::default(),
        }
    }

    /// Whether messages go to an HTTP+SSE endpoint rather than to the URL.
    pub(super) fn in_use(&self) -> bool {
        self.in_use.load(Ordering::Acquire)
    }

    /// Whether a POST of `info` answered `status` means the server speaks HTTP+SSE: an
    /// `initialize` refused with 400, 404 or 405, unless the host pinned Streamable HTTP.
    pub(super) fn falls_back(&self, info: &MessageInfo, status: u16) -> bool {
        !self.streamable_only && info.is(methods::INITIALIZE) && matches!(status, 400 | 404 | 405)
    }

    /// Ends the stream (close).
    pub(super) fn close(&self) {
        let stream = lock(&self.channel).as_ref().map(|c| c.stream.clone());
        if let Some(stream) = stream {
            stream.stop();
        }
    }
}

/// The server refused the `initialize` POST (`refusal`): opens the HTTP+SSE stream and POSTs
/// the request to its endpoint. If the URL opens no such stream (a transport error: the GET
/// failed or was no event stream), the refusal is the error; a stream that breaks the rules
/// of the transport is its own error, which also names the refusal. A cancel, a timeout or
/// close is the outcome as it is.
pub(super) fn fall_back(
    shared: &Arc<Shared>,
    exchange: &Arc<Exchange>,
    frame: &str,
    info: &MessageInfo,
    headers: &Headers,
    refusal: Error,
) -> Result<()> {
    let endpoint = endpoint(shared, exchange).map_err(|mut e| match e.status {
        Status::Cancelled => e,
        Status::TransportError => {
            let mut error = refusal.clone();
            error.message = format!(
                "{}; nor does the URL open an HTTP+SSE stream: {}",
                refusal.message, e.message
            );
            error
        }
        _ => {
            e.message = format!(
                "{} (the HTTP+SSE stream was tried because {})",
                e.message, refusal.message
            );
            e
        }
    })?;
    let sse = &shared.legacy_sse;
    sse.in_use.store(true, Ordering::Release);
    sse.memory.store(true, Ordering::Release);
    post(shared, Some(exchange), &endpoint, frame, info, headers)
}

/// POSTs a request to the endpoint (opening the stream first if need be); its answer comes on
/// the stream.
pub(super) fn send(
    shared: &Arc<Shared>,
    exchange: &Arc<Exchange>,
    frame: &str,
    info: &MessageInfo,
    headers: &Headers,
) -> Result<()> {
    let endpoint = endpoint(shared, exchange)?;
    post(shared, Some(exchange), &endpoint, frame, info, headers)
}

/// POSTs a notification or an answer to a server request to the endpoint.
pub(super) fn notify(
    shared: &Arc<Shared>,
    frame: &str,
    info: &MessageInfo,
    headers: &Headers,
) -> Result<()> {
    let endpoint = lock(&shared.legacy_sse.channel)
        .as_ref()
        .map(|channel| channel.endpoint.clone())
        .ok_or_else(|| Error::new(Status::NotConnected, "the HTTP+SSE stream is not open"))?;
    post(shared, None, &endpoint, frame, info, headers)
}

/// A message POSTed to the endpoint: any 2xx acknowledges it, anything else fails it.
fn post(
    shared: &Shared,
    exchange: Option<&Arc<Exchange>>,
    endpoint: &str,
    frame: &str,
    info: &MessageInfo,
    headers: &Headers,
) -> Result<()> {
    let timeout = exchange.is_none().then_some(super::NOTIFY_TIMEOUT);
    let response = endpoint::post_authorized(shared, exchange, endpoint, frame, headers, timeout)?;
    if !(200..300).contains(&response.status().as_u16()) {
        return Err(status_error(shared, response, info, &shared.session()));
    }
    endpoint::discard_body(response);
    Ok(())
}

/// The endpoint of the open stream, or of one opened now (the caller's `exchange` waits for it:
/// a cancel, a timeout or close ends the wait).
fn endpoint(shared: &Arc<Shared>, exchange: &Arc<Exchange>) -> Result<String> {
    let sse = &shared.legacy_sse;
    let _one_opener = lock(&sse.opening);
    if let Some(channel) = lock(&sse.channel).as_ref() {
        return Ok(channel.endpoint.clone());
    }
    let opening = Arc::new(Opening::default());
    let stream = EventStream::start(shared, &opening)?;
    match opening.wait(exchange, shared.config.connect_timeout) {
        Ok(endpoint) => {
            let mut channel = lock(&sse.channel);
            if shared.closed.load(Ordering::Acquire) {
                drop(channel);
                stream.stop();
                return Err(Error::new(Status::Closed, "the transport is closed"));
            }
            *channel = Some(Channel {
                endpoint: endpoint.clone(),
                stream,
            });
            Ok(endpoint)
        }
        Err(error) => {
            stream.stop();
            Err(error)
        }
    }
}

/// The opener's wait for the stream's `endpoint` event (or for why there is none).
#[derive(Default)]
pub(super) struct Opening {
    outcome: Mutex<Option<Result<String>>>,
    told: Condvar,
}

impl Opening {
    /// Gives the opener its outcome; false if it had one already (it has gone).
    pub(super) fn tell(&self, outcome: Result<String>) -> bool {
        let mut slot = lock(&self.outcome);
        if slot.is_some() {
            return false;
        }
        *slot = Some(outcome);
        self.told.notify_all();
        true
    }

    /// Waits for the outcome, at most `limit`; aborting `exchange` ends the wait.
    fn wait(self: &Arc<Self>, exchange: &Exchange, limit: std::time::Duration) -> Result<String> {
        let aborted = CancellationToken::new();
        let hook = {
            let opening = self.clone();
            aborted.on_cancel(move |_| {
                opening.tell(Err(Error::new(
                    Status::Cancelled,
                    "the call ended while the HTTP+SSE stream was being opened",
                )));
            })
        };
        let key = exchange.cancel_on_abort(&aborted);
        let give_up = Instant::now().checked_add(limit);
        let mut slot = lock(&self.outcome);
        let outcome = loop {
            if let Some(outcome) = slot.clone() {
                break outcome;
            }
            slot = match wait_until(&self.told, slot, give_up) {
                Some(slot) => slot,
                None => {
                    // Unless the outcome came just now.
                    self.tell(Err(Error::protocol(format!(
                        "the server's HTTP+SSE stream named no endpoint within {} ms",
                        limit.as_millis()
                    ))));
                    lock(&self.outcome)
                }
            };
        };
        drop(slot);
        exchange.forget_on_abort(key);
        if let Some(hook) = hook {
            aborted.off_cancel(hook);
        }
        outcome
    }
}

/// The endpoint an `endpoint` event names, made absolute against the server's URL. One on
/// another origin (scheme, host, port) is refused: messages, credentials included, would go
/// to a server the host never named.
pub(super) fn resolve_endpoint(base: &str, endpoint: &str) -> Result<String> {
    let refuse = |why: &str| {
        Error::protocol(format!(
            "the server's endpoint event names {:?}, {why}; it is not used",
            super::redact::display_url(endpoint)
        ))
    };
    if endpoint.is_empty() || endpoint.chars().any(|c| c.is_control() || c == ' ') {
        return Err(refuse("which is not a URL"));
    }
    let base_uri: Uri = base
        .parse()
        .map_err(|_| refuse("and the server's URL is not valid"))?;
    let scheme = base_uri.scheme_str().unwrap_or("http");
    let authority = base_uri.authority().map_or("", |a| a.as_str());
    let absolute = if endpoint.starts_with("//") {
        format!("{scheme}:{endpoint}")
    } else if endpoint.contains("://") {
        endpoint.to_owned()
    } else if endpoint.starts_with('/') {
        format!("{scheme}://{authority}{endpoint}")
    } else {
        // A relative path: against the URL's directory.
        let path = base_uri.path();
        let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
        format!("{scheme}://{authority}{dir}{endpoint}")
    };
    let uri: Uri = absolute.parse().map_err(|_| refuse("which is not a URL"))?;
    let origin = |uri: &Uri| {
        let scheme = uri.scheme_str().map(str::to_ascii_lowercase);
        let port = uri.port_u16().or(match scheme.as_deref() {
            Some("http") => Some(80),
            Some("https") => Some(443),
            _ => None,
        });
        (scheme, uri.host().map(str::to_ascii_lowercase), port)
    };
    if origin(&uri) != origin(&base_uri) {
        return Err(refuse("on another origin than the server's URL"));
    }
    Ok(absolute)
}

#[cfg(test)]
mod tests {
    use super::resolve_endpoint;

    #[test]
    fn endpoints_resolve_against_the_url_and_stay_on_its_origin() {
        let base = "http://127.0.0.1:8000/sse";
        let ok = |e: &str| resolve_endpoint(base, e).unwrap();
        assert_eq!(
            ok("/messages/?session_id=ab"),
            "http://127.0.0.1:8000/messages/?session_id=ab"
        );
        assert_eq!(
            ok("message?sessionId=1"),
            "http://127.0.0.1:8000/message?sessionId=1"
        );
        assert_eq!(ok("http://127.0.0.1:8000/m"), "http://127.0.0.1:8000/m");
        assert_eq!(ok("//127.0.0.1:8000/m"), "http://127.0.0.1:8000/m");
        assert_eq!(
            resolve_endpoint("https://example.com/a/sse", "post").unwrap(),
            "https://example.com/a/post"
        );
        assert_eq!(
            resolve_endpoint("https://example.com/sse", "https://EXAMPLE.com:443/m").unwrap(),
            "https://EXAMPLE.com:443/m"
        );
        for other in [
            "http://127.0.0.1:8001/m",
            "https://127.0.0.1:8000/m",
            "http://evil.example:8000/m",
            "//evil.example/m",
            "",
            "/a b",
        ] {
            assert!(
                resolve_endpoint(base, other).is_err(),
                "{other:?} was taken"
            );
        }
    }
}
