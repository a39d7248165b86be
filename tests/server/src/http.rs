//! `--http PORT`: the same methods at `POST /mcp`, as Streamable HTTP in both eras.
//!
//! A request with the modern envelope is served the 2026-07-28 way: no session, its routing
//! headers checked against its body (-32020 on a mismatch), errors mapped to HTTP statuses, and
//! a closed stream taken as its cancel. Any other request is served the legacy way: a session
//! made by `initialize` (`Mcp-Session-Id`), `notifications/cancelled` POSTed to cancel, DELETE
//! to end the session, and SSE streams that can be resumed by GET with `Last-Event-ID`.
//!
//! Answers are SSE streams (chunked) unless `--http-json`; the stream only starts once there is
//! something to send, so an error can still get its HTTP status. Flags make the server drop
//! streams (`--drop-streams`), expire sessions (`--expire-session-after`), and everything it
//! receives is logged to `--log` as JSON lines: `{"http": {...}}` for each request,
//! `{"closed_by_client": id}` when a client closes a stream before its answer,
//! `{"handler_done": id, "cancelled": bool}` when a request's handler returns, and
//! `{"standalone_closed": connection}` when a client closes its standalone GET stream. A test
//! sends something on the standalone streams with `POST /broadcast`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::args::DropStreams;
use crate::cancel::Cancel;
use crate::http_wire::{self, HttpRequest};
use crate::oauth::AuthServer;
use crate::{flood, methods, modern, Request, Server};

mod client_watch;
mod legacy_sse;

use client_watch::{wait_for_client, wait_until_client_leaves, ClientMove};

const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
const HEADER_MISMATCH: i64 = -32020;

/// Serves until stdin closes, then exits the process.
pub fn serve(server: Arc<Server>, port: u16) -> ! {
    let listener = TcpListener::bind(("127.0.0.1", port)).unwrap_or_else(|e| {
        eprintln!("mcpc-test-server: cannot listen on port {port}: {e}");
        std::process::exit(2);
    });
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(port);
    // The first stdout line: tests read the URL from it.
    let path = if server.args.sse { "/sse" } else { "/mcp" };
    println!("listening on http://127.0.0.1:{port}{path}");
    let _ = io::stdout().flush();

    let http = Arc::new(Http::new(server, port));
    thread::spawn(move || {
        for (number, stream) in listener.incoming().enumerate() {
            let Ok(stream) = stream else { continue };
            // Answers go out in several small writes; without this, Nagle's algorithm holds
            // the later ones back for the client's delayed ACK (about 40 ms).
            let _ = stream.set_nodelay(true);
            let http = http.clone();
            thread::spawn(move || http.connection(number as u64 + 1, stream));
        }
    });
    // The test that started us ends us by closing our stdin (or by killing us).
    let mut line = String::new();
    while io::stdin().lock().read_line(&mut line).is_ok_and(|n| n > 0) {
        line.clear();
    }
    std::process::exit(0);
}

struct Http {
    server: Arc<Server>,
    log: Option<Mutex<File>>,
    started: Instant,
    /// Legacy sessions: id -> requests served with it.
    sessions: Mutex<HashMap<String, usize>>,
    next_session: AtomicU64,
    /// Streams that can be resumed, by stream id.
    streams: Mutex<HashMap<String, Arc<Stream>>>,
    /// The standalone GET streams open now.
    standalone: Mutex<Vec<TcpStream>>,
    next_stream: AtomicU64,
    /// `--require-auth`: the OAuth side.
    auth: Option<AuthServer>,
    /// `--sse`: the HTTP+SSE sessions.
    sse: Arc<legacy_sse::SseSessions>,
}

impl Http {
    fn new(server: Arc<Server>, port: u16) -> Self {
        let log = server
            .args
            .log
            .as_deref()
            .map(|path| Mutex::new(crate::open_log(path)));
        Http {
            auth: AuthServer::new(&server.args, port),
            server,
            log,
            started: Instant::now(),
            sessions: Mutex::default(),
            next_session: AtomicU64::new(1),
            streams: Mutex::default(),
            standalone: Mutex::default(),
            next_stream: AtomicU64::new(1),
            sse: Arc::default(),
        }
    }

    /// Serves one connection's requests until the client closes it or we must.
    fn connection(&self, number: u64, stream: TcpStream) {
        let Ok(read_half) = stream.try_clone() else {
            return;
        };
        let mut reader = BufReader::new(read_half);
        while let Ok(Some(request)) = http_wire::read_request(&mut reader) {
            self.log_request(number, &request);
            if let Some((status, headers, body)) = self.auth_answer(&request) {
                if reply(&stream, status, &headers, body) {
                    continue;
                }
                return;
            }
            let sse = self.server.args.sse;
            let keep_open = match (request.method.as_str(), request.path.as_str()) {
                ("GET", "/sse") if sse => self.sse_open(number, &stream),
                ("POST", path) if sse && path.starts_with("/messages?") => {
                    self.sse_post(&request, &stream)
                }
                (_, "/sse") if sse => reply(&stream, 405, &[], Vec::new()),
                ("POST", "/mcp") => self.post(number, &request, &stream),
                ("GET", "/mcp") => self.get(number, &request, &stream),
                ("DELETE", "/mcp") => self.delete(&request, &stream),
                (_, "/mcp") => reply(&stream, 405, &[], error_body(-32600, "Method not allowed")),
                ("POST", "/broadcast") => self.broadcast(&request, &stream),
                _ => reply(&stream, 404, &[], error_body(-32601, "no such endpoint")),
            };
            if !keep_open {
                let _ = stream.shutdown(Shutdown::Both);
                return;
            }
        }
    }

    /// `--require-auth`: the authorization server's answer, or the refusal of an MCP request.
    fn auth_answer(&self, request: &HttpRequest) -> Option<crate::oauth::Answer> {
        let auth = self.auth.as_ref()?;
        if let Some(answer) = auth.handle(request) {
            return Some(answer);
        }
        match request.path.as_str() {
            "/mcp" => auth.check_mcp(request).err(),
            "/sse" if self.server.args.sse => auth.check_mcp(request).err(),
            path if self.server.args.sse && path.starts_with("/messages?") => {
                auth.check_mcp(request).err()
            }
            _ => None,
        }
    }

    fn post(&self, connection: u64, request: &HttpRequest, stream: &TcpStream) -> bool {
        flood::wait_while_flooding(&self.server);
        let accept = request.header("accept").unwrap_or_default();
        if !(accept.contains("application/json") && accept.contains("text/event-stream")) {
            let message =
                "Not Acceptable: Client must accept both application/json and text/event-stream";
            return reply(stream, 406, &[], error_body(-32600, message));
        }
        if !request
            .header("content-type")
            .is_some_and(|t| t.starts_with("application/json"))
        {
            let message = "Unsupported Media Type: Content-Type must be application/json";
            return reply(stream, 415, &[], error_body(-32600, message));
        }
        let Ok(message) = serde_json::from_slice::<Value>(&request.body) else {
            return reply(stream, 400, &[], error_body(-32700, "Parse error"));
        };
        let method = message.get("method").and_then(Value::as_str);
        let id = message.get("id").cloned();
        let params = message.get("params").cloned().unwrap_or_default();
        let is_modern = params
            .get("_meta")
            .is_some_and(|meta| meta.get(PROTOCOL_VERSION_KEY).is_some());

        // A modern notification carries no envelope, only the version header, and no session
        // (the 2026-07-28 revision defines no client notification over HTTP: it is taken, 202).
        let modern_notification = self.server.args.modern
            && id.is_none()
            && method.is_some()
            && request
                .header("mcp-protocol-version")
                .is_some_and(|version| version > "2025-11-25");

        let mut session_header = None;
        if is_modern {
            if let Err(why) = check_routing_headers(request, &message) {
                return reply(stream, 400, &[], error_body(HEADER_MISMATCH, &why));
            }
        } else if modern_notification {
            // No session to check: the modern era has none.
        } else if method == Some("initialize") {
            session_header = Some(self.new_session());
        } else if let Err((status, body)) = self.check_session(request, true) {
            return reply(stream, status, &[], body);
        }

        match (method, id) {
            (Some(method), Some(id)) => {
                let exchange = Exchange {
                    connection,
                    id,
                    method: method.to_owned(),
                    params,
                    modern: is_modern,
                    session_header,
                };
                self.request(exchange, stream)
            }
            (Some("notifications/cancelled"), None) => {
                self.server.cancel(&message["params"]["requestId"]);
                reply(stream, 202, &[], Vec::new())
            }
            (Some(_), None) => reply(stream, 202, &[], Vec::new()),
            (None, Some(id))
                if message.get("result").is_some() || message.get("error").is_some() =>
            {
                self.server.deliver_reply(&id, message.clone());
                reply(stream, 202, &[], Vec::new())
            }
            _ => reply(stream, 400, &[], error_body(-32600, "Invalid Request")),
        }
    }

    /// Runs a request, answering on this connection (or, when its stream is dropped on
    /// purpose, on the GETs that resume it). Returns whether the connection stays open.
    fn request(&self, exchange: Exchange, connection: &TcpStream) -> bool {
        let args = &self.server.args;
        let drop_mode = match args.drop_streams {
            Some(mode) if !args.http_json && exchange.method == "tools/call" => Some(mode),
            _ => None,
        };
        let mut headers = Vec::new();
        if let Some(session) = &exchange.session_header {
            headers.push(("Mcp-Session-Id", session.clone()));
        }
        let Ok(writer) = connection.try_clone() else {
            return false;
        };
        let stream_id = format!("s{}", self.next_stream.fetch_add(1, Ordering::SeqCst));
        let stream = Arc::new(Stream::new(StreamSetup {
            writer: Some(writer),
            json: args.http_json,
            modern: exchange.modern,
            headers,
            ids: drop_mode
                .filter(|m| *m != DropStreams::Unprimed)
                .map(|_| stream_id.clone()),
        }));

        let cancelled = Arc::new(Cancel::new());
        self.server
            .in_flight
            .lock()
            .unwrap()
            .insert(exchange.id.to_string(), cancelled.clone());
        let rejected = modern::take_rejection(&self.server, &exchange.params);
        let request = Request {
            id: exchange.id.clone(),
            method: exchange.method.clone(),
            params: exchange.params.clone(),
            cancelled: cancelled.clone(),
            rejected,
        };

        if let Some(mode) = drop_mode {
            // Prime the stream (or not), then close the connection before any answer.
            stream.drop_connection(args.retry_ms, mode != DropStreams::Unprimed);
            self.streams
                .lock()
                .unwrap()
                .insert(stream_id, stream.clone());
            self.log(json!({ "stream_dropped": exchange.id, "at_ms": self.now() }));
            self.spawn_handler(request, stream);
            return false;
        }

        self.spawn_handler(request, stream.clone());
        // Wait for the answer, watching for the client going away meanwhile: asleep until the
        // client moves. The answer being done need not wake this thread, since its next move
        // on the connection (another request, or its close) is what it would wait for next.
        loop {
            let client = wait_for_client(connection);
            if stream.is_done() {
                return stream.connection_usable();
            }
            match client {
                ClientMove::Left => break,
                // Bytes before the answer is done (this client does not pipeline its requests):
                // wait for the answer a little, then look at the connection again.
                ClientMove::Sent => {
                    stream.wait_done(client_watch::LOOK_AGAIN_AFTER);
                }
            }
        }
        self.log(json!({
            "closed_by_client": exchange.id,
            "connection": exchange.connection,
            "at_ms": self.now(),
        }));
        // In the modern era a closed stream is the cancel; in the legacy era it is not.
        if exchange.modern {
            cancelled.set();
        }
        false
    }

    /// Runs the method handler on its own thread, with `stream` receiving what it sends.
    fn spawn_handler(&self, request: Request, stream: Arc<Stream>) {
        let server = self.server.clone();
        let done_log = LogLine::new(self);
        thread::spawn(move || {
            SINK.with(|sink| *sink.borrow_mut() = Some(stream.clone()));
            let reply = methods::handle(&server, &request);
            SINK.with(|sink| sink.borrow_mut().take());
            forget_in_flight(&server, &request);
            let cancelled = request.is_cancelled();
            done_log.write(json!({ "handler_done": request.id, "cancelled": cancelled }));
            if cancelled {
                // A cancelled request gets no response, whatever the handler produced.
                stream.finish(None);
                return;
            }
            let response = match reply {
                Ok(result) => json!({ "jsonrpc": "2.0", "id": request.id, "result": result }),
                Err(error) => {
                    json!({ "jsonrpc": "2.0", "id": request.id, "error": error.to_json() })
                }
            };
            stream.finish(Some(response));
        });
    }

    /// GET: resumes a stream after `Last-Event-ID`. There is no standalone stream (405).
    fn get(&self, number: u64, request: &HttpRequest, connection: &TcpStream) -> bool {
        if self.server.args.modern_only {
            return reply(
                connection,
                405,
                &[],
                error_body(-32600, "Method not allowed"),
            );
        }
        if !request
            .header("accept")
            .is_some_and(|a| a.contains("text/event-stream"))
        {
            let message = "Not Acceptable: Client must accept text/event-stream";
            return reply(connection, 406, &[], error_body(-32600, message));
        }
        if let Err((status, body)) = self.check_session(request, false) {
            return reply(connection, status, &[], body);
        }
        let Some(last_id) = request.header("last-event-id") else {
            return self.standalone(number, connection);
        };
        let found = last_id.split_once('-').and_then(|(stream_id, seq)| {
            let stream = self.streams.lock().unwrap().get(stream_id).cloned()?;
            Some((stream, seq.parse::<u64>().ok()?))
        });
        let Some((stream, after)) = found else {
            return reply(
                connection,
                404,
                &[],
                error_body(-32600, "unknown Last-Event-ID"),
            );
        };
        let again = self.server.args.drop_streams == Some(DropStreams::Always);
        stream.replay(connection, after, again, self.server.args.retry_ms)
    }

    /// The standalone SSE stream: held open, carrying what `/broadcast` sends, until the
    /// client closes it.
    fn standalone(&self, number: u64, connection: &TcpStream) -> bool {
        let Ok(mut writer) = connection.try_clone() else {
            return false;
        };
        thread::sleep(Duration::from_millis(self.server.args.standalone_delay_ms));
        // Under the lock, so that a broadcast made once the client has the headers finds it.
        let mut streams = self.standalone.lock().unwrap();
        if http_wire::start_chunked(&mut writer, 200, &sse_headers()).is_err() {
            return false;
        }
        let flood_writer = match self.server.args.flood {
            Some(_) => writer.try_clone().ok(),
            None => None,
        };
        streams.push(writer);
        drop(streams);
        if let Some(mut writer) = flood_writer {
            flood::on_stream(&self.server, |data| {
                let event = sse_event(None, data);
                http_wire::write_chunk(&mut writer, event.as_bytes()).is_ok()
            });
        }
        wait_until_client_leaves(connection);
        self.log(json!({ "standalone_closed": number, "at_ms": self.now() }));
        false
    }

    /// `POST /broadcast` (not MCP; tests use it): sends the body as an event on every
    /// standalone stream, and answers how many streams took it.
    fn broadcast(&self, request: &HttpRequest, connection: &TcpStream) -> bool {
        let event = sse_event(None, &String::from_utf8_lossy(&request.body));
        let mut streams = self.standalone.lock().unwrap();
        streams.retain_mut(|stream| http_wire::write_chunk(stream, event.as_bytes()).is_ok());
        let body = json!({ "reached": streams.len() }).to_string().into_bytes();
        reply(connection, 200, &[], body)
    }

    /// DELETE: ends a legacy session.
    fn delete(&self, request: &HttpRequest, connection: &TcpStream) -> bool {
        if self.server.args.modern_only {
            return reply(
                connection,
                405,
                &[],
                error_body(-32600, "Method not allowed"),
            );
        }
        let removed = request
            .header("mcp-session-id")
            .is_some_and(|id| self.sessions.lock().unwrap().remove(id).is_some());
        match removed {
            true => reply(connection, 200, &[], Vec::new()),
            false => reply(
                connection,
                404,
                &[],
                error_body(-32600, "Session not found"),
            ),
        }
    }

    fn new_session(&self) -> String {
        let id = format!(
            "session-{}",
            self.next_session.fetch_add(1, Ordering::SeqCst)
        );
        self.sessions.lock().unwrap().insert(id.clone(), 0);
        id
    }

    /// A legacy request must carry a live session; `--expire-session-after N` ends each session
    /// once it has served N POSTs (`count` says whether this request is one).
    fn check_session(&self, request: &HttpRequest, count: bool) -> Result<(), (u16, Vec<u8>)> {
        let Some(id) = request.header("mcp-session-id") else {
            return Err((400, error_body(-32000, "Bad Request: Missing session ID")));
        };
        let mut sessions = self.sessions.lock().unwrap();
        let not_found = || (404, error_body(-32600, "Session not found"));
        let served = sessions.get_mut(id).ok_or_else(not_found)?;
        if self
            .server
            .args
            .expire_session_after
            .is_some_and(|limit| *served >= limit)
        {
            sessions.remove(id);
            return Err(not_found());
        }
        *served += usize::from(count);
        Ok(())
    }

    fn log_request(&self, connection: u64, request: &HttpRequest) {
        let headers: Map<String, Value> = request
            .headers
            .iter()
            .map(|(name, value)| (name.to_ascii_lowercase(), Value::from(value.as_str())))
            .collect();
        let body = serde_json::from_slice::<Value>(&request.body)
            .unwrap_or_else(|_| Value::from(String::from_utf8_lossy(&request.body)));
        self.log(json!({ "http": {
            "connection": connection,
            "method": request.method,
            "path": request.path,
            "headers": headers,
            "body": body,
            "at_ms": self.now(),
        }}));
    }

    fn log(&self, line: Value) {
        if let Some(log) = &self.log {
            // One write per line: handler threads append to the same file through handles of
            // their own, and `writeln!` may split a line into several writes.
            let line = format!("{line}\n");
            let mut file = log.lock().unwrap();
            file.write_all(line.as_bytes())
                .expect("cannot write the log file");
        }
    }

    fn now(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }
}

/// Writes log lines from a handler thread.
struct LogLine {
    file: Option<File>,
    started: Instant,
}

impl LogLine {
    fn new(http: &Http) -> Self {
        let file = http
            .log
            .as_ref()
            .and_then(|log| log.lock().unwrap().try_clone().ok());
        LogLine {
            file,
            started: http.started,
        }
    }

    fn write(mut self, mut line: Value) {
        line["at_ms"] = (self.started.elapsed().as_millis() as u64).into();
        if let Some(file) = &mut self.file {
            // One write per line, so lines from several threads never interleave.
            let _ = file.write_all(format!("{line}\n").as_bytes());
        }
    }
}

/// Drops the request's cancel flag, unless a later request reused its id.
fn forget_in_flight(server: &Server, request: &Request) {
    let key = request.id.to_string();
    let mut in_flight = server.in_flight.lock().unwrap();
    if in_flight
        .get(&key)
        .is_some_and(|flag| Arc::ptr_eq(flag, &request.cancelled))
    {
        in_flight.remove(&key);
    }
}

/// What a POSTed request needs for its answer.
struct Exchange {
    connection: u64,
    id: Value,
    method: String,
    params: Value,
    modern: bool,
    /// Set on `initialize`: the new session's id, sent back in `Mcp-Session-Id`.
    session_header: Option<String>,
}

thread_local! {
    /// The stream of the request the current handler thread serves.
    static SINK: RefCell<Option<Arc<Stream>>> = const { RefCell::new(None) };
}

/// Sends a message on the current request's stream, when there is one (HTTP mode).
pub fn send_on_current_stream(message: &Value) -> bool {
    SINK.with(|sink| match &*sink.borrow() {
        Some(stream) => {
            stream.push(message);
            true
        }
        None => false,
    })
}

/// One request's answer: a JSON body, or an SSE stream written as messages come.
struct Stream {
    state: Mutex<StreamState>,
    changed: Condvar,
}

struct StreamSetup {
    /// The connection to answer on; `None` once it is gone.
    writer: Option<TcpStream>,
    json: bool,
    modern: bool,
    headers: Vec<(&'static str, String)>,
    /// When set, events carry ids `<this>-<n>` and are kept for resumption.
    ids: Option<String>,
}

struct StreamState {
    setup: StreamSetup,
    started: bool,
    /// Events so far (kept when ids are on), numbered from 1.
    events: Vec<String>,
    done: bool,
    /// Whether the connection can serve another request after this answer.
    usable: bool,
}

impl Stream {
    fn new(setup: StreamSetup) -> Self {
        Stream {
            state: Mutex::new(StreamState {
                setup,
                started: false,
                events: Vec::new(),
                done: false,
                usable: true,
            }),
            changed: Condvar::new(),
        }
    }

    /// A message sent while the request runs (a notification or a request to the client).
    fn push(&self, message: &Value) {
        let mut state = self.lock();
        if state.setup.json {
            return; // a JSON answer holds the response only
        }
        state.send_event(&message.to_string());
        self.changed.notify_all();
    }

    /// The response (`None`: there is none, the request was cancelled); ends the answer.
    fn finish(&self, response: Option<Value>) {
        let mut state = self.lock();
        // Not streaming yet: a JSON answer is one body, and so is an error that maps to an
        // HTTP status of its own.
        let status = match (&response, state.setup.modern) {
            (Some(response), true) => http_status(response),
            _ => 200,
        };
        let whole_body = !state.started && (state.setup.json || status != 200);
        match response {
            Some(response) if whole_body && state.setup.writer.is_some() => {
                let writer = state.setup.writer.as_ref().expect("checked");
                let body = response.to_string().into_bytes();
                let usable = reply(writer, status, &state.setup.headers, body);
                if !usable {
                    // The thread waiting on the connection wakes only when it ends.
                    let _ = writer.shutdown(Shutdown::Both);
                }
                state.usable = usable;
            }
            Some(response) => {
                state.send_event(&response.to_string());
                state.end();
            }
            None => state.end(),
        }
        state.done = true;
        self.changed.notify_all();
    }

    /// Starts the SSE answer, primes it with an event id (or not), and closes the connection.
    fn drop_connection(&self, retry_ms: u64, primed: bool) {
        let mut state = self.lock();
        state.start();
        if primed {
            let id = state.setup.ids.clone().unwrap_or_default();
            state.write(format!("id: {id}-0\nretry: {retry_ms}\ndata: \n\n").as_bytes());
        }
        if let Some(writer) = state.setup.writer.take() {
            let _ = writer.shutdown(Shutdown::Both);
        }
        state.started = true;
    }

    /// Replays the events after `after`, then follows the stream to its end on `connection`.
    /// With `drop_again`, the replay is primed and dropped instead, bringing nothing new.
    fn replay(&self, connection: &TcpStream, after: u64, drop_again: bool, retry_ms: u64) -> bool {
        let Ok(writer) = connection.try_clone() else {
            return false;
        };
        let mut out = writer;
        if http_wire::start_chunked(&mut out, 200, &sse_headers()).is_err() {
            return false;
        }
        let mut state = self.lock();
        let prefix = state.setup.ids.clone().unwrap_or_default();
        if drop_again {
            let event = format!("id: {prefix}-{after}\nretry: {retry_ms}\ndata: \n\n");
            let _ = http_wire::write_chunk(&mut out, event.as_bytes());
            return false;
        }
        let mut next = after as usize;
        loop {
            while next < state.events.len() {
                let event = sse_event(Some(&format!("{prefix}-{}", next + 1)), &state.events[next]);
                if http_wire::write_chunk(&mut out, event.as_bytes()).is_err() {
                    return false;
                }
                next += 1;
            }
            if state.done {
                return http_wire::end_chunked(&mut out).is_ok();
            }
            state = self.changed.wait(state).unwrap();
        }
    }

    fn is_done(&self) -> bool {
        self.lock().done
    }

    /// Waits up to `limit` for the answer to be complete.
    fn wait_done(&self, limit: Duration) -> bool {
        let state = self.lock();
        let (state, _) = self
            .changed
            .wait_timeout_while(state, limit, |s| !s.done)
            .unwrap();
        state.done
    }

    fn connection_usable(&self) -> bool {
        let state = self.lock();
        state.usable && state.setup.writer.is_some()
    }

    fn lock(&self) -> MutexGuard<'_, StreamState> {
        self.state.lock().unwrap()
    }
}

impl StreamState {
    fn start(&mut self) {
        if self.started {
            return;
        }
        self.started = true;
        let mut headers = sse_headers();
        headers.extend(self.setup.headers.iter().cloned());
        if let Some(writer) = &mut self.setup.writer {
            if http_wire::start_chunked(writer, 200, &headers).is_err() {
                self.setup.writer = None;
            }
        }
    }

    fn send_event(&mut self, data: &str) {
        self.start();
        self.events.push(data.to_owned());
        let id = self
            .setup
            .ids
            .as_ref()
            .map(|prefix| format!("{prefix}-{}", self.events.len()));
        self.write(sse_event(id.as_deref(), data).as_bytes());
    }

    fn write(&mut self, bytes: &[u8]) {
        if let Some(writer) = &mut self.setup.writer {
            if http_wire::write_chunk(writer, bytes).is_err() {
                self.setup.writer = None;
            }
        }
    }

    fn end(&mut self) {
        if !self.started {
            // A cancelled request that never streamed: an empty stream.
            self.start();
        }
        if let Some(writer) = &mut self.setup.writer {
            if http_wire::end_chunked(writer).is_err() {
                self.setup.writer = None;
            }
        }
    }
}

fn sse_headers() -> Vec<(&'static str, String)> {
    vec![
        ("Content-Type", "text/event-stream".into()),
        ("Cache-Control", "no-cache".into()),
    ]
}

fn sse_event(id: Option<&str>, data: &str) -> String {
    match id {
        Some(id) => format!("id: {id}\nevent: message\ndata: {data}\n\n"),
        None => format!("event: message\ndata: {data}\n\n"),
    }
}

/// The HTTP status a modern error answer gets (as Python mcp 2.3.0 maps them).
fn http_status(response: &Value) -> u16 {
    match response["error"]["code"].as_i64() {
        Some(-32700 | -32600 | -32602 | -32020 | -32021 | -32022) => 400,
        Some(-32601) => 404,
        _ => 200,
    }
}

/// Writes a whole response; false if the connection must close.
fn reply(connection: &TcpStream, status: u16, headers: &[(&str, String)], body: Vec<u8>) -> bool {
    let Ok(mut writer) = connection.try_clone() else {
        return false;
    };
    let mut all = headers.to_vec();
    if !body.is_empty() {
        all.push(("Content-Type", "application/json".into()));
    }
    http_wire::write_response(&mut writer, status, &all, &body).is_ok()
}

fn error_body(code: i64, message: &str) -> Vec<u8> {
    json!({ "jsonrpc": "2.0", "id": null, "error": { "code": code, "message": message } })
        .to_string()
        .into_bytes()
}

/// The modern era's routing headers must agree with the body (SEP-2243), as a modern server
/// checks them: the version, the method, the name, and the declared `Mcp-Param-*` headers.
fn check_routing_headers(request: &HttpRequest, message: &Value) -> Result<(), String> {
    let params = &message["params"];
    let version = params["_meta"][PROTOCOL_VERSION_KEY].as_str();
    if request.header("mcp-protocol-version") != version {
        return Err(
            "mcp-protocol-version header does not match the request envelope's protocol version"
                .into(),
        );
    }
    let method = message["method"].as_str();
    if request.header("mcp-method") != method {
        return Err("mcp-method header does not match the request body's method".into());
    }
    for name in ["mcp-protocol-version", "mcp-method", "mcp-name"] {
        if request.header_count(name) > 1 {
            return Err(format!("{name} header appears more than once"));
        }
    }
    let name_key = match method {
        Some("tools/call" | "prompts/get") => Some("name"),
        Some("resources/read") => Some("uri"),
        _ => None,
    };
    if let Some(expected) = name_key.and_then(|key| params[key].as_str()) {
        let sent = request.header("mcp-name").and_then(decode_header_value);
        if sent.as_deref() != Some(expected) {
            return Err("mcp-name header does not match the request body".into());
        }
    }
    if method == Some("tools/call") && params["name"] == "header_ok" {
        let arguments = &params["arguments"];
        for (header, argument) in [("mcp-param-region", "region"), ("mcp-param-count", "count")] {
            let expected = match &arguments[argument] {
                Value::Null => None,
                Value::String(s) => Some(s.clone()),
                other => Some(other.to_string()),
            };
            let sent = request.header(header).map(decode_header_value);
            let matches = match (&sent, &expected) {
                (None, None) => true,
                (Some(Some(sent)), Some(expected)) => sent == expected,
                _ => false,
            };
            if !matches {
                return Err(format!(
                    "{header} header does not match the argument {argument}"
                ));
            }
        }
    }
    Ok(())
}

/// A header value as sent: plain, or `=?base64?...?=`. `None` for a broken sentinel.
fn decode_header_value(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    {
        Some(payload) => String::from_utf8(base64_decode(payload)?).ok(),
        None => Some(value.to_owned()),
    }
}

pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    if text.len() % 4 != 0 {
        return None;
    }
    let mut out = Vec::new();
    for chunk in text.as_bytes().chunks(4) {
        let padding = chunk.iter().rev().take_while(|&&c| c == b'=').count();
        let mut n = 0u32;
        for &c in &chunk[..4 - padding] {
            n = n << 6 | value(c)?;
        }
        n <<= 6 * padding as u32;
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..4 - padding]);
    }
    Some(out)
}
