//! `--http PORT --sse`: the 2024-11-05 HTTP+SSE transport, the one servers spoke before
//! Streamable HTTP. `GET /sse` opens a session's event stream, whose first event (`endpoint`)
//! names `/messages?session=ID`; each message POSTed there is acknowledged at once (202), and
//! everything the server sends for the session (answers, progress, its own requests) goes on
//! that stream as `message` events. Anything but a GET at `/sse` is refused with 405, as the
//! Python SDK's server does, which is how a client tells this transport from Streamable HTTP.
//!
//! A request's handler runs as over Streamable HTTP, into a `Stream` with no connection of its
//! own; a relay thread copies its events to the session's stream. Logged: `{"http": ...}` for
//! each request (by the caller), `{"handler_done": id, "cancelled": bool}`, and
//! `{"sse_stream_closed": connection}` when the client closes its stream.

use super::*;

/// The sessions' open event streams, by session id.
#[derive(Default)]
pub(super) struct SseSessions {
    streams: Mutex<HashMap<String, TcpStream>>,
    next: AtomicU64,
}

impl SseSessions {
    /// Writes an event on a session's stream; false if it is gone.
    fn send(&self, session: &str, event: &str) -> bool {
        let mut streams = self.streams.lock().unwrap();
        match streams.get_mut(session) {
            Some(stream) => http_wire::write_chunk(stream, event.as_bytes()).is_ok(),
            None => false,
        }
    }
}

impl Http {
    /// `GET /sse`: opens a session's stream, names its endpoint, and holds it open until the
    /// client closes it.
    pub(super) fn sse_open(&self, connection_number: u64, connection: &TcpStream) -> bool {
        let Ok(mut writer) = connection.try_clone() else {
            return false;
        };
        if http_wire::start_chunked(&mut writer, 200, &sse_headers()).is_err() {
            return false;
        }
        let session = format!("sse-{}", self.sse.next.fetch_add(1, Ordering::SeqCst) + 1);
        let endpoint = format!("event: endpoint\ndata: /messages?session={session}\n\n");
        // Under the lock, so that the client's first POST (it may come before the insert,
        // under load) finds the session.
        let mut streams = self.sse.streams.lock().unwrap();
        if http_wire::write_chunk(&mut writer, endpoint.as_bytes()).is_err() {
            return false;
        }
        streams.insert(session.clone(), writer);
        drop(streams);
        wait_until_client_leaves(connection);
        self.sse.streams.lock().unwrap().remove(&session);
        self.log(json!({ "sse_stream_closed": connection_number, "at_ms": self.now() }));
        false
    }

    /// `POST /messages?session=ID`: acknowledges the message, then serves it on the session's
    /// stream.
    pub(super) fn sse_post(&self, request: &HttpRequest, connection: &TcpStream) -> bool {
        let session = request
            .path
            .split_once("session=")
            .map_or("", |(_, id)| id)
            .to_owned();
        if !self.sse.streams.lock().unwrap().contains_key(&session) {
            return reply(
                connection,
                404,
                &[],
                error_body(-32600, "Could not find session"),
            );
        }
        let Ok(message) = serde_json::from_slice::<Value>(&request.body) else {
            return reply(connection, 400, &[], error_body(-32700, "Parse error"));
        };
        let keep_open = reply(connection, 202, &[], Vec::new());
        match (message["method"].as_str(), message.get("id")) {
            (Some(method), Some(id)) => {
                let params = message.get("params").cloned().unwrap_or_default();
                self.sse_request(session, method, id.clone(), params);
            }
            (Some("notifications/cancelled"), None) => {
                self.server.cancel(&message["params"]["requestId"]);
            }
            (None, Some(id)) => self.server.deliver_reply(id, message.clone()),
            _ => {} // other notifications need nothing
        }
        keep_open
    }

    /// Runs a request's handler; a relay thread copies what it sends to the session's stream.
    fn sse_request(&self, session: String, method: &str, id: Value, params: Value) {
        let collected = Arc::new(Stream::new(StreamSetup {
            writer: None,
            json: false,
            modern: false,
            headers: Vec::new(),
            ids: None,
        }));
        let cancelled = Arc::new(Cancel::new());
        self.server
            .in_flight
            .lock()
            .unwrap()
            .insert(id.to_string(), cancelled.clone());
        let rejected = modern::take_rejection(&self.server, &params);
        let request = Request {
            id,
            method: method.to_owned(),
            params,
            cancelled,
            rejected,
        };
        self.spawn_handler(request, collected.clone());
        let sessions = self.sse.clone();
        thread::spawn(move || {
            collected.relay(|data| sessions.send(&session, &sse_event(None, data)));
        });
    }
}

impl Stream {
    /// Hands each event of the stream to `send` as it comes, until the stream is done or
    /// `send` fails.
    fn relay(&self, mut send: impl FnMut(&str) -> bool) {
        let mut next = 0;
        let mut state = self.lock();
        loop {
            while next < state.events.len() {
                if !send(&state.events[next]) {
                    return;
                }
                next += 1;
            }
            if state.done {
                return;
            }
            state = self.changed.wait(state).unwrap();
        }
    }
}
