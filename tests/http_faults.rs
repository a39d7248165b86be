//! Fault injection for the Streamable HTTP transport, through the public API: a scripted server
//! on a real socket answers one request with an error status, a wrong body, a stream cut short,
//! a reset, a slow drip, a redirect or silence. Each failing call must end with the documented
//! status, within a wide bound (against hangs, never a tight timing), and the same client must
//! then work again: a per-request fault never takes the transport down.
//!
//! The server answers `initialize` and every notification by itself; only the requests under
//! test (and the pings that follow them) take scripted steps, in order. With the script empty it
//! answers success, on a connection it keeps alive, so the pings also exercise reuse.

mod common;

use mcpc::handlers::Progress;
use mcpc::{
    CancellationToken, Client, ClientOptions, ConnectMode, HttpConfig, RequestOptions, Status,
};
use serde_json::{json, Value};
use std::collections::{HashSet, VecDeque};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Every failing call must return within this; a hang would not.
const BOUND: Duration = Duration::from_secs(10);
/// One byte of a dripped answer every this.
const DRIP: Duration = Duration::from_millis(2);

/// The fd-count test takes this for writing, every other test for reading: while it counts,
/// nothing else in this process opens or closes sockets.
static FD_GATE: RwLock<()> = RwLock::new(());

fn shared_gate() -> std::sync::RwLockReadGuard<'static, ()> {
    FD_GATE.read().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------------------------------------
// The scripted server
// ---------------------------------------------------------------------------------------------

/// How an answer's bytes go out.
#[derive(Clone, Copy, Debug)]
enum Pace {
    AtOnce,
    /// One byte at a time, with this pause between bytes.
    Drip(Duration),
}

/// What happens to the connection once the bytes are out.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Then {
    /// Read the next request on it (the answer must be framed: Content-Length).
    KeepAlive,
    /// Close it cleanly (FIN).
    Close,
    /// Reset it (SO_LINGER 0, then close: RST).
    Reset,
    /// Hold it open, silent, until the client closes it or the server stops.
    Hang,
}

type Render = Box<dyn Fn(&Value) -> Vec<u8> + Send>;

/// One scripted answer: its bytes (made from the request, for its id), how they go out, and
/// what follows.
struct Step {
    render: Render,
    pace: Pace,
    then: Then,
}

impl Step {
    /// Bytes made from the request (a JSON-RPC message), sent at once; the connection stays.
    fn answer(render: impl Fn(&Value) -> Vec<u8> + Send + 'static) -> Step {
        Step {
            render: Box::new(render),
            pace: Pace::AtOnce,
            then: Then::KeepAlive,
        }
    }

    /// The same bytes whatever the request.
    fn bytes(bytes: impl Into<Vec<u8>>) -> Step {
        let bytes = bytes.into();
        Step::answer(move |_| bytes.clone())
    }

    /// Accept the request and never say anything.
    fn silence() -> Step {
        Step::bytes(Vec::new()).then(Then::Hang)
    }

    fn dripped(mut self, every: Duration) -> Step {
        self.pace = Pace::Drip(every);
        self
    }

    fn then(mut self, then: Then) -> Step {
        self.then = then;
        self
    }
}

/// One request the server read.
#[derive(Clone, Debug)]
struct Request {
    connection: usize,
    method: String,
    /// Names in lower case.
    headers: Vec<(String, String)>,
    body: Value,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn rpc_method(&self) -> Option<&str> {
        self.body.get("method").and_then(Value::as_str)
    }
}

#[derive(Default)]
struct State {
    script: Mutex<VecDeque<Step>>,
    /// For GETs (stream resumption); without a step a GET gets 405.
    get_script: Mutex<VecDeque<Step>>,
    /// For notifications; without a step a notification gets 202.
    notice_script: Mutex<VecDeque<Step>>,
    requests: Mutex<Vec<Request>>,
    connections: AtomicUsize,
    stopping: AtomicBool,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// A TcpListener on 127.0.0.1:0 that reads request after request on every connection it
/// accepts, and answers each with the next scripted step (see the module comment).
struct FaultServer {
    url: String,
    addr: SocketAddr,
    state: Arc<State>,
    acceptor: Option<JoinHandle<()>>,
}

impl FaultServer {
    fn start() -> FaultServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State::default());
        let acceptor = {
            let state = state.clone();
            std::thread::spawn(move || accept_loop(&listener, &state))
        };
        FaultServer {
            url: format!("http://{addr}/mcp"),
            addr,
            state,
            acceptor: Some(acceptor),
        }
    }

    fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Queues steps for the next requests under test.
    fn script(&self, steps: impl IntoIterator<Item = Step>) {
        lock(&self.state.script).extend(steps);
    }

    /// Queues steps for the next GETs.
    fn script_gets(&self, steps: impl IntoIterator<Item = Step>) {
        lock(&self.state.get_script).extend(steps);
    }

    /// Queues steps for the next notifications.
    fn script_notices(&self, steps: impl IntoIterator<Item = Step>) {
        lock(&self.state.notice_script).extend(steps);
    }

    fn steps_left(&self) -> usize {
        lock(&self.state.script).len()
            + lock(&self.state.get_script).len()
            + lock(&self.state.notice_script).len()
    }

    fn requests(&self) -> Vec<Request> {
        lock(&self.state.requests).clone()
    }

    fn connections(&self) -> usize {
        self.state.connections.load(Ordering::SeqCst)
    }

    /// Waits (within BOUND) until a request of this JSON-RPC method has arrived.
    fn wait_for_rpc(&self, method: &str) -> Request {
        let deadline = Instant::now() + BOUND;
        loop {
            let found = self
                .requests()
                .into_iter()
                .find(|r| r.rpc_method() == Some(method));
            if let Some(request) = found {
                return request;
            }
            assert!(Instant::now() < deadline, "no {method} reached the server");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// A legacy client of this server, connected, without the standalone GET stream.
    fn client(&self) -> Client {
        self.client_with(self.config(), legacy())
    }

    fn config(&self) -> HttpConfig {
        let mut config = HttpConfig::new(&self.url);
        config.listen = false;
        config
    }

    fn client_with(&self, config: HttpConfig, options: ClientOptions) -> Client {
        let client = Client::http(config, options);
        client.connect().expect("connect to the fault server");
        client
    }
}

impl Drop for FaultServer {
    fn drop(&mut self) {
        self.state.stopping.store(true, Ordering::SeqCst);
        // Wakes the blocking accept.
        let _ = TcpStream::connect(self.addr);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        let threads: Vec<_> = lock(&self.state.threads).drain(..).collect();
        for thread in threads {
            let _ = thread.join();
        }
    }
}

fn accept_loop(listener: &TcpListener, state: &Arc<State>) {
    for stream in listener.incoming() {
        if state.stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let connection = state.connections.fetch_add(1, Ordering::SeqCst);
        let thread = {
            let state = state.clone();
            std::thread::spawn(move || serve(stream, connection, &state))
        };
        lock(&state.threads).push(thread);
    }
}

/// Serves one connection: request after request, until a step ends it or the client does.
fn serve(mut stream: TcpStream, connection: usize, state: &State) {
    // Short reads, so a stopping server is noticed.
    stream
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let mut buffer = Vec::new();
    while let Some(request) = read_request(&mut stream, &mut buffer, connection, state) {
        lock(&state.requests).push(request.clone());
        let step = route(&request, state);
        let bytes = (step.render)(&request.body);
        let written = match step.pace {
            Pace::AtOnce => stream.write_all(&bytes).is_ok(),
            Pace::Drip(every) => drip(&mut stream, &bytes, every, state),
        };
        if !written {
            return;
        }
        match step.then {
            Then::KeepAlive => continue,
            Then::Close => {
                let _ = stream.shutdown(std::net::Shutdown::Write);
                return;
            }
            Then::Reset => {
                // Give the client a moment to take the bytes in before the RST.
                std::thread::sleep(Duration::from_millis(20));
                reset(stream);
                return;
            }
            Then::Hang => {
                // Until the client gives up on it (EOF) or the server stops.
                let mut scratch = Vec::new();
                while fill(&mut stream, &mut scratch, state) {
                    scratch.clear();
                }
                return;
            }
        }
    }
}

/// What answers a request: `initialize` and notifications are answered here; anything else
/// takes the next scripted step, or succeeds if there is none.
fn route(request: &Request, state: &State) -> Step {
    if request.method == "GET" {
        if let Some(step) = lock(&state.get_script).pop_front() {
            return step;
        }
    }
    if request.method != "POST" {
        return Step::bytes(http("405 Method Not Allowed", &[], ""));
    }
    let body = &request.body;
    if request.rpc_method() == Some("initialize") {
        return Step::answer(|request| {
            json_answer(
                request,
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "fault-server", "version": "1"}
                }),
            )
        });
    }
    // Notifications, and answers to requests of ours (there are none): acknowledged.
    if body.get("id").is_none() || body.get("method").is_none() {
        return lock(&state.notice_script)
            .pop_front()
            .unwrap_or_else(|| Step::bytes(http("202 Accepted", &[], "")));
    }
    lock(&state.script)
        .pop_front()
        .unwrap_or_else(|| Step::answer(|request| json_answer(request, json!({}))))
}

fn read_request(
    stream: &mut TcpStream,
    buffer: &mut Vec<u8>,
    connection: usize,
    state: &State,
) -> Option<Request> {
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        if !fill(stream, buffer, state) {
            return None;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let method = lines.next()?.split(' ').next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    assert!(
        !headers.iter().any(|(n, _)| n == "transfer-encoding"),
        "the client sent a chunked request: {head}"
    );
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map_or(0, |(_, v)| v.parse().unwrap());
    while buffer.len() < head_end + length {
        if !fill(stream, buffer, state) {
            return None;
        }
    }
    let body: Vec<u8> = buffer.drain(..head_end + length).skip(head_end).collect();
    Some(Request {
        connection,
        method,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}

/// Reads what is there into `buffer`. False at the end of the stream, on an error, or once
/// the server is stopping.
fn fill(stream: &mut TcpStream, buffer: &mut Vec<u8>, state: &State) -> bool {
    let mut chunk = [0; 4096];
    loop {
        if state.stopping.load(Ordering::SeqCst) {
            return false;
        }
        match stream.read(&mut chunk) {
            Ok(0) => return false,
            Ok(n) => {
                buffer.extend_from_slice(&chunk[..n]);
                return true;
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
            Err(_) => return false,
        }
    }
}

fn drip(stream: &mut TcpStream, bytes: &[u8], every: Duration, state: &State) -> bool {
    for byte in bytes {
        if state.stopping.load(Ordering::SeqCst) || stream.write_all(&[*byte]).is_err() {
            return false;
        }
        std::thread::sleep(every);
    }
    true
}

/// Closes with a TCP reset: SO_LINGER on with a zero timeout makes close send RST.
fn reset(stream: TcpStream) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid socket fd, and a pointer to a linger of the size given.
    let set = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(
        set,
        0,
        "setsockopt(SO_LINGER): {}",
        io::Error::last_os_error()
    );
    drop(stream);
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------------------------------------
// Answers
// ---------------------------------------------------------------------------------------------

/// A whole HTTP response with a Content-Length, so the connection can be kept.
fn http(status: &str, headers: &[(&str, &str)], body: &str) -> Vec<u8> {
    let mut head = format!("HTTP/1.1 {status}\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    format!("{head}Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

fn response(request: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": request["id"], "result": result})
}

fn json_answer(request: &Value, result: Value) -> Vec<u8> {
    let body = response(request, result).to_string();
    http("200 OK", &[("Content-Type", "application/json")], &body)
}

/// The head of an SSE answer whose body ends when the connection closes.
const SSE_HEAD: &str = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                        Cache-Control: no-cache\r\nConnection: close\r\n\r\n";

fn sse_event(message: &Value) -> String {
    format!("event: message\ndata: {message}\n\n")
}

fn tool_text(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": false})
}

// ---------------------------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------------------------

fn none() -> RequestOptions {
    RequestOptions::default()
}

fn legacy() -> ClientOptions {
    ClientOptions {
        mode: ConnectMode::Legacy,
        ..ClientOptions::default()
    }
}

fn ping(client: &Client) -> mcpc::Result<Value> {
    client.ping(&none())
}

/// Runs a call that must fail with `status`, within BOUND, with a message naming each of
/// `names`; then checks that the same client answers the next call.
#[track_caller]
fn fails_then_recovers(
    client: &Client,
    call: impl FnOnce(&Client) -> mcpc::Result<Value>,
    status: Status,
    names: &[&str],
) -> mcpc::Error {
    let start = Instant::now();
    let result = call(client);
    let took = start.elapsed();
    assert!(took < BOUND, "the failing call took {took:?}");
    let error = result.expect_err("the call should have failed");
    eprintln!("observed: {error}");
    assert_eq!(error.status, status, "{error}");
    for name in names {
        assert!(
            error.message.contains(name),
            "{error:?} does not name {name:?}"
        );
    }
    recovers(client);
    error
}

/// The next call on the same client succeeds.
#[track_caller]
fn recovers(client: &Client) {
    let start = Instant::now();
    let result = ping(client);
    assert!(
        start.elapsed() < BOUND,
        "the next call took {:?}",
        start.elapsed()
    );
    if let Err(error) = result {
        panic!("the next call on the same client failed: {error}");
    }
}

// ---------------------------------------------------------------------------------------------
// The faults
// ---------------------------------------------------------------------------------------------

#[test]
fn an_http_500_with_an_html_body_is_a_transport_error_naming_the_status() {
    let _gate = shared_gate();
    let server = FaultServer::start();
    let client = server.client();
    let page = "<html><body><h1>Internal Server Error</h1></body></html>";
    server.script([Step::bytes(http(
        "500 Internal Server Error",
        &[("Content-Type", "text/html")],
        page,
    ))]);
    let error = fails_then_recovers(
        &client,
        ping,
        Status::TransportError,
        &["HTTP 500", "Internal Server Error", "ping"],
    );
    // The start of the body is kept for the host's log.
    assert!(error.message.contains("<html>"), "{error}");
    // The error body was read whole, so its connection went back to the pool: the next call
    // came on it.
    let pings: Vec<Request> = server
        .requests()
        .into_iter()
        .filter(|r| r.rpc_method() == Some("ping"))
        .collect();
    assert_eq!(pings.len(), 2);
    assert_eq!(pings[0].connection, pings[1].connection);
    assert_eq!(server.steps_left(), 0);
}

#[test]
fn a_200_with_a_wrong_content_type_is_a_protocol_error_naming_the_content_type() {
    let _gate = shared_gate();
    let server = FaultServer::start();
    let client = server.client();
    server.script([Step::answer(|request| {
        let body = response(request, json!({})).to_string();
        http("200 OK", &[("Content-Type", "text/plain")], &body)
    })]);
    fails_then_recovers(&client, ping, Status::ProtocolError, &["\"text/plain\""]);
    // And an answer with no Content-Type at all.
    server.script([Step::answer(|request| {
        http("200 OK", &[], &response(request, json!({})).to_string())
    })]);
    fails_then_recovers(&client, ping, Status::ProtocolError, &["Content-Type \"\""]);
    assert_eq!(server.steps_left(), 0);
}

#[test]
fn an_sse_stream_that_ends_mid_event_is_a_protocol_error_not_a_hang() {
    let _gate = shared_gate();
    let server = FaultServer::start();
    let client = server.client();
    let why = "closed the SSE stream without a response to the ping request";
    // Cut in the middle of a data line.
    server.script([Step::answer(|request| {
        let event = sse_event(&response(request, json!({})));
        format!("{SSE_HEAD}{}", &event[..event.len() / 2]).into_bytes()
    })
    .then(Then::Close)]);
    fails_then_recovers(&client, ping, Status::ProtocolError, &[why]);
    // A whole data line holding the whole response, but no blank line: never dispatched.
    server.script([Step::answer(|request| {
        format!("{SSE_HEAD}data: {}\n", response(request, json!({}))).into_bytes()
    })
    .then(Then::Close)]);
    fails_then_recovers(&client, ping, Status::ProtocolError, &[why]);
    // Cut mid-event by a reset: the same, with the connection's error said.
    server.script([Step::answer(|request| {
        let event = sse_event(&response(request, json!({})));
        format!("{SSE_HEAD}{}", &event[..event.len() / 2]).into_bytes()
    })
    .then(Then::Reset)]);
    fails_then_recovers(&client, ping, Status::ProtocolError, &[why]);
    // A chunked stream cut inside a chunk, then closed cleanly.
    server.script([Step::bytes(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n\
         40\r\nevent: message\ndata: {\"jsonrpc\":\"2.0\"",
    )
    .then(Then::Close)]);
    fails_then_recovers(&client, ping, Status::ProtocolError, &[why]);
    assert_eq!(server.steps_left(), 0);
}

#[test]
fn an_sse_stream_that_carries_an_event_then_closes_without_the_response_is_a_protocol_error() {
    let _gate = shared_gate();
    let server = FaultServer::start();
    let client = server.client();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let opts = RequestOptions {
        progress_token: Some(json!("p-1")),
        on_progress: Some({
            let heard = heard.clone();
            Arc::new(move |p: &Progress| lock(&heard).push(p.progress))
        }),
        ..none()
    };
    server.script([Step::answer(|request| {
        let token = &request["params"]["_meta"]["progressToken"];
        let progress = json!({
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": token, "progress": 1, "total": 2}
        });
        format!("{SSE_HEAD}{}", sse_event(&progress)).into_bytes()
    })
    .then(Then::Close)]);
    let error = fails_then_recovers(
        &client,
        |client| client.call_tool("half", None, &opts),
        Status::ProtocolError,
        &["closed the SSE stream without a response to the tools/call request"],
    );
    assert!(error.request_id.is_some(), "{error:?}");
    // The event itself was delivered before the stream ended.
    let deadline = Instant::now() + BOUND;
    while lock(&heard).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(*lock(&heard), [1.0]);
}

#[test]
fn a_connection_reset_mid_body_is_a_transport_error() {
    let _gate = shared_gate();
    let server = FaultServer::start();
    let client = server.client();
    server.script([Step::answer(|request| {
        let body = response(request, tool_text("never whole")).to_string();
        let head =
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n";
        format!("{head}{}", &body[..40]).into_bytes()
    })
    .then(Then::Reset)]);
    // ureq reads a reset during a body as the peer going away ("Peer disconnected"), so the
    // message says the body could not be read, as for a clean close (the next test).
    fails_then_recovers(
        &client,
        |client| client.call_tool("reset", None, &none()),
        Status::TransportError,
        &["cannot read the server's response"],
    );
    assert_eq!(server.steps_left(), 0);
}

#[test]
fn a_connection_closed_cleanly_mid_body_is_a_transport_error() {
    let _gate = shared_gate();
    let server = FaultServer::start();
    let client = server.client();
    server.script([Step::answer(|request| {
        let body = response(request, json!({})).to_string();
        let head =
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n";
        format!("{head}{}", &body[..20]).into_bytes()
    })
    .then(Then::Close)]);
    fails_then_recovers(
        &client,
        ping,
        Status::TransportError,
        &["cannot read the server's response"],
    );
    assert_eq!(server.steps_left(), 0);
}

#[test]
fn a_connection_closed_before_any_answer_is_a_transport_error() {
    let _gate = shared_gate();
    let server = FaultServer::start();
    let client = server.client();
    server.script([Step::bytes(Vec::new()).then(Then::Close)]);
    fails_then_recovers(&client, ping, Status::TransportError, &[&server.url]);
    server.script([Step::bytes(Vec::new()).then(Then::Reset)]);
    fails_then_recovers(&client, ping, Status::TransportError, &[&server.url]);
    assert_eq!(server.steps_left(), 0);
}

#[test]
fn a_json_body_dripped_byte_by_byte_succeeds() {
    let _gate = shared_gate();
    let server = FaultServer::start();
    let client = server.client();
    // The whole answer, status line and headers included, one byte at a time.
    server.script([
        Step::answer(|request| json_answer(request, tool_text("slow and steady"))).dripped(DRIP),
    ]);
    let start = Instant::now();
    let result = client.call_tool("drip", None, &none()).unwrap();
    assert!(start.elapsed() < BOUND);
    assert_eq!(result["content"][0]["text"], "slow and steady", "{result}");
    recovers(&client);
    assert_eq!(server.steps_left(), 0);
}

#[test]
fn an_sse_stream_dripped_byte_by_byte_succeeds_with_its_notification() {
    let _gate = shared_gate();
    let server = FaultServer::start();
    let client = server.client();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let opts = RequestOptions {
        progress_token: Some(json!("drip-1")),
        on_progress: Some({
            let heard = heard.clone();
            Arc::new(move |p: &Progress| lock(&heard).push((p.token.clone(), p.progress)))
        }),
        ..none()
    };
    server.script([Step::answer(|request| {
        let token = &request["params"]["_meta"]["progressToken"];
        let progress = json!({
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": token, "progress": 1, "total": 1}
        });
        // CRLF line ends on one event, LF on the other, and a comment: all parsed a byte at a
        // time.
        let first = sse_event(&progress).replace('\n', "\r\n");
        let answer = sse_event(&response(request, tool_text("dripped stream")));
        format!("{SSE_HEAD}: hello\n{first}{answer}").into_bytes()
    })
    .dripped(DRIP)
    .then(Then::Close)]);
    let start = Instant::now();
    let result = client.call_tool("drip", None, &opts).unwrap();
    assert!(start.elapsed() < BOUND);
    assert_eq!(result["content"][0]["text"], "dripped stream", "{result}");
    let deadline = Instant::now() + BOUND;
    while lock(&heard).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(*lock(&heard), [(json!("drip-1"), 1.0)]);
    recovers(&client);
    assert_eq!(server.steps_left(), 0);
}

#[test]
fn a_silent_server_ends_the_call_with_timeout_and_the_server_hears_the_cancel() {
    let _gate = shared_gate();
    let server = FaultServer::start();
    let client = server.client();
    server.script([Step::silence()]);
    let opts = RequestOptions::with_timeout(Duration::from_millis(300));
    let error = fails_then_recovers(
        &client,
        |client| client.ping(&opts),
        Status::Timeout,
        &["timed out after 300 ms"],
    );
    assert_eq!(
        error.cancel_reason.as_deref(),
        Some("timed out after 300 ms")
    );
    // Legacy era: the server is told, with a notice for the request's id.
    let notice = server.wait_for_rpc("notifications/cancelled");
    assert_eq!(
        notice.body["params"]["requestId"],
        json!(error.request_id.unwrap())
    );
    assert_eq!(server.steps_left(), 0);
}

#[test]
fn a_silent_server_ends_the_call_with_cancelled_when_another_thread_cancels() {
    let _gate = shared_gate();
    let server = FaultServer::start();
    let client = server.client();
    server.script([Step::silence()]);
    let token = CancellationToken::new();
    let canceller = {
        let (token, state) = (token.clone(), server.state.clone());
        std::thread::spawn(move || {
            // Once the request is at the server (its step taken), cancel it.
            let deadline = Instant::now() + BOUND;
            while !lock(&state.script).is_empty() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            std::thread::sleep(Duration::from_millis(50));
            assert!(token.cancel(Some("user pressed cancel")));
            Instant::now()
        })
    };
    let start = Instant::now();
    let error = client
        .ping(&RequestOptions::with_cancellation(&token))
        .unwrap_err();
    let returned = Instant::now();
    let cancelled = canceller.join().unwrap();
    assert!(returned - start < BOUND);
    let after_cancel = returned.saturating_duration_since(cancelled);
    assert!(after_cancel < Duration::from_secs(5), "{after_cancel:?}");
    assert_eq!(error.status, Status::Cancelled, "{error}");
    assert!(error.message.contains("user pressed cancel"), "{error}");
    assert_eq!(error.cancel_reason.as_deref(), Some("user pressed cancel"));
    recovers(&client);
    let notice = server.wait_for_rpc("notifications/cancelled");
    assert_eq!(notice.body["params"]["reason"], "user pressed cancel");
}

#[test]
fn a_call_that_times_out_while_its_answer_drips_in_ends_promptly() {
    let _gate = shared_gate();
    let server = FaultServer::start();
    let client = server.client();
    let opts = RequestOptions::with_timeout(Duration::from_millis(500));
    // About 20 s of dripping, for a JSON body, then for a stream.
    let long = "z".repeat(1000);
    let text = long.clone();
    server.script([
        Step::answer(move |request| json_answer(request, tool_text(&text)))
            .dripped(Duration::from_millis(20)),
    ]);
    fails_then_recovers(
        &client,
        |client| client.call_tool("drip", None, &opts),
        Status::Timeout,
        &["timed out after 500 ms"],
    );
    server.script([Step::answer(move |request| {
        let answer = sse_event(&response(request, tool_text(&long)));
        format!("{SSE_HEAD}: waking up\n\n{answer}").into_bytes()
    })
    .dripped(Duration::from_millis(20))
    .then(Then::Close)]);
    fails_then_recovers(
        &client,
        |client| client.call_tool("drip", None, &opts),
        Status::Timeout,
        &["timed out after 500 ms"],
    );
    assert_eq!(server.steps_left(), 0);
}

#[test]
fn a_server_that_never_acknowledges_the_cancel_notice_holds_neither_the_call_nor_the_next() {
    let _gate = shared_gate();
    let server = FaultServer::start();
    let client = server.client();
    server.script([Step::silence()]);
    server.script_notices([Step::silence()]);
    let opts = RequestOptions::with_timeout(Duration::from_millis(200));
    fails_then_recovers(
        &client,
        |client| client.ping(&opts),
        Status::Timeout,
        &["timed out after 200 ms"],
    );
    server.wait_for_rpc("notifications/cancelled");
    // Other calls do not wait for the notice either.
    for _ in 0..3 {
        recovers(&client);
    }
    let closing = Instant::now();
    client.close();
    assert!(
        closing.elapsed() < BOUND,
        "close took {:?}",
        closing.elapsed()
    );
    assert_eq!(server.steps_left(), 0);
}

#[test]
fn a_silent_server_trips_the_idle_timeout_as_a_transport_error() {
    let _gate = shared_gate();
    let server = FaultServer::start();
    let mut config = server.config();
    config.idle_timeout = Some(Duration::from_millis(300));
    let client = server.client_with(config, legacy());
    server.script([Step::silence()]);
    fails_then_recovers(&client, ping, Status::TransportError, &["timed out"]);
    assert_eq!(server.steps_left(), 0);
}

#[test]
fn a_redirect_to_another_origin_is_not_followed_and_leaks_no_authorization() {
    let _gate = shared_gate();
    let server = FaultServer::start();
    let elsewhere = FaultServer::start();
    let mut config = server.config();
    config.add_header("Authorization", "Bearer s3cret").unwrap();
    let client = server.client_with(config, legacy());
    let location = format!("http://127.0.0.1:{}/mcp", elsewhere.port());
    for status in [
        "301 Moved Permanently",
        "302 Found",
        "303 See Other",
        "307 Temporary Redirect",
        "308 Permanent Redirect",
    ] {
        server.script([Step::bytes(http(status, &[("Location", &location)], ""))]);
        let code = &status[..3];
        fails_then_recovers(
            &client,
            ping,
            Status::TransportError,
            &[&format!("HTTP {code}"), &location, "not followed"],
        );
    }
    // Nothing ever reached the other origin, not even a connection.
    assert_eq!(elsewhere.connections(), 0);
    assert!(elsewhere.requests().is_empty());
    // The first server saw the header on everything the client sent.
    let requests = server.requests();
    assert!(requests.len() >= 2 + 5 * 2, "{requests:?}");
    for request in &requests {
        assert_eq!(
            request.header("authorization"),
            Some("Bearer s3cret"),
            "{request:?}"
        );
    }
    assert_eq!(server.steps_left(), 0);
}

#[test]
fn a_json_body_that_is_not_json_rpc_is_a_protocol_error() {
    let _gate = shared_gate();
    let server = FaultServer::start();
    let client = server.client();
    let json_type = [("Content-Type", "application/json")];
    for body in [r#"{"hello":1}"#, "[]", r#""a string""#, "42", "null"] {
        server.script([Step::bytes(http("200 OK", &json_type, body))]);
        fails_then_recovers(
            &client,
            ping,
            Status::ProtocolError,
            &["holds no response for id"],
        );
    }
    // A response, but to another id.
    server.script([Step::bytes(http(
        "200 OK",
        &json_type,
        r#"{"jsonrpc":"2.0","id":987654,"result":{}}"#,
    ))]);
    fails_then_recovers(
        &client,
        ping,
        Status::ProtocolError,
        &["no response for id"],
    );
    // Not JSON at all.
    server.script([Step::bytes(http("200 OK", &json_type, "{\"jsonrpc\":"))]);
    fails_then_recovers(&client, ping, Status::ProtocolError, &["not JSON"]);
    assert_eq!(server.steps_left(), 0);
}

// ---------------------------------------------------------------------------------------------
// More ways for a server to misbehave
// ---------------------------------------------------------------------------------------------

#[test]
fn an_sse_stream_left_open_after_its_response_does_not_hold_the_call() {
    let _gate = shared_gate();
    let server = FaultServer::start();
    let client = server.client();
    server.script([Step::answer(|request| {
        format!("{SSE_HEAD}{}", sse_event(&response(request, json!({})))).into_bytes()
    })
    .then(Then::Hang)]);
    let start = Instant::now();
    ping(&client).unwrap();
    assert!(start.elapsed() < BOUND);
    recovers(&client);
    assert_eq!(server.steps_left(), 0);
}

/// The caller reads a stream's end itself when the bytes read so far end with a chunked body's
/// last chunk (transport/http/body_end.rs). A server whose data only looks like that, a chunk
/// that ends its data with those bytes and never sends the rest, makes the caller wait for the
/// real end, as a worker would have: the drain deadline bounds it, and the call keeps its
/// answer; the connection is given up and the next call gets another.
#[test]
fn data_that_looks_like_the_bodys_end_does_not_hold_the_call_for_ever() {
    let _gate = shared_gate();
    let server = FaultServer::start();
    let client = server.client();
    server.script([Step::answer(|request| {
        // An SSE blank line, a field named "0" (ignored), a blank line: harmless to the
        // stream, and the chunk's data ends with the last chunk's bytes. The chunk's own line
        // end never comes.
        let data = format!("{}\r\n0\r\n\r\n", sse_event(&response(request, json!({}))));
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
             Transfer-Encoding: chunked\r\n\r\n{:x}\r\n{data}",
            data.len()
        )
        .into_bytes()
    })
    .then(Then::Hang)]);
    let start = Instant::now();
    ping(&client).unwrap();
    assert!(start.elapsed() < BOUND, "took {:?}", start.elapsed());
    recovers(&client);
    assert_eq!(server.steps_left(), 0);
}

#[test]
fn a_primed_sse_stream_that_drops_is_resumed_and_gives_up_in_bounded_time() {
    let _gate = shared_gate();
    let server = FaultServer::start();
    let client = server.client();
    let primed = |retry_ms: u64| {
        Step::bytes(format!("{SSE_HEAD}id: ev-1\nretry: {retry_ms}\ndata:\n\n")).then(Then::Close)
    };

    // The GET with Last-Event-ID brings the response: the call succeeds.
    let id = Arc::new(Mutex::new(Value::Null));
    server.script([Step::answer({
        let id = id.clone();
        move |request| {
            *lock(&id) = request["id"].clone();
            format!("{SSE_HEAD}id: ev-1\nretry: 100\ndata:\n\n").into_bytes()
        }
    })
    .then(Then::Close)]);
    server.script_gets([Step::answer(move |_| {
        let answer = json!({"jsonrpc": "2.0", "id": *lock(&id), "result": {}});
        format!("{SSE_HEAD}id: ev-2\n{}", sse_event(&answer)).into_bytes()
    })
    .then(Then::Close)]);
    ping(&client).unwrap();
    let resumed = server
        .requests()
        .into_iter()
        .find(|r| r.method == "GET")
        .expect("a GET resumed the stream");
    assert_eq!(resumed.header("last-event-id"), Some("ev-1"));

    // Resumption refused (405): a transport error naming the status.
    server.script([primed(100)]);
    fails_then_recovers(&client, ping, Status::TransportError, &["HTTP 405"]);

    // Resumed streams that bring nothing: given up after a few tries.
    server.script([primed(100)]);
    server.script_gets([primed(100), primed(100), primed(100)]);
    fails_then_recovers(
        &client,
        ping,
        Status::ProtocolError,
        &["without a response to the ping request", "reconnections"],
    );
    // A reconnection delay past the budget is not waited for.
    server.script([primed(3_600_000)]);
    fails_then_recovers(&client, ping, Status::ProtocolError, &["past the budget"]);
    // (What the give-up left in the GET script is not used.)
    lock(&server.state.get_script).clear();
    assert_eq!(server.steps_left(), 0);
}

#[test]
fn answers_over_the_size_limit_are_protocol_errors_not_unbounded_reads() {
    let _gate = shared_gate();
    let server = FaultServer::start();
    let mut config = server.config();
    config.max_message_bytes = 1024;
    let client = server.client_with(config, legacy());
    let big = format!("{{\"jsonrpc\":\"2.0\",\"pad\":\"{}\"}}", "x".repeat(4000));
    // Announced too large by its Content-Length.
    server.script([Step::bytes(http(
        "200 OK",
        &[("Content-Type", "application/json")],
        &big,
    ))]);
    fails_then_recovers(
        &client,
        ping,
        Status::ProtocolError,
        &["over the limit of 1024"],
    );
    // Found too large while reading (no Content-Length, the body ends at close).
    server.script([Step::bytes(format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{big}"
    ))
    .then(Then::Close)]);
    fails_then_recovers(
        &client,
        ping,
        Status::ProtocolError,
        &["over the limit of 1024"],
    );
    // One SSE event too large, or one line that never ends.
    server.script([Step::bytes(format!("{SSE_HEAD}data: {big}\n\n")).then(Then::Close)]);
    fails_then_recovers(
        &client,
        ping,
        Status::ProtocolError,
        &["over the limit of 1024"],
    );
    server.script([Step::bytes(format!("{SSE_HEAD}data: {big}")).then(Then::Hang)]);
    fails_then_recovers(
        &client,
        ping,
        Status::ProtocolError,
        &["over the limit of 1024"],
    );
    assert_eq!(server.steps_left(), 0);
}

#[test]
fn an_answer_that_is_not_http_or_has_no_response_fails_cleanly() {
    let _gate = shared_gate();
    let server = FaultServer::start();
    let client = server.client();
    server.script([Step::bytes("SSH-2.0-OpenSSH_9.6\r\n\r\n").then(Then::Close)]);
    fails_then_recovers(&client, ping, Status::TransportError, &[&server.url]);
    // A request acknowledged like a notification: no response will ever come.
    server.script([Step::bytes(http("202 Accepted", &[], ""))]);
    fails_then_recovers(
        &client,
        ping,
        Status::ProtocolError,
        &["HTTP 202 and no response"],
    );
    assert_eq!(server.steps_left(), 0);
}

#[test]
fn bytes_after_a_framed_body_do_not_poison_the_next_call() {
    let _gate = shared_gate();
    let server = FaultServer::start();
    let client = server.client();
    // A correct answer, then junk on the same keep-alive connection: were the connection
    // reused, the junk would be read as the next call's answer.
    server.script([Step::answer(|request| {
        let mut bytes = json_answer(request, json!({}));
        bytes.extend_from_slice(b"HTTP/1.1 500 Junk\r\nContent-Length: 0\r\n\r\n");
        bytes
    })]);
    ping(&client).unwrap();
    for _ in 0..3 {
        recovers(&client);
    }
    assert_eq!(server.steps_left(), 0);
}

// ---------------------------------------------------------------------------------------------
// Descriptors
// ---------------------------------------------------------------------------------------------

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Inodes of the IPv4 TCP sockets whose peer is `port` (the client's side of our server).
fn client_socket_inodes(port: u16) -> HashSet<u64> {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let remote_port = u16::from_str_radix(fields.get(2)?.split(':').nth(1)?, 16).ok()?;
            let inode = fields.get(9)?.parse().ok()?;
            (remote_port == port && inode != 0).then_some(inode)
        })
        .collect()
}

/// Our descriptors that are sockets connected to `port`.
fn client_sockets(port: u16) -> usize {
    let inodes = client_socket_inodes(port);
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
        .filter_map(|link| {
            let link = link.to_string_lossy().into_owned();
            link.strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()
        })
        .filter(|inode| inodes.contains(inode))
        .count()
}

#[test]
fn fifty_faults_in_a_row_leak_no_file_descriptor() {
    // Alone in the process while it counts.
    let _gate = FD_GATE.write().unwrap_or_else(|e| e.into_inner());
    let before = open_fds();
    {
        let server = FaultServer::start();
        let client = server.client();
        let timeout = RequestOptions::with_timeout(Duration::from_millis(100));
        type Fault = (&'static str, fn() -> Step, Status);
        let faults: [Fault; 8] = [
            (
                "500",
                || Step::bytes(http("500 Internal Server Error", &[], "boom")),
                Status::TransportError,
            ),
            (
                "text/plain",
                || Step::bytes(http("200 OK", &[("Content-Type", "text/plain")], "hi")),
                Status::ProtocolError,
            ),
            (
                "truncated SSE",
                || Step::bytes(format!("{SSE_HEAD}data: {{\"jsonrpc\"")).then(Then::Close),
                Status::ProtocolError,
            ),
            (
                "reset mid-body",
                || {
                    Step::bytes(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                         Content-Length: 500\r\n\r\n{\"jsonrpc\":\"2.0\"",
                    )
                    .then(Then::Reset)
                },
                Status::TransportError,
            ),
            (
                "closed mid-body",
                || {
                    Step::bytes(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                         Content-Length: 500\r\n\r\n{\"jsonrpc\":\"2.0\"",
                    )
                    .then(Then::Close)
                },
                Status::TransportError,
            ),
            ("silence", Step::silence, Status::Timeout),
            (
                "redirect",
                || {
                    Step::bytes(http(
                        "307 Temporary Redirect",
                        &[("Location", "http://127.0.0.1:9/mcp")],
                        "",
                    ))
                },
                Status::TransportError,
            ),
            (
                "not JSON-RPC",
                || {
                    Step::bytes(http(
                        "200 OK",
                        &[("Content-Type", "application/json")],
                        r#"{"hello":1}"#,
                    ))
                },
                Status::ProtocolError,
            ),
        ];
        for round in 0..50 {
            let (name, step, status) = &faults[round % faults.len()];
            server.script([step()]);
            let start = Instant::now();
            let error = client.ping(&timeout).unwrap_err();
            assert!(start.elapsed() < BOUND, "{name}");
            assert_eq!(error.status, *status, "{name}: {error}");
            recovers(&client);
        }
        assert_eq!(server.steps_left(), 0);
        // While the client lives, only its pool holds connections (at most 16 to one host).
        let open = client_sockets(server.port());
        assert!(open <= 16, "{open} client sockets after 50 faults");
        drop(client);
        // Once closed, none.
        let deadline = Instant::now() + BOUND;
        while client_sockets(server.port()) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(client_sockets(server.port()), 0, "sockets left after close");
    }
    // The server is gone too: the process is back exactly where it was (no other test runs
    // while the gate is held for writing).
    let deadline = Instant::now() + BOUND;
    while open_fds() > before && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let after = open_fds();
    common::report_figure(&format!(
        "HTTP faults: 50 faults of 8 kinds in a row on one client, each followed by a good call: {before} descriptors open before, {after} after"
    ));
    assert_eq!(after, before, "descriptors open before and after");
}

// ---------------------------------------------------------------------------------------------
// Credentials never appear in what the client says
// ---------------------------------------------------------------------------------------------

const PASSWORD: &str = "pw-9f8e7d6c";
const TOKEN: &str = "tok-5b4a3928";
const COOKIE: &str = "ck-1a2b3c4d";
const CUSTOM: &str = "cv-77aa88bb";
const API_KEY: &str = "key-0c0ffee0";
const PLANTED: [&str; 5] = [PASSWORD, TOKEN, COOKIE, CUSTOM, API_KEY];

/// Everything the client said: result messages, error data and reasons, log lines.
#[derive(Default, Clone)]
struct Said(Arc<Mutex<Vec<String>>>);

impl Said {
    fn options(&self) -> ClientOptions {
        let lines = self.0.clone();
        let mut options = legacy();
        options.callbacks.on_log = Some(Arc::new(move |_, line: &str| {
            lock(&lines).push(format!("log: {line}"))
        }));
        options
    }

    fn outcome(&self, what: &str, outcome: mcpc::Result<Value>) {
        let Err(error) = outcome else { return };
        let mut said = lock(&self.0);
        said.push(format!("{what}: {}", error.message));
        if let Some(data) = &error.data {
            said.push(format!("{what} (data): {data}"));
        }
        if let Some(reason) = &error.cancel_reason {
            said.push(format!("{what} (reason): {reason}"));
        }
    }

    /// Fails listing every message that quotes a secret.
    fn assert_clean(&self, secrets: &[&str]) {
        let said = lock(&self.0);
        assert!(said.len() >= 10, "too few messages collected: {said:?}");
        let leaks: Vec<&String> = said
            .iter()
            .filter(|line| secrets.iter().any(|secret| line.contains(secret)))
            .collect();
        assert!(leaks.is_empty(), "credentials leaked in:\n{leaks:#?}");
        common::report_figure(&format!(
            "credentials: {} messages (results, error data, log lines) from HTTP faults, bad \
             URLs and an expiring session checked for {} planted secrets: none leaked",
            said.len(),
            secrets.len()
        ));
    }
}

/// The host's credentials: a bearer token, a cookie and a custom header.
fn plant_headers(config: &mut HttpConfig) {
    config
        .add_header("Authorization", &format!("Bearer {TOKEN}"))
        .unwrap();
    config
        .add_header("Cookie", &format!("theme=dark; sid={COOKIE}"))
        .unwrap();
    config.add_header("X-Api-Secret", CUSTOM).unwrap();
}

/// A server that echoes back everything it was sent, as an HTTP body, a JSON-RPC error, a
/// redirect target, SSE events.
fn echoing_faults() -> Vec<(&'static str, Step)> {
    let echo = format!(
        "you sent: Authorization: Bearer {TOKEN}; Cookie: sid={COOKIE}; X-Api-Secret: {CUSTOM}; \
         user alice:{PASSWORD}; query api_key={API_KEY}"
    );
    let json_type = [("Content-Type", "application/json")];
    let rpc_error = move |echo: String| {
        Step::answer(move |request| {
            let body = json!({"jsonrpc": "2.0", "id": request["id"],
                "error": {"code": -32001, "message": echo, "data": {"headers": [echo]}}});
            http(
                "200 OK",
                &[("Content-Type", "application/json")],
                &body.to_string(),
            )
        })
    };
    let http_error = {
        let echo = echo.clone();
        Step::answer(move |request| {
            let body = json!({"jsonrpc": "2.0", "id": request["id"],
                "error": {"code": -32600, "message": echo, "data": echo}});
            http(
                "400 Bad Request",
                &[("Content-Type", "application/json")],
                &body.to_string(),
            )
        })
    };
    let location = format!("http://alice:{PASSWORD}@127.0.0.1:9/login?api_key={API_KEY}");
    let bad_events = {
        let echo = echo.clone();
        Step::answer(move |request| {
            let mut body = SSE_HEAD.as_bytes().to_vec();
            body.extend(format!("data: {echo}\n\n").bytes());
            body.extend(format!("data: {}\n\n", json!({"echo": echo})).bytes());
            body.extend(sse_event(&response(request, json!({}))).bytes());
            body
        })
        .then(Then::Close)
    };
    vec![
        (
            "500 echoing the request",
            Step::bytes(http("500 Internal Server Error", &[], &echo)),
        ),
        ("400 with a JSON-RPC error echoing it", http_error),
        ("a JSON-RPC error echoing it", rpc_error(echo.clone())),
        (
            "a redirect to a URL with credentials",
            Step::bytes(http("302 Found", &[("Location", &location)], "")),
        ),
        (
            "a 200 JSON body that is not JSON-RPC",
            Step::bytes(http(
                "200 OK",
                &json_type,
                &json!({"echo": echo}).to_string(),
            )),
        ),
        ("SSE events that are not JSON-RPC", bad_events),
        (
            "a reset mid-body",
            Step::bytes(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                 Content-Length: 500\r\n\r\n{\"jsonrpc\":\"2.0\"",
            )
            .then(Then::Reset),
        ),
        ("silence", Step::silence()),
    ]
}

#[test]
fn no_message_quotes_a_credential() {
    let _gate = shared_gate();
    let said = Said::default();
    let secret_url =
        |authority: &str| format!("http://alice:{PASSWORD}@{authority}/mcp?api_key={API_KEY}");

    // Faults of a server that echoes what it was sent.
    let server = FaultServer::start();
    let mut config = server.config();
    config.url = secret_url(&server.addr.to_string());
    plant_headers(&mut config);
    let client = Client::http(config, said.options());
    said.outcome("connect", client.connect());
    let short = RequestOptions::with_timeout(Duration::from_millis(300));
    for (name, step) in echoing_faults() {
        server.script([step]);
        said.outcome(name, client.ping(&short));
        said.outcome(&format!("after {name}"), client.ping(&short));
    }
    // The credentials did reach the server (so the echoes above carried them).
    let first = &server.requests()[0];
    assert_eq!(
        first.header("authorization"),
        Some(&*format!("Bearer {TOKEN}"))
    );
    client.close();
    said.outcome("after close", client.ping(&none()));

    // An unreachable host, and URLs that are not valid.
    for url in [
        secret_url("127.0.0.1:1"),
        format!("ftp://alice:{PASSWORD}@127.0.0.1/mcp?api_key={API_KEY}"),
        format!("http://alice:{PASSWORD}@/mcp?api_key={API_KEY}"),
        format!("http://alice:{PASSWORD} @127.0.0.1/mcp?api_key={API_KEY}"),
    ] {
        let mut config = HttpConfig::new(url);
        plant_headers(&mut config);
        let client = Client::http(config, said.options());
        said.outcome("unreachable or invalid", client.connect());
    }

    // A session the server forgets: its id must not be quoted either.
    let server = common::http_server::HttpServer::start(
        "no_message_quotes_a_credential",
        &["--expire-session-after", "3"],
    );
    let mut config = server.config();
    config.url = server
        .url
        .replacen("http://", &format!("http://alice:{PASSWORD}@"), 1);
    plant_headers(&mut config);
    let client = Client::http(config, said.options());
    said.outcome("connect", client.connect());
    let mut expired = false;
    for _ in 0..6 {
        let outcome = client.ping(&none());
        expired |= matches!(&outcome, Err(e) if e.status == Status::SessionExpired);
        said.outcome("ping on an expiring session", outcome);
    }
    assert!(expired, "the session never expired");
    client.close();
    let session = server
        .requests()
        .iter()
        .find_map(|r| common::http_server::header(r, "mcp-session-id").map(str::to_owned))
        .expect("the server handed out a session");

    let mut secrets = PLANTED.to_vec();
    secrets.push(&session);
    said.assert_clean(&secrets);
}

/// A connection's input starts smaller than the heads a server may send and grows for them:
/// a head of 48 KiB (within the 64 KiB ureq accepts) is read whole, as JSON and as a stream,
/// and the connection goes on serving calls with its usual buffers.
#[test]
fn a_response_head_longer_than_the_usual_input_buffer_is_read_whole() {
    let _gate = shared_gate();
    let server = FaultServer::start();
    let client = server.client();
    let padding = "p".repeat(48 * 1024);
    let (json_padding, sse_padding) = (padding.clone(), padding);
    server.script([
        Step::answer(move |request| {
            let body = response(request, tool_text("after a long head")).to_string();
            let headers = [
                ("Content-Type", "application/json"),
                ("X-Padding", json_padding.as_str()),
            ];
            http("200 OK", &headers, &body)
        }),
        Step::answer(move |request| {
            let answer = sse_event(&response(request, tool_text("streamed after a long head")));
            let head =
                SSE_HEAD.replace("\r\n\r\n", &format!("\r\nX-Padding: {sse_padding}\r\n\r\n"));
            format!("{head}{answer}").into_bytes()
        })
        .then(Then::Close),
    ]);
    for expected in ["after a long head", "streamed after a long head"] {
        let result = client
            .call_tool("long_head", None, &none())
            .unwrap_or_else(|e| panic!("{expected}: {e}"));
        assert_eq!(result["content"][0]["text"], expected);
    }
    recovers(&client);
}
