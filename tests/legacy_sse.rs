//! The 2024-11-05 HTTP+SSE transport against a scripted server on a real socket: found by
//! itself (the `initialize` POSTed to the URL is refused with 405, the URL opens the event
//! stream) or pinned, remembered for reconnects, cancels POSTed to the endpoint, close ending
//! the stream, and every fault of a hostile server refused with a clear status.
//!
//! Our own test server in its HTTP+SSE mode (`--http 0 --sse`) serves the calls, progress,
//! server requests and cancels; the scripted server below serves the faults.
//!
//! The scripted server: `POST /sse` answers 405; `GET /sse` opens the stream, whose first event names
//! `/messages` as the endpoint; each message POSTed there is acknowledged (202) and answered on
//! the stream. Its tool `slow` never answers; `misbehave` does what the script says.

mod common;
#[path = "common/net.rs"]
#[allow(dead_code)] // other tests use the rest
mod net;

use common::http_server::{http_requests, HttpServer};
use mcpc::handlers::{Callbacks, Progress};
use mcpc::{
    CancellationToken, Client, ClientOptions, HttpConfig, HttpTransportKind, RequestOptions, Status,
};
use net::ConnectProxy;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Every failing call must return within this; a hang would not.
const BOUND: Duration = Duration::from_secs(10);

/// What the server does wrong.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Script {
    Good,
    /// The endpoint event names another origin (same port, another host name).
    ForeignEndpoint,
    /// The stream's first event is a message, not the endpoint.
    NoEndpoint,
    /// The stream says nothing at all.
    SilentStream,
    /// `misbehave` gets a second endpoint event instead of its answer.
    SecondEndpoint,
    /// `misbehave` ends the stream.
    EndsMidCall,
    /// `misbehave` is answered with an event over the client's limit (64 KiB here).
    Oversize,
    /// The POST of `misbehave` is answered 500.
    Post500,
}

/// What the server saw.
#[derive(Default)]
struct Seen {
    /// `POST /sse` (the Streamable HTTP attempt), by method.
    refused_posts: Vec<String>,
    stream_opens: usize,
    /// The messages POSTed to the endpoint.
    messages: Vec<Value>,
    /// The client closed a stream.
    streams_closed: usize,
}

struct SseServer {
    url: String,
    seen: Arc<Mutex<Seen>>,
}

struct State {
    script: Script,
    port: u16,
    seen: Arc<Mutex<Seen>>,
    /// The open stream's writing side.
    stream: Mutex<Option<TcpStream>>,
}

impl SseServer {
    fn start(script: Script) -> SseServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Seen::default()));
        let state = Arc::new(State {
            script,
            port,
            seen: seen.clone(),
            stream: Mutex::new(None),
        });
        std::thread::spawn(move || {
            for connection in listener.incoming() {
                let Ok(connection) = connection else { return };
                let state = state.clone();
                std::thread::spawn(move || serve(connection, &state));
            }
        });
        SseServer {
            url: format!("http://127.0.0.1:{port}/sse"),
            seen,
        }
    }

    fn seen<T>(&self, look: impl Fn(&Seen) -> T) -> T {
        look(&self.seen.lock().unwrap())
    }

    /// The messages POSTed to the endpoint with this method.
    fn posted(&self, method: &str) -> Vec<Value> {
        self.seen(|s| {
            s.messages
                .iter()
                .filter(|m| m["method"] == method)
                .cloned()
                .collect()
        })
    }

    fn wait_for(&self, done: impl Fn(&Seen) -> bool) -> bool {
        let deadline = Instant::now() + BOUND;
        while !self.seen(&done) {
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }
}

/// One request per connection (each answer closes it).
fn serve(connection: TcpStream, state: &State) {
    let mut reader = BufReader::new(connection.try_clone().unwrap());
    let mut head = String::new();
    let mut content_length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        if let Some(n) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            content_length = n.trim().parse().unwrap_or(0);
        }
        if line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let mut body = vec![0; content_length];
    reader.read_exact(&mut body).unwrap();
    let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let request_line = head.lines().next().unwrap_or_default().to_owned();
    let mut connection = connection;
    if request_line.starts_with("POST /sse ") {
        let method = message["method"].as_str().unwrap_or_default().to_owned();
        state.seen.lock().unwrap().refused_posts.push(method);
        let _ = connection.write_all(&answer("405 Method Not Allowed", "Method Not Allowed"));
    } else if request_line.starts_with("GET /sse ") {
        open_stream(connection, state);
    } else if request_line.starts_with("POST /messages") {
        let refused = state.script == Script::Post500 && is_misbehave(&message);
        state.seen.lock().unwrap().messages.push(message.clone());
        let status = match refused {
            true => "500 Internal Server Error",
            false => "202 Accepted",
        };
        let _ = connection.write_all(&answer(status, "Accepted"));
        if !refused {
            respond(state, &message);
        }
    } else {
        let _ = connection.write_all(&answer("404 Not Found", "Not Found"));
    }
}

fn open_stream(mut connection: TcpStream, state: &State) {
    state.seen.lock().unwrap().stream_opens += 1;
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n";
    let first = match state.script {
        Script::ForeignEndpoint => {
            endpoint_event(&format!("http://localhost:{}/messages", state.port))
        }
        Script::NoEndpoint => message_event(
            &json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {}}),
        ),
        Script::SilentStream => ": nothing to say\n\n".to_owned(),
        _ => endpoint_event("/messages?session=1"),
    };
    connection.write_all(head.as_bytes()).unwrap();
    // Kept before the endpoint is named: the first POST may come (and its answer be sent on
    // the stream) before this thread runs again.
    *state.stream.lock().unwrap() = Some(connection.try_clone().unwrap());
    connection.write_all(first.as_bytes()).unwrap();
    // The client never writes on its stream: a read returns when it closes it.
    let mut byte = [0u8; 1];
    while matches!(connection.read(&mut byte), Ok(n) if n > 0) {}
    state.seen.lock().unwrap().streams_closed += 1;
}

/// Answers a request on the stream, as the script says.
fn respond(state: &State, message: &Value) {
    let (Some(method), Some(id)) = (message["method"].as_str(), message.get("id")) else {
        return; // a notification
    };
    let result = match method {
        "initialize" => json!({
            "protocolVersion": "2024-11-05",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "scripted-sse", "version": "1"},
        }),
        "tools/call" if message["params"]["name"] == "slow" => return,
        "tools/call" if is_misbehave(message) => return act_out(state, id),
        "tools/call" => json!({"content": [{"type": "text", "text": "done"}]}),
        _ => json!({}),
    };
    send(
        state,
        &message_event(&json!({"jsonrpc": "2.0", "id": id, "result": result})),
    );
}

fn is_misbehave(message: &Value) -> bool {
    message["params"]["name"] == "misbehave"
}

/// What the script does instead of answering `misbehave`.
fn act_out(state: &State, id: &Value) {
    match state.script {
        Script::SecondEndpoint => send(state, &endpoint_event("/messages?session=2")),
        Script::EndsMidCall => {
            if let Some(stream) = state.stream.lock().unwrap().take() {
                let _ = stream.shutdown(Shutdown::Both);
            }
        }
        Script::Oversize => {
            let text = "x".repeat(100 * 1024);
            let result = json!({"content": [{"type": "text", "text": text}]});
            send(
                state,
                &message_event(&json!({"jsonrpc": "2.0", "id": id, "result": result})),
            );
        }
        _ => {}
    }
}

fn send(state: &State, event: &str) {
    if let Some(stream) = state.stream.lock().unwrap().as_mut() {
        let _ = stream.write_all(event.as_bytes());
    }
}

fn endpoint_event(url: &str) -> String {
    format!("event: endpoint\ndata: {url}\n\n")
}

fn message_event(message: &Value) -> String {
    format!("event: message\ndata: {message}\n\n")
}

fn answer(status: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn none() -> RequestOptions {
    RequestOptions::default()
}

fn new_client(server: &SseServer, kind: HttpTransportKind) -> Client {
    let mut config = HttpConfig::new(&server.url);
    config.transport = kind;
    config.max_message_bytes = 64 * 1024;
    Client::http(config, ClientOptions::default())
}

fn connected(server: &SseServer, kind: HttpTransportKind) -> Client {
    let client = new_client(server, kind);
    client.connect().expect("connect over HTTP+SSE");
    client
}

fn misbehave(client: &Client) -> mcpc::Error {
    let started = Instant::now();
    // A hang would end in TIMEOUT, which no test expects.
    let opts = RequestOptions {
        timeout: Some(BOUND),
        ..none()
    };
    let error = client.call_tool("misbehave", None, &opts).unwrap_err();
    assert!(started.elapsed() < BOUND, "took {:?}", started.elapsed());
    error
}

#[test]
fn auto_mode_finds_the_old_transport_and_a_reconnect_remembers_it() {
    let server = SseServer::start(Script::EndsMidCall);
    let client = connected(&server, HttpTransportKind::Auto);
    assert!(!client.is_modern());
    // The probe and the initialize were POSTed to the URL and refused; then the stream.
    assert_eq!(
        server.seen(|s| s.refused_posts.clone()),
        ["server/discover", "initialize"]
    );
    assert_eq!(server.posted("initialize").len(), 1);
    assert_eq!(server.posted("notifications/initialized").len(), 1);
    let done = client.call_tool("echo", None, &none()).unwrap();
    assert_eq!(done["content"][0]["text"], "done");

    // The stream ends: the call fails, the connection with it.
    let error = misbehave(&client);
    assert_eq!(error.status, Status::TransportError, "{error}");
    assert!(
        error.message.contains("ended the HTTP+SSE stream"),
        "{error}"
    );
    assert!(client.ping(&none()).is_err());

    // Connecting again goes straight to the stream: nothing more is POSTed to the URL.
    client.connect().unwrap();
    assert_eq!(server.seen(|s| s.stream_opens), 2);
    assert_eq!(server.seen(|s| s.refused_posts.len()), 2);
    client.ping(&none()).unwrap();
}

#[test]
fn pinned_the_client_opens_the_stream_at_once() {
    let server = SseServer::start(Script::Good);
    let client = connected(&server, HttpTransportKind::LegacySse);
    assert!(server.seen(|s| s.refused_posts.is_empty()));
    client.ping(&none()).unwrap();

    // Pinned to Streamable HTTP, the refusal of initialize is the error.
    let streamable = new_client(&server, HttpTransportKind::Streamable);
    let error = streamable.connect().unwrap_err();
    assert_eq!(error.status, Status::TransportError, "{error}");
    assert!(error.message.contains("405"), "{error}");
    assert_eq!(server.seen(|s| s.stream_opens), 1);
}

#[test]
fn a_cancel_is_posted_to_the_endpoint_and_frees_the_caller_at_once() {
    let server = SseServer::start(Script::Good);
    let client = Arc::new(connected(&server, HttpTransportKind::Auto));
    let token = CancellationToken::new();
    let caller = {
        let (client, opts) = (client.clone(), RequestOptions::with_cancellation(&token));
        std::thread::spawn(move || {
            let outcome = client.call_tool("slow", None, &opts);
            (outcome, Instant::now())
        })
    };
    assert!(server.wait_for(|s| s.messages.iter().any(|m| m["params"]["name"] == "slow")));
    let cancelled_at = Instant::now();
    token.cancel(Some("enough"));
    let (outcome, returned_at) = caller.join().unwrap();
    let error = outcome.unwrap_err();
    assert_eq!(error.status, Status::Cancelled);
    assert!(
        returned_at.saturating_duration_since(cancelled_at) < Duration::from_millis(500),
        "the caller took {:?}",
        returned_at.saturating_duration_since(cancelled_at)
    );
    let id = error.request_id.unwrap();
    assert!(server.wait_for(|s| s
        .messages
        .iter()
        .any(|m| m["method"] == "notifications/cancelled" && m["params"]["requestId"] == id)));

    // A timeout is a cancel with a reason: the server hears of it the same way.
    let opts = RequestOptions {
        timeout: Some(Duration::from_millis(200)),
        ..none()
    };
    let error = client.call_tool("slow", None, &opts).unwrap_err();
    assert_eq!(error.status, Status::Timeout);
    let id = error.request_id.unwrap();
    assert!(server.wait_for(|s| s
        .messages
        .iter()
        .any(|m| m["method"] == "notifications/cancelled" && m["params"]["requestId"] == id)));
    client.ping(&none()).unwrap();
}

#[test]
fn close_ends_a_pending_call_with_closed_and_closes_the_stream() {
    let server = SseServer::start(Script::Good);
    let client = Arc::new(connected(&server, HttpTransportKind::Auto));
    let caller = {
        let client = client.clone();
        std::thread::spawn(move || client.call_tool("slow", None, &none()))
    };
    assert!(server.wait_for(|s| s.messages.iter().any(|m| m["params"]["name"] == "slow")));
    let started = Instant::now();
    client.close();
    let error = caller.join().unwrap().unwrap_err();
    assert_eq!(error.status, Status::Closed, "{error}");
    assert!(started.elapsed() < BOUND);
    assert!(
        server.wait_for(|s| s.streams_closed == 1),
        "the stream stayed open"
    );
}

#[test]
fn an_endpoint_on_another_origin_is_refused_and_never_followed() {
    let server = SseServer::start(Script::ForeignEndpoint);
    let error = new_client(&server, HttpTransportKind::Auto)
        .connect()
        .unwrap_err();
    assert_eq!(error.status, Status::ProtocolError, "{error}");
    assert!(error.message.contains("another origin"), "{error}");
    assert!(
        server.seen(|s| s.messages.is_empty()),
        "a message was POSTed there"
    );
}

#[test]
fn a_stream_without_an_endpoint_event_is_refused() {
    let server = SseServer::start(Script::NoEndpoint);
    let error = new_client(&server, HttpTransportKind::LegacySse)
        .connect()
        .unwrap_err();
    assert_eq!(error.status, Status::ProtocolError, "{error}");
    assert!(error.message.contains("not endpoint"), "{error}");
}

#[test]
fn a_stream_that_names_no_endpoint_in_time_is_refused() {
    let server = SseServer::start(Script::SilentStream);
    let mut config = HttpConfig::new(&server.url);
    config.transport = HttpTransportKind::LegacySse;
    config.connect_timeout = Duration::from_millis(300);
    let started = Instant::now();
    let error = Client::http(config, ClientOptions::default())
        .connect()
        .unwrap_err();
    assert_eq!(error.status, Status::ProtocolError, "{error}");
    assert!(
        error.message.contains("named no endpoint within 300 ms"),
        "{error}"
    );
    assert!(started.elapsed() < BOUND);
    assert!(
        server.wait_for(|s| s.streams_closed == 1),
        "the stream was left open"
    );
}

/// Close while the connect waits for the endpoint: CLOSED at once (not after the endpoint's
/// time limit), and the stream is closed; the connect's own timeout likewise.
#[test]
fn close_or_a_timeout_while_waiting_for_the_endpoint_ends_the_connect() {
    let server = SseServer::start(Script::SilentStream);
    let client = Arc::new(new_client(&server, HttpTransportKind::LegacySse));
    let connecting = {
        let client = client.clone();
        std::thread::spawn(move || client.connect())
    };
    assert!(server.wait_for(|s| s.stream_opens == 1));
    let closed_at = Instant::now();
    client.close();
    let error = connecting.join().unwrap().unwrap_err();
    assert_eq!(error.status, Status::Closed, "{error}");
    // The endpoint's limit is the connect timeout, 10 s by default.
    assert!(
        closed_at.elapsed() < Duration::from_secs(3),
        "{:?}",
        closed_at.elapsed()
    );
    assert!(
        server.wait_for(|s| s.streams_closed == 1),
        "the stream was left open"
    );

    // The connect's own time limit (shorter than the endpoint's) ends the wait the same way.
    let mut config = HttpConfig::new(&server.url);
    config.transport = HttpTransportKind::LegacySse;
    let options = ClientOptions {
        connect_timeout: Duration::from_millis(300),
        ..ClientOptions::default()
    };
    let started = Instant::now();
    let error = Client::http(config, options).connect().unwrap_err();
    assert_eq!(error.status, Status::Timeout, "{error}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(
        server.wait_for(|s| s.streams_closed == 2),
        "the stream was left open"
    );
}

#[test]
fn a_second_endpoint_event_ends_the_connection() {
    let server = SseServer::start(Script::SecondEndpoint);
    let client = connected(&server, HttpTransportKind::Auto);
    let error = misbehave(&client);
    assert_eq!(error.status, Status::ProtocolError, "{error}");
    assert!(error.message.contains("second endpoint"), "{error}");
    assert!(server.posted("tools/call").len() == 1);
}

#[test]
fn an_event_over_the_limit_fails_the_call() {
    let server = SseServer::start(Script::Oversize);
    let client = connected(&server, HttpTransportKind::Auto);
    let error = misbehave(&client);
    assert_eq!(error.status, Status::ProtocolError, "{error}");
    assert!(error.message.contains("over the limit"), "{error}");
}

#[test]
fn a_post_answered_500_fails_its_call_and_the_connection_goes_on() {
    let server = SseServer::start(Script::Post500);
    let client = connected(&server, HttpTransportKind::Auto);
    let error = misbehave(&client);
    assert_eq!(error.status, Status::TransportError, "{error}");
    assert!(error.message.contains("HTTP 500"), "{error}");
    client.ping(&none()).unwrap();
}

/// Our test server in its HTTP+SSE mode, found by itself: calls, progress, a server request
/// answered through the endpoint, a cancel and a timeout the server's handler sees, and close
/// ending the stream.
#[test]
fn our_test_server_over_http_sse_serves_everything_and_sees_the_cancels() {
    let server = HttpServer::start("legacy_sse_our_server", &["--sse"]);
    assert!(server.url.ends_with("/sse"), "{}", server.url);
    let heard = Arc::new(Mutex::new(Vec::new()));
    let mut options = ClientOptions {
        callbacks: Callbacks {
            on_progress: Some({
                let heard = heard.clone();
                Arc::new(move |p: &Progress| heard.lock().unwrap().push(p.progress))
            }),
            ..Callbacks::default()
        },
        ..ClientOptions::default()
    };
    options.callbacks.request_handlers.insert(
        "roots/list".into(),
        Arc::new(|_: &mcpc::handlers::ServerRequest| {
            Ok(json!({"roots": [{"uri": "file:///ours"}]}))
        }),
    );
    let client = Arc::new(Client::http(HttpConfig::new(&server.url), options));
    client
        .connect()
        .expect("connect to the test server over HTTP+SSE");
    assert!(!client.is_modern());
    let posts_to_url = |lines: &[Value]| {
        http_requests(lines)
            .iter()
            .filter(|r| r["method"] == "POST" && r["path"] == "/sse")
            .count()
    };
    assert_eq!(
        posts_to_url(&server.log()),
        2,
        "the probe and initialize were tried first"
    );

    let echo = client
        .call_tool("echo", Some(json!({"text": "over sse"})), &none())
        .unwrap();
    assert_eq!(echo["content"][0]["text"], "over sse");
    client.tools(&none()).unwrap();

    let opts = RequestOptions {
        progress_token: Some(json!("p")),
        ..none()
    };
    client
        .call_tool("progress", Some(json!({"steps": 3})), &opts)
        .unwrap();
    let deadline = Instant::now() + BOUND;
    while heard.lock().unwrap().len() < 3 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(heard.lock().unwrap().len(), 3);

    let asked = client
        .call_tool("ask_client", Some(json!({"method": "roots/list"})), &none())
        .unwrap();
    assert!(asked.to_string().contains("file:///ours"), "{asked}");

    // A cancel: the caller is back at once, the server's handler sees it.
    let token = CancellationToken::new();
    let caller = {
        let (client, opts) = (client.clone(), RequestOptions::with_cancellation(&token));
        std::thread::spawn(move || {
            let outcome = client.call_tool("slow", Some(json!({"ms": 20000})), &opts);
            (outcome, Instant::now())
        })
    };
    let started = |lines: &[Value]| {
        http_requests(lines)
            .iter()
            .any(|r| r["body"]["params"]["name"] == "slow")
    };
    assert!(started(&server.wait_for(started)));
    let cancelled_at = Instant::now();
    token.cancel(None);
    let (outcome, returned_at) = caller.join().unwrap();
    let error = outcome.unwrap_err();
    assert_eq!(error.status, Status::Cancelled);
    assert!(returned_at.saturating_duration_since(cancelled_at) < Duration::from_millis(500));
    let id = error.request_id.unwrap();
    let handled = |lines: &[Value]| {
        lines
            .iter()
            .any(|l| l["handler_done"] == id && l["cancelled"] == true)
    };
    assert!(
        handled(&server.wait_for(handled)),
        "the server never saw the cancel of {id}"
    );

    // A timeout the same way.
    let opts = RequestOptions {
        timeout: Some(Duration::from_millis(300)),
        ..none()
    };
    let error = client
        .call_tool("slow", Some(json!({"ms": 20000})), &opts)
        .unwrap_err();
    assert_eq!(error.status, Status::Timeout);
    let id = error.request_id.unwrap();
    let handled = |lines: &[Value]| {
        lines
            .iter()
            .any(|l| l["handler_done"] == id && l["cancelled"] == true)
    };
    assert!(
        handled(&server.wait_for(handled)),
        "the server never saw the timeout of {id}"
    );
    client.ping(&none()).unwrap();

    // Close ends the stream (the server sees it go), and no POST reached the URL since.
    client.close();
    let closed = |lines: &[Value]| lines.iter().any(|l| l.get("sse_stream_closed").is_some());
    let lines = server.wait_for(closed);
    assert!(closed(&lines), "the client's stream stayed open");
    assert_eq!(posts_to_url(&lines), 2);
}

/// Through the C ABI: the transport pinned with `mcp_client_options_set_http_transport` (no POST
/// to the URL), and a modern mode then refused with INVALID_ARGUMENT.
#[test]
fn the_c_setter_pins_the_transport_and_the_modern_mode_is_refused() {
    use mcpc::ffi::*;
    let server = HttpServer::start("legacy_sse_c_setter", &["--sse"]);
    let url = std::ffi::CString::new(server.url.as_str()).unwrap();
    let connect = |mode: mcp_connect_mode| unsafe {
        let options = mcp_client_options_new();
        let pinned = mcp_http_transport::LegacySse as i32;
        assert_eq!(
            mcp_client_options_set_http_transport(options, pinned),
            mcp_status::Ok
        );
        assert_eq!(
            mcp_client_options_set_mode(options, mode as i32),
            mcp_status::Ok
        );
        let client = mcp_client_new_http(url.as_ptr(), options);
        mcp_client_options_free(options);
        let outcome = common::take_result(mcp_client_connect(client));
        mcp_client_free(client);
        outcome
    };
    let (status, message) = connect(mcp_connect_mode::Auto);
    assert_eq!(status, mcp_status::Ok, "{message}");
    let (status, message) = connect(mcp_connect_mode::Modern);
    assert_eq!(status, mcp_status::InvalidArgument, "{message}");
    assert!(message.contains("HTTP+SSE"), "{message}");
    let posts_to_url = http_requests(&server.log())
        .iter()
        .filter(|r| r["method"] == "POST" && r["path"] == "/sse")
        .count();
    assert_eq!(posts_to_url, 0, "pinned, nothing is POSTed to the URL");
}

/// The idle timeout bounds a silence within a call's answer. The HTTP+SSE stream is the
/// session's, quiet between calls for as long as the host makes none: a session quiet for
/// longer than the idle timeout still serves the next calls, directly (where the stream waits
/// parked) and through a proxy's tunnel (where a worker waits in the stream's read).
#[test]
fn a_session_quiet_for_longer_than_the_idle_timeout_goes_on() {
    let server = HttpServer::start("legacy_sse_idle_timeout", &["--sse"]);
    let proxy = ConnectProxy::start();
    for through_proxy in [false, true] {
        let mut config = HttpConfig::new(&server.url);
        config.idle_timeout = Some(Duration::from_millis(200));
        if through_proxy {
            config.set_proxy(Some(&proxy.url())).unwrap();
        }
        let client = Client::http(config, ClientOptions::default());
        client.connect().expect("connect over HTTP+SSE");
        for quiet in 0..2 {
            std::thread::sleep(Duration::from_millis(700));
            client.ping(&none()).unwrap_or_else(|e| {
                panic!("a ping after quiet spell {quiet} (through a proxy: {through_proxy}): {e}")
            });
        }
        let listed = client.list_tools(None, &none()).expect("tools/list");
        assert!(listed["tools"].as_array().is_some_and(|t| !t.is_empty()));
        client.close();
    }
    assert!(
        !proxy.tunnels().is_empty(),
        "nothing went through the proxy"
    );
}
