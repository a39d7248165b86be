//! The HTTP requests to the MCP endpoint that every exchange is made of, whichever era: the
//! POST through the auth hook, the GET of an SSE stream, and what an answer's status, media
//! type and error body say.

use super::auth;
use super::connector::Exchange;
use super::headers::{self, Headers, MessageInfo};
use super::sse::SseReader;
use super::{Session, Shared};
use crate::error::{Error, Result, Status};
use crate::protocol::methods;
use serde_json::Value;
use std::io::{BufReader, Read};
use std::sync::Arc;
use std::time::Duration;
use ureq::http::Response;
use ureq::Body;

/// How much of an error body we read, looking for a JSON-RPC error.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// An SSE stream being read.
pub(super) type Events = SseReader<BufReader<ureq::BodyReader<'static>>>;

/// The SSE events of a response body.
pub(super) fn events_of(shared: &Shared, body: Body) -> Events {
    SseReader::new(
        BufReader::new(body.into_reader()),
        shared.config.max_message_bytes,
    )
}

/// Reads what little an acknowledgement carries, so the connection can be reused.
pub(super) fn discard_body(response: Response<Body>) {
    let _ = read_limited(response.into_body(), ERROR_BODY_LIMIT);
}

/// POSTs a message to `url`; a 401 or 403 goes to the auth hook, which either gets a new token
/// (the POST is made again) or ends it with UNAUTHORIZED.
pub(super) fn post_authorized(
    shared: &Shared,
    exchange: Option<&Arc<Exchange>>,
    url: &str,
    body: &str,
    headers: &Headers,
    timeout: Option<Duration>,
) -> Result<Response<Body>> {
    let mut refusals = 0;
    loop {
        let sent = auth::before_request(shared);
        let response = post(shared, url, body, headers, timeout)?;
        if !auth::is_refusal(response.status().as_u16()) {
            auth::accepted(shared, &response);
            return Ok(response);
        }
        auth::refused(shared, exchange, response, &mut refusals, &sent)?;
    }
}

fn post(
    shared: &Shared,
    url: &str,
    body: &str,
    headers: &Headers,
    timeout: Option<Duration>,
) -> Result<Response<Body>> {
    let mut request = shared
        .agent
        .post(url)
        .config()
        .timeout_global(timeout)
        .build()
        .header("Accept", headers::ACCEPT_BOTH)
        .header("Content-Type", "application/json");
    for (name, value) in headers {
        request = request.header(name, value);
    }
    auth::add_headers(shared, request)?
        .send(body)
        .map_err(|e| request_error(shared, e))
}

/// GETs the rest of a call's dropped SSE stream (after `last_event_id`): the idle timeout
/// bounds each of its reads, as those of the call's first stream.
pub(super) fn open_stream(shared: &Shared, last_event_id: Option<&str>) -> Result<Response<Body>> {
    get_stream(shared, last_event_id, shared.config.idle_timeout)
}

/// GETs a stream that lasts as long as the session (the standalone stream, after
/// `last_event_id` when it is resumed; the HTTP+SSE transport's stream): quiet for as long as
/// the server has nothing to say, so no idle timeout applies to it.
pub(super) fn open_session_stream(
    shared: &Shared,
    last_event_id: Option<&str>,
) -> Result<Response<Body>> {
    get_stream(shared, last_event_id, None)
}

fn get_stream(
    shared: &Shared,
    last_event_id: Option<&str>,
    idle_timeout: Option<Duration>,
) -> Result<Response<Body>> {
    let mut request = shared
        .agent
        .get(&shared.config.url)
        .config()
        .timeout_per_read(idle_timeout.and_then(super::limit))
        .build()
        .header("Accept", headers::ACCEPT_SSE);
    if let Some(id) = last_event_id {
        request = request.header(headers::LAST_EVENT_ID, id);
    }
    for (name, value) in shared.base_headers(&shared.session()) {
        request = request.header(name, value);
    }
    auth::add_headers(shared, request)?
        .call()
        .map_err(|e| request_error(shared, e))
}

/// Reads a body up to `limit` bytes; `None` if it is longer.
pub(super) fn read_limited(body: Body, limit: usize) -> Result<Option<Vec<u8>>> {
    if body.content_length().is_some_and(|n| n > limit as u64) {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    // One byte past the limit tells a body at the limit from a longer one; saturating, as
    // the limit may be as large as usize::MAX (it once wrapped to 0, failing every body).
    body.into_reader()
        .take((limit as u64).saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| Error::transport(format!("cannot read the server's response: {e}")))?;
    Ok((bytes.len() <= limit).then_some(bytes))
}

pub(super) fn header<'r>(response: &'r Response<Body>, name: &str) -> Option<&'r str> {
    response.headers().get(name)?.to_str().ok()
}

/// The media type, lower case, without parameters.
pub(super) fn content_type(response: &Response<Body>) -> String {
    header(response, "content-type")
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

pub(super) fn unsupported_content_type(content_type: &str) -> Error {
    Error::protocol(format!(
        "unsupported Content-Type {content_type:?} in the server's answer: expected \
         application/json or text/event-stream"
    ))
}

/// A request that got no HTTP answer at all.
pub(super) fn request_error(shared: &Shared, error: ureq::Error) -> Error {
    // Never the URL as configured: it may carry credentials.
    let url = super::redact::display_url(&shared.config.url);
    let why = match &error {
        ureq::Error::Io(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            "connection refused".to_owned()
        }
        ureq::Error::Timeout(what) => format!("timed out ({what})"),
        ureq::Error::HostNotFound => "host not found".to_owned(),
        other => other.to_string(),
    };
    Error::transport(format!("cannot reach {url}: {why}"))
}

/// An HTTP error status. A JSON-RPC error in the body is the server's answer and is kept
/// whole; a 404 to a request that carried a session means the session is gone.
pub(super) fn status_error(
    shared: &Shared,
    response: Response<Body>,
    info: &MessageInfo,
    session: &Session,
) -> Error {
    let status = response.status();
    let code = status.as_u16();
    if auth::is_refusal(code) {
        return auth::refusal_error(response);
    }
    let method = info.method.as_deref().unwrap_or("(answer)");
    if (300..400).contains(&code) {
        // Where it points, without credentials or query (it may be a login URL with a token).
        let location = header(&response, "location")
            .map_or_else(|| "(none)".to_owned(), super::redact::display_url);
        return Error::transport(format!(
            "the server answered {method} with a redirect (HTTP {code}) to {location}; \
             redirects are not followed"
        ));
    }
    let body = read_limited(response.into_body(), ERROR_BODY_LIMIT)
        .ok()
        .flatten()
        .unwrap_or_default();
    let rpc_error = jsonrpc_error(&body);
    let sent_session = session.id.as_deref().filter(|_| !session.modern);
    if let (404, Some(id)) = (code, sent_session) {
        shared.expire_session(id);
        let mut error = Error::new(
            Status::SessionExpired,
            format!(
                "the server no longer knows the session (HTTP 404 to {method}); connect \
                 again to start a new session"
            ),
        );
        if let Some(rpc) = rpc_error {
            error.message = format!("{}: {}", error.message, rpc.message);
            (error.code, error.data) = (rpc.code, rpc.data);
        }
        return error;
    }
    if let Some(rpc) = rpc_error {
        return rpc;
    }
    let reason = status.canonical_reason().unwrap_or("");
    let text = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
    let detail = match text.trim() {
        "" => String::new(),
        text => format!(": {text}"),
    };
    let message = format!("the server answered {method} with HTTP {code} {reason}{detail}");
    // A server of the handshake era may refuse the probe without a JSON-RPC body: that is a
    // verdict on the era, not a broken connection, so connecting falls back to `initialize`.
    if info.is(methods::DISCOVER) && matches!(code, 400 | 404 | 405) {
        return Error::protocol(message);
    }
    Error::transport(message)
}

/// The JSON-RPC error object in an error body, as a SERVER_ERROR.
fn jsonrpc_error(body: &[u8]) -> Option<Error> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let error = value.get("error")?;
    let code = error.get("code")?.as_i64()?;
    let message = error.get("message")?.as_str()?;
    Some(Error::server(
        code,
        message.to_owned(),
        error.get("data").cloned(),
    ))
}
