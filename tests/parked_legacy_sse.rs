//! The 2024-11-05 HTTP+SSE transport's event stream (which carries every answer of the session)
//! waits parked on the reactor while the server is quiet, holding no thread: two hundred idle
//! clients of our test server in its HTTP+SSE mode hold a few library threads in all, and each
//! still gets its notifications and answers afterwards. Against a server written here, once the
//! stream was parked: an answer dribbled a byte at a time and a flood arrive whole and in order;
//! a cancel of a waiting call returns at once (the server hears of it) and the client goes on;
//! close returns within its bound with no callback after it; a server that ends the stream fails
//! the pending call with TRANSPORT_ERROR. In a test binary of its own (threads and memory are
//! counted), the tests taking turns (`SERIAL`). Time bounds are wide margins against hangs.

mod common;

use common::flood::{assert_each_heard_in_order, flood_every_client, status_kib};
use common::hostile_sse::{chunk, dribble, flood, hearing, notice, read_request, Heard, SSE_HEAD};
use common::http_server::HttpServer;
use common::report_figure;
use common::thread_names::{library_threads, settled_threads};
use mcpc::handlers::{Callbacks, LogMessage};
use mcpc::{
    CancellationToken, Client, ClientOptions, HttpConfig, HttpTransportKind, RequestOptions, Status,
};
use serde_json::{json, Value};
use std::io::Write;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

const CLIENTS: usize = 200;
/// The most library threads 200 idle clients may hold in all (a thread per stream fails it).
const MAX_LIBRARY_THREADS: usize = 16;
/// Resident memory per idle client, KiB: about twice what this test measured (debug build;
/// 122 KiB before the stream was parked, most of that its reader's thread).
const MAX_KIB_PER_CLIENT: u64 = 2 * 28;
/// Notifications each idle client gets afterwards.
const NOTICES: u64 = 20;
/// Anything that must happen must happen within this; a hang would not.
const BOUND: Duration = Duration::from_secs(10);
/// Long enough for the client to have read all there was and parked the stream.
const IDLE: Duration = Duration::from_millis(300);
/// How long thread counts may take to settle: idle HTTP workers stay 5 s for the next call.
const SETTLE: Duration = Duration::from_secs(20);

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A client of the HTTP+SSE server at `url` (the transport pinned), connected.
fn connect(url: &str, heard: &Heard) -> Client {
    let mut config = HttpConfig::new(url);
    config.transport = HttpTransportKind::LegacySse;
    let options = hearing(heard);
    let client = Client::http(config, options);
    client.connect().expect("connect over HTTP+SSE");
    client
}

#[test]
fn two_hundred_idle_http_sse_clients_hold_a_few_threads_and_each_still_gets_its_answers() {
    let _serial = serial();
    let server = HttpServer::start("parked_legacy_sse_many", &["--sse"]);
    // One client first, so that what the library sets up once per process is in the baseline.
    connect(&server.url, &Heard::default()).close();
    settled_threads(SETTLE, 0);
    let baseline_kib = status_kib("VmRSS");

    let heard: Vec<Heard> = (0..CLIENTS).map(|_| Heard::default()).collect();
    let clients: Vec<Client> = heard.iter().map(|h| connect(&server.url, h)).collect();
    let threads = settled_threads(SETTLE, MAX_LIBRARY_THREADS);
    let kib_per_client = status_kib("VmRSS").saturating_sub(baseline_kib) / CLIENTS as u64;
    report_figure(&format!(
        "parked_legacy_sse: {CLIENTS} idle HTTP+SSE clients, {threads} library threads counted, \
         {kib_per_client} KiB RSS per client"
    ));
    assert!(
        threads <= MAX_LIBRARY_THREADS,
        "{threads} library threads for {CLIENTS} idle HTTP+SSE clients, {} of them mcpc-http",
        library_threads()
            .iter()
            .filter(|name| *name == "mcpc-http")
            .count()
    );
    assert!(
        kib_per_client <= MAX_KIB_PER_CLIENT,
        "{kib_per_client} KiB per idle client"
    );

    // Each client asks for a run of notifications: they and the call's answer come on its
    // parked stream.
    flood_every_client(&clients, NOTICES);
    assert_each_heard_in_order(&heard, NOTICES, BOUND, "");
    for client in &clients {
        let echo = client
            .call_tool("echo", Some(json!({"text": "still here"})), &none())
            .expect("an answer after the idle period");
        assert_eq!(echo["content"][0]["text"], "still here");
    }
    clients.iter().for_each(|client| client.close());
}

#[test]
fn an_answer_dribbled_a_byte_at_a_time_after_the_stream_was_parked_arrives_whole() {
    let _serial = serial();
    let server = SseServer::start(Arc::new(|stream, id| {
        std::thread::sleep(IDLE);
        let mut events = Vec::new();
        for n in 0..3 {
            events.extend(notice(n));
        }
        events.extend(answer_event(id, "dribbled"));
        dribble(stream, &events);
    }));
    let heard = Heard::default();
    let client = connect(&server.url, &heard);
    let result = client.call_tool("script", None, &bounded()).unwrap();
    assert_eq!(result["content"][0]["text"], "dribbled");
    // Notices are delivered before the answer that follows them.
    assert_eq!(*heard.lock().unwrap(), vec![0, 1, 2]);
    client.ping(&bounded()).unwrap();
    client.close();
}

#[test]
fn a_flood_after_the_stream_was_parked_arrives_whole_and_in_order() {
    let _serial = serial();
    const NOTICES: u64 = 5000;
    let server = SseServer::start(Arc::new(|stream, id| {
        std::thread::sleep(IDLE);
        flood(stream, NOTICES, &answer_event(id, "flooded"));
    }));
    let heard = Heard::default();
    let client = connect(&server.url, &heard);
    let result = client.call_tool("script", None, &bounded()).unwrap();
    assert_eq!(result["content"][0]["text"], "flooded");
    assert_eq!(*heard.lock().unwrap(), (0..NOTICES).collect::<Vec<_>>());
    client.close();
}

#[test]
fn a_cancel_of_a_call_waiting_on_the_parked_stream_returns_at_once_and_the_client_goes_on() {
    let _serial = serial();
    let server = SseServer::start(Arc::new(|_stream, _id| {})); // never answers
    let client = Arc::new(connect(&server.url, &Heard::default()));
    let token = CancellationToken::new();
    let caller = {
        let (client, opts) = (client.clone(), RequestOptions::with_cancellation(&token));
        std::thread::spawn(move || {
            let outcome = client.call_tool("script", None, &opts);
            (outcome, Instant::now())
        })
    };
    assert!(server.wait_for(|seen| !seen.posted("tools/call").is_empty()));
    std::thread::sleep(IDLE);
    let cancelled_at = Instant::now();
    assert!(token.cancel(Some("enough")), "the first cancel");
    let (outcome, returned_at) = caller.join().unwrap();
    let error = outcome.unwrap_err();
    assert_eq!(error.status, Status::Cancelled, "{error}");
    let took = returned_at.saturating_duration_since(cancelled_at);
    assert!(took < Duration::from_secs(2), "the cancel took {took:?}");
    let id = error.request_id.unwrap();
    assert!(
        server.wait_for(|seen| seen
            .posted("notifications/cancelled")
            .iter()
            .any(|m| m["params"]["requestId"] == id)),
        "the server never heard of the cancel"
    );
    // The stream goes on carrying answers.
    client.ping(&bounded()).unwrap();
    client.close();
}

#[test]
fn close_with_a_call_waiting_on_the_parked_stream_returns_at_once_and_no_callback_runs_after() {
    let _serial = serial();
    // The call is never answered; the server keeps chattering on the stream meanwhile, so the
    // stream is parked and resumed over and over while close comes.
    let server = SseServer::start(Arc::new(|stream, _id| {
        for n in 0.. {
            if stream.write_all(&chunk(&notice(n))).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }));
    let closed = Arc::new(AtomicBool::new(false));
    let late = Arc::new(AtomicUsize::new(0));
    let heard = Arc::new(AtomicUsize::new(0));
    let mut config = HttpConfig::new(&server.url);
    config.transport = HttpTransportKind::LegacySse;
    let options = ClientOptions {
        callbacks: Callbacks {
            on_message: Some({
                let (closed, late, heard) = (closed.clone(), late.clone(), heard.clone());
                Arc::new(move |_: &LogMessage| {
                    if closed.load(Ordering::SeqCst) {
                        late.fetch_add(1, Ordering::SeqCst);
                    }
                    heard.fetch_add(1, Ordering::SeqCst);
                })
            }),
            ..Callbacks::default()
        },
        ..ClientOptions::default()
    };
    let client = Arc::new(Client::http(config, options));
    client.connect().expect("connect over HTTP+SSE");
    let caller = {
        let client = client.clone();
        std::thread::spawn(move || client.call_tool("script", None, &none()))
    };
    let deadline = Instant::now() + BOUND;
    while heard.load(Ordering::SeqCst) < 20 {
        assert!(Instant::now() < deadline, "the chatter never came");
        std::thread::sleep(Duration::from_millis(5));
    }
    let started = Instant::now();
    client.close();
    closed.store(true, Ordering::SeqCst);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "close took {took:?}");
    let error = caller.join().unwrap().unwrap_err();
    assert_eq!(error.status, Status::Closed, "{error}");
    assert!(
        server.wait_for(|seen| seen.streams_closed == 1),
        "the stream stayed open"
    );
    std::thread::sleep(IDLE);
    assert_eq!(late.load(Ordering::SeqCst), 0, "callbacks after close");
}

#[test]
fn a_server_that_ends_the_parked_stream_fails_the_pending_call_with_transport_error() {
    let _serial = serial();
    let server = SseServer::start(Arc::new(|stream, _id| {
        std::thread::sleep(IDLE);
        // The chunked body's last chunk: the stream's orderly end.
        let _ = stream.write_all(b"0\r\n\r\n");
        let _ = stream.shutdown(Shutdown::Both);
    }));
    let client = connect(&server.url, &Heard::default());
    let started = Instant::now();
    let error = client.call_tool("script", None, &bounded()).unwrap_err();
    assert!(started.elapsed() < BOUND, "took {:?}", started.elapsed());
    assert_eq!(error.status, Status::TransportError, "{error}");
    assert!(
        error.message.contains("ended the HTTP+SSE stream"),
        "{error}"
    );
    // The connection is over with its stream.
    assert!(client.ping(&bounded()).is_err());
    client.close();
}

fn none() -> RequestOptions {
    RequestOptions::default()
}

/// A hang ends in TIMEOUT, which no test expects.
fn bounded() -> RequestOptions {
    RequestOptions::with_timeout(BOUND)
}

/// What the server writes on the session's stream (after its head and endpoint event) for a
/// `tools/call`, given the call's id; on a thread of its own.
type CallScript = Arc<dyn Fn(&mut TcpStream, &Value) + Send + Sync>;

/// An HTTP+SSE server for one client: `GET /sse` opens the session's stream (chunked), whose
/// first event names `/messages` as the endpoint; each message POSTed there is acknowledged
/// (202) and any request answered on the stream at once, but for `tools/call`, which the
/// script answers (or not).
struct SseServer {
    url: String,
    seen: Arc<Mutex<Seen>>,
}

#[derive(Default)]
struct Seen {
    /// The messages POSTed to the endpoint.
    messages: Vec<Value>,
    /// The client closed its stream.
    streams_closed: usize,
}

impl Seen {
    fn posted(&self, method: &str) -> Vec<Value> {
        let of_method = |m: &&Value| m["method"] == method;
        self.messages.iter().filter(of_method).cloned().collect()
    }
}

/// What the connections of one server share.
struct Session {
    script: CallScript,
    seen: Arc<Mutex<Seen>>,
    /// The stream's writing side, once open.
    stream: Mutex<Option<TcpStream>>,
}

impl SseServer {
    fn start(script: CallScript) -> SseServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/sse", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Seen::default()));
        let session = Arc::new(Session {
            script,
            seen: seen.clone(),
            stream: Mutex::new(None),
        });
        std::thread::spawn(move || {
            for connection in listener.incoming() {
                let Ok(connection) = connection else { return };
                let session = session.clone();
                std::thread::spawn(move || serve(connection, &session));
            }
        });
        SseServer { url, seen }
    }

    /// Waits (up to `BOUND`) until `done` holds for what the server saw.
    fn wait_for(&self, done: impl Fn(&Seen) -> bool) -> bool {
        let deadline = Instant::now() + BOUND;
        while !done(&self.seen.lock().unwrap()) {
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }
}

fn serve(mut connection: TcpStream, session: &Session) {
    let mut buffer = Vec::new();
    while let Some((method, message)) = read_request(&mut connection, &mut buffer) {
        if method == "GET" {
            return open_stream(connection, session);
        }
        session.seen.lock().unwrap().messages.push(message.clone());
        let accepted = "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n";
        if connection.write_all(accepted.as_bytes()).is_err() {
            return;
        }
        respond(session, &message);
    }
}

/// Opens the session's stream, names the endpoint, and holds the stream until the client
/// closes it.
fn open_stream(mut connection: TcpStream, session: &Session) {
    let mut opening = SSE_HEAD.to_vec();
    opening.extend(chunk(b"event: endpoint\ndata: /messages?session=1\n\n"));
    if connection.write_all(&opening).is_err() {
        return;
    }
    *session.stream.lock().unwrap() = connection.try_clone().ok();
    // The client never writes on its stream: a read returns when it closes it.
    let _ = std::io::Read::read(&mut connection, &mut [0; 64]);
    session.seen.lock().unwrap().streams_closed += 1;
}

/// Answers a request on the stream: a `tools/call` as the script says, on a thread of its own.
fn respond(session: &Session, message: &Value) {
    let (Some(method), Some(id)) = (message["method"].as_str(), message.get("id")) else {
        return; // a notification
    };
    let stream = session
        .stream
        .lock()
        .unwrap()
        .as_ref()
        .map(TcpStream::try_clone);
    let Some(Ok(mut stream)) = stream else {
        return;
    };
    let result = match method {
        "initialize" => json!({
            "protocolVersion": "2024-11-05",
            "capabilities": {"tools": {}, "logging": {}},
            "serverInfo": {"name": "parked-sse", "version": "1"},
        }),
        "tools/call" => {
            let (script, id) = (session.script.clone(), id.clone());
            std::thread::spawn(move || script(&mut stream, &id));
            return;
        }
        _ => json!({}),
    };
    let message = json!({"jsonrpc": "2.0", "id": id, "result": result});
    let _ = stream.write_all(&chunk(
        format!("event: message\ndata: {message}\n\n").as_bytes(),
    ));
}

/// The SSE event answering call `id` with the text `text`.
fn answer_event(id: &Value, text: &str) -> Vec<u8> {
    let message = json!({
        "jsonrpc": "2.0",
        "id": id,
        "result": {"content": [{"type": "text", "text": text}]}
    });
    format!("event: message\ndata: {message}\n\n").into_bytes()
}
