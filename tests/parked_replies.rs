//! SSE responses read by the library's workers (started calls of the completion API) wait
//! parked on the reactor while the server is quiet, holding no thread: two hundred modern-era
//! clients each with a started call whose server answers late hold a few library threads in
//! all, and each call still hears what the server sends afterwards and gets its late answer
//! (against a server written here). With our test server, started `subscriptions/listen`
//! requests: a cancel of a parked one returns at once and the server sees its stream close;
//! close with parked ones returns within its bound and no callback runs after. An answer
//! dribbled a byte at a time and a flood, both arriving after the stream was parked, arrive
//! whole and in order. Blocking calls whose streams stay open after their answers hold no
//! thread each while the rest is awaited. In a test binary of its own (threads and memory are
//! counted), the tests taking turns (`SERIAL`). Time bounds are wide margins against hangs.

mod common;

use common::flood::status_kib;
use common::hostile_sse::{chunk, dribble, flood, hearing, notice, read_request, Heard, SSE_HEAD};
use common::http_server::HttpServer;
use common::report_figure;
use common::thread_names::{library_threads, settled_threads};
use mcpc::{
    CancellationToken, Client, ClientOptions, ConnectMode, HttpConfig, Request, RequestOptions,
    Status,
};
use serde_json::{json, Value};
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

const CLIENTS: usize = 200;
/// The most library threads 200 clients with a parked listen each may hold (a thread per
/// listen fails it).
const MAX_LIBRARY_THREADS: usize = 16;
/// Anything that must happen must happen within this; a hang would not.
const BOUND: Duration = Duration::from_secs(10);
/// Long enough for the client to have read all there was and parked the stream.
const IDLE: Duration = Duration::from_millis(300);
/// How long thread counts may take to settle: idle HTTP workers stay 5 s for the next call.
const SETTLE: Duration = Duration::from_secs(20);

type Outcome = mcpc::Result<Value>;
/// The protocol revision of the modern era.
const MODERN: &str = "2026-07-28";

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn listen_request() -> Request {
    Request::Other {
        method: "subscriptions/listen".into(),
        params: Some(json!({ "notifications": { "toolsListChanged": true } })),
    }
}

/// A modern-era client of our test server.
fn modern_client(server: &HttpServer) -> Client {
    server.connect(ConnectMode::Modern)
}

/// Starts a listen on `client`; its outcome goes to `outcomes`.
fn start_listen(client: &Client, opts: &RequestOptions, outcomes: &mpsc::Sender<Outcome>) {
    let outcomes = outcomes.clone();
    client
        .start(listen_request(), opts, move |outcome| {
            let _ = outcomes.send(outcome);
        })
        .expect("started");
}

fn listeners(client: &Client) -> u64 {
    client
        .request("test/listeners", None, &RequestOptions::default())
        .expect("test/listeners")["count"]
        .as_u64()
        .unwrap()
}

/// Waits (up to `BOUND`) until the server has `count` listens open.
fn wait_listeners(client: &Client, count: u64) {
    let deadline = Instant::now() + BOUND;
    while listeners(client) != count {
        assert!(Instant::now() < deadline, "never {count} listens open");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn two_hundred_parked_calls_hold_a_few_threads_and_each_hears_what_follows_and_its_answer() {
    let _serial = serial();
    // Each call's stream opens with a notice, then waits for `release`: notice 1 and the answer.
    let release = Arc::new((Mutex::new(false), Condvar::new()));
    let gate = release.clone();
    let url = hostile_server(Arc::new(move |stream, id| {
        let _ = stream.write_all(&chunk(&notice(0)));
        let (released, changed) = &*gate;
        let mut released = released.lock().unwrap();
        while !*released {
            released = changed.wait(released).unwrap();
        }
        drop(released);
        let mut rest = notice(1);
        rest.extend(answer_event(id, "late"));
        let _ = stream.write_all(&chunk(&rest));
    }));
    let clients: Vec<(Client, Heard)> = (0..CLIENTS)
        .map(|_| {
            let heard = Heard::default();
            (connect(&url, ConnectMode::Modern, &heard), heard)
        })
        .collect();
    settled_threads(SETTLE, MAX_LIBRARY_THREADS);
    let baseline_kib = status_kib("VmRSS");

    let (outcomes, finished) = mpsc::channel();
    for (client, _) in &clients {
        start_call(client, &RequestOptions::default(), &outcomes);
    }
    let all_heard = |count: usize| {
        let deadline = Instant::now() + BOUND;
        while !clients
            .iter()
            .all(|(_, heard)| heard.lock().unwrap().len() >= count)
        {
            assert!(
                Instant::now() < deadline,
                "not every call heard {count} notices"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    all_heard(1);
    let threads = settled_threads(SETTLE, MAX_LIBRARY_THREADS);
    let kib_per_call = status_kib("VmRSS").saturating_sub(baseline_kib) / CLIENTS as u64;
    report_figure(&format!(
        "parked_replies: {CLIENTS} modern HTTP clients each with a started call waiting on its \
         SSE stream, {threads} library threads counted, {kib_per_call} KiB RSS per call (the \
         in-test server's thread per connection included)"
    ));
    assert!(
        threads <= MAX_LIBRARY_THREADS,
        "{threads} library threads for {CLIENTS} waiting calls, {} of them mcpc-http",
        library_threads()
            .iter()
            .filter(|name| *name == "mcpc-http")
            .count()
    );

    // What the server sends now reaches every call, and so does each late answer, once.
    *release.0.lock().unwrap() = true;
    release.1.notify_all();
    for n in 0..CLIENTS {
        let outcome = finished
            .recv_timeout(BOUND)
            .unwrap_or_else(|_| panic!("only {n} of {CLIENTS} calls answered"));
        assert_eq!(text_of(outcome), "late");
    }
    all_heard(2);
    for (_, heard) in &clients {
        assert_eq!(*heard.lock().unwrap(), vec![0, 1]);
    }
    assert!(
        finished.recv_timeout(IDLE).is_err(),
        "a call answered twice"
    );
    clients.iter().for_each(|(client, _)| client.close());
}

#[test]
fn cancel_of_a_parked_listen_returns_at_once_and_the_server_sees_its_stream_close() {
    let _serial = serial();
    let server = HttpServer::start("parked_listen_cancel", &["--modern"]);
    let client = modern_client(&server);
    let token = CancellationToken::new();
    let (outcomes, finished) = mpsc::channel();
    start_listen(
        &client,
        &RequestOptions::with_cancellation(&token),
        &outcomes,
    );
    wait_listeners(&client, 1);
    std::thread::sleep(IDLE);
    let cancelled_at = Instant::now();
    assert!(token.cancel(None), "the first cancel");
    let outcome = finished.recv_timeout(BOUND).expect("the listen's outcome");
    assert_eq!(outcome.unwrap_err().status, Status::Cancelled);
    assert!(
        cancelled_at.elapsed() < Duration::from_secs(2),
        "the cancel took {:?}",
        cancelled_at.elapsed()
    );
    // The server saw the stream close, which is the cancel in this era.
    let lines = server.wait_for(|lines| lines.iter().any(|l| l.get("closed_by_client").is_some()));
    assert!(
        lines.iter().any(|l| l.get("closed_by_client").is_some()),
        "the server never saw the listen's stream close"
    );
    wait_listeners(&client, 0);
    assert!(finished.recv_timeout(IDLE).is_err(), "a second outcome");
    client.close();
}

#[test]
fn a_parked_call_times_out_and_the_server_sees_its_stream_close() {
    let _serial = serial();
    let closed = Arc::new(AtomicUsize::new(0));
    let seen = closed.clone();
    let url = hostile_server(Arc::new(move |stream, _id| {
        let _ = stream.write_all(&chunk(&notice(0)));
        hold(stream);
        seen.fetch_add(1, Ordering::SeqCst);
    }));
    let heard = Heard::default();
    let client = connect(&url, ConnectMode::Modern, &heard);
    let (outcomes, finished) = mpsc::channel();
    let opts = RequestOptions {
        timeout: Some(Duration::from_millis(500)),
        ..RequestOptions::default()
    };
    start_call(&client, &opts, &outcomes);
    let outcome = finished.recv_timeout(BOUND).expect("the call's outcome");
    assert_eq!(outcome.unwrap_err().status, Status::Timeout);
    assert_eq!(
        *heard.lock().unwrap(),
        vec![0],
        "the notice before the wait"
    );
    let deadline = Instant::now() + BOUND;
    while closed.load(Ordering::SeqCst) == 0 {
        assert!(
            Instant::now() < deadline,
            "the server never saw the stream close"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(finished.recv_timeout(IDLE).is_err(), "a second outcome");
    client.close();
}

#[test]
fn a_parked_stream_left_open_after_its_answer_is_dropped_at_the_drain_deadline() {
    let _serial = serial();
    let closed = Arc::new(AtomicUsize::new(0));
    let seen = closed.clone();
    let url = hostile_server(Arc::new(move |stream, id| {
        std::thread::sleep(IDLE);
        let _ = stream.write_all(&chunk(&answer_event(id, "answered")));
        hold(stream);
        seen.fetch_add(1, Ordering::SeqCst);
    }));
    let heard = Heard::default();
    let client = connect(&url, ConnectMode::Modern, &heard);
    let (outcomes, finished) = mpsc::channel();
    start_call(&client, &RequestOptions::default(), &outcomes);
    let outcome = finished.recv_timeout(BOUND).expect("the call's outcome");
    assert_eq!(text_of(outcome), "answered");
    // The stream stays open after the answer: the client gives it a while, then drops it.
    let deadline = Instant::now() + BOUND;
    while closed.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "the stream was never dropped");
        std::thread::sleep(Duration::from_millis(10));
    }
    // The client still works (its exchange table was left right).
    start_call(&client, &RequestOptions::default(), &outcomes);
    let outcome = finished
        .recv_timeout(BOUND)
        .expect("the second call's outcome");
    assert_eq!(text_of(outcome), "answered");
    client.close();
}

/// A blocking call returns at its answer; what its stream carries after it is read by the
/// library. A server that leaves the stream open after the answer must not hold a library
/// thread per call while the library waits for the rest (up to its drain deadline).
#[test]
fn two_hundred_blocking_calls_whose_streams_stay_open_after_the_answer_hold_a_few_threads() {
    let _serial = serial();
    let closed = Arc::new(AtomicUsize::new(0));
    let seen = closed.clone();
    let url = hostile_server(Arc::new(move |stream, id| {
        let _ = stream.write_all(&chunk(&answer_event(id, "answered")));
        hold(stream);
        seen.fetch_add(1, Ordering::SeqCst);
    }));
    let clients: Vec<Client> = (0..CLIENTS)
        .map(|_| connect(&url, ConnectMode::Modern, &Heard::default()))
        .collect();
    settled_threads(SETTLE, MAX_LIBRARY_THREADS);
    let call = |client: &Client| {
        let params = json!({ "name": "replies" });
        let result = client
            .request("tools/call", Some(params), &RequestOptions::default())
            .expect("the call's answer");
        assert_eq!(result["content"][0]["text"], "answered");
    };
    clients.iter().for_each(call);
    // Counted at once: a thread per stream would still be here (waiting for the stream's end
    // until its drain deadline, 2 s after the answer, then idle for the next job).
    let threads = library_threads();
    assert!(
        threads.len() <= MAX_LIBRARY_THREADS,
        "{} library threads while {CLIENTS} streams stay open after their answers: {threads:?}",
        threads.len()
    );
    report_figure(&format!(
        "parked_replies: {CLIENTS} blocking calls whose streams stay open after the answer, {} \
         library threads while the library waits for their ends",
        threads.len()
    ));
    // Each stream is dropped at its drain deadline, and each client still works.
    let deadline = Instant::now() + BOUND;
    while closed.load(Ordering::SeqCst) < CLIENTS {
        assert!(
            Instant::now() < deadline,
            "only {} of {CLIENTS} streams were dropped",
            closed.load(Ordering::SeqCst)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    clients.iter().for_each(call);
    clients.iter().for_each(Client::close);
}

#[test]
fn a_parked_stream_that_drops_before_its_answer_is_resumed_by_get() {
    let _serial = serial();
    let url = hostile_server(Arc::new(|stream, _id| {
        // Primed, then quiet long enough to be parked, then the connection drops.
        let _ = stream.write_all(&chunk(b"id: e1\nretry: 100\ndata: \n\n"));
        std::thread::sleep(IDLE);
        let _ = stream.shutdown(std::net::Shutdown::Both);
    }));
    let (outcome, _) = started_call(&url);
    assert_eq!(text_of(outcome), "resumed");
}

#[test]
fn close_with_parked_listens_returns_within_its_bound_and_no_callback_runs_after() {
    let _serial = serial();
    const LISTENS: usize = 20;
    let server = HttpServer::start("parked_listen_close", &["--modern"]);
    let client = modern_client(&server);
    let control = modern_client(&server);
    let closed = Arc::new(AtomicBool::new(false));
    let late = Arc::new(AtomicUsize::new(0));
    let (outcomes, finished) = mpsc::channel();
    for _ in 0..LISTENS {
        let (outcomes, closed, late) = (outcomes.clone(), closed.clone(), late.clone());
        client
            .start(
                listen_request(),
                &RequestOptions::default(),
                move |outcome| {
                    if closed.load(Ordering::SeqCst) {
                        late.fetch_add(1, Ordering::SeqCst);
                    }
                    let _ = outcomes.send(outcome);
                },
            )
            .expect("started");
    }
    wait_listeners(&control, LISTENS as u64);
    std::thread::sleep(IDLE);
    let started = Instant::now();
    client.close();
    closed.store(true, Ordering::SeqCst);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "close took {:?}",
        started.elapsed()
    );
    for n in 0..LISTENS {
        let outcome = finished
            .recv_timeout(Duration::ZERO)
            .unwrap_or_else(|_| panic!("close returned with {n} of {LISTENS} listens ended"));
        assert_eq!(outcome.unwrap_err().status, Status::Closed);
    }
    std::thread::sleep(IDLE);
    assert_eq!(late.load(Ordering::SeqCst), 0, "callbacks after close");
    assert!(finished.try_recv().is_err(), "a second outcome");
    wait_listeners(&control, 0);
    control.close();
}

/// What the hostile server writes on a tools/call's stream, after its SSE head.
type CallScript = Arc<dyn Fn(&mut TcpStream, &Value) + Send + Sync>;

/// A server that answers the handshake (`initialize`) or the discovery (`server/discover`) and
/// other requests at once, and each `tools/call` with an SSE stream its script writes (then
/// holds the connection open until the client closes it). The clients have no standalone
/// stream, so a GET resumes the last call's stream (SEP-1699): it gets the call's answer,
/// "resumed". Returns its URL.
fn hostile_server(script: CallScript) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let last_call = Arc::new(Mutex::new(Value::Null));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let (script, last_call) = (script.clone(), last_call.clone());
            std::thread::spawn(move || serve(stream, &script, &last_call));
        }
    });
    url
}

fn serve(mut stream: TcpStream, script: &CallScript, last_call: &Mutex<Value>) {
    let mut buffer = Vec::new();
    while let Some((method, body)) = read_request(&mut stream, &mut buffer) {
        let answer = match (method.as_str(), body["method"].as_str()) {
            ("GET", _) => {
                let id = last_call.lock().unwrap().clone();
                let mut resumed = SSE_HEAD.to_vec();
                resumed.extend(chunk(&answer_event(&id, "resumed")));
                resumed.extend(b"0\r\n\r\n");
                let _ = stream.write_all(&resumed);
                continue;
            }
            ("POST", Some("tools/call")) => {
                *last_call.lock().unwrap() = body["id"].clone();
                if stream.write_all(SSE_HEAD).is_ok() {
                    script(&mut stream, &body["id"]);
                    hold(&mut stream);
                }
                return;
            }
            ("POST", Some("initialize")) => json_answer(
                &body,
                json!({
                    "protocolVersion": body["params"]["protocolVersion"],
                    "capabilities": {"tools": {}, "logging": {}},
                    "serverInfo": {"name": "hostile-replies", "version": "1"}
                }),
            ),
            ("POST", Some("server/discover")) => json_answer(
                &body,
                json!({
                    "resultType": "complete",
                    "supportedVersions": [MODERN],
                    "capabilities": {"tools": {}, "logging": {}},
                    "_meta": {"io.modelcontextprotocol/serverInfo":
                        {"name": "hostile-replies", "version": "1"}}
                }),
            ),
            ("POST", Some(_)) if body.get("id").is_some() => {
                json_answer(&body, json!({"resultType": "complete"}))
            }
            ("POST", _) => "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n".to_owned(),
            _ => "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".to_owned(),
        };
        if stream.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// Waits until the client closes the connection (or shuts down its side).
fn hold(stream: &mut TcpStream) {
    let _ = std::io::Read::read(stream, &mut [0; 64]);
}

fn json_answer(request: &Value, result: Value) -> String {
    let body = json!({"jsonrpc": "2.0", "id": request["id"], "result": result}).to_string();
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// The SSE event answering call `id` with the text `text`.
fn answer_event(id: &Value, text: &str) -> Vec<u8> {
    let message = json!({
        "jsonrpc": "2.0",
        "id": id,
        "result": {"resultType": "complete", "content": [{"type": "text", "text": text}]}
    });
    format!("data: {message}\n\n").into_bytes()
}

/// A client of the hostile server at `url`, connected in `mode`.
fn connect(url: &str, mode: ConnectMode, heard: &Heard) -> Client {
    let mut config = HttpConfig::new(url);
    config.listen = false;
    let options = ClientOptions {
        mode,
        ..hearing(heard)
    };
    let client = Client::http(config, options);
    client.connect().expect("connect");
    client
}

/// Starts a tool call on `client`; its outcome goes to `outcomes`.
fn start_call(client: &Client, opts: &RequestOptions, outcomes: &mpsc::Sender<Outcome>) {
    let outcomes = outcomes.clone();
    let call = Request::CallTool {
        name: "replies".into(),
        arguments: None,
    };
    client
        .start(call, opts, move |outcome| {
            let _ = outcomes.send(outcome);
        })
        .expect("started");
}

/// Connects to `url` (handshake era), starts a tool call, and returns its outcome and the log
/// notices heard (in order) by the time it came.
fn started_call(url: &str) -> (Outcome, Vec<u64>) {
    let heard = Heard::default();
    let client = connect(url, ConnectMode::Legacy, &heard);
    let (outcomes, finished) = mpsc::channel();
    start_call(&client, &RequestOptions::default(), &outcomes);
    let outcome = finished.recv_timeout(BOUND).expect("the call's outcome");
    // Notices are delivered before the answer that follows them.
    let heard = heard.lock().unwrap().clone();
    client.close();
    (outcome, heard)
}

fn text_of(outcome: Outcome) -> String {
    let result = outcome.expect("the call's answer");
    result["content"][0]["text"].as_str().unwrap().to_owned()
}

#[test]
fn an_answer_dribbled_a_byte_at_a_time_after_the_stream_was_parked_arrives_whole() {
    let _serial = serial();
    let url = hostile_server(Arc::new(|stream, id| {
        std::thread::sleep(IDLE);
        let mut events = Vec::new();
        for n in 0..3 {
            events.extend(notice(n));
        }
        events.extend(answer_event(id, "dribbled"));
        dribble(stream, &events);
    }));
    let (outcome, heard) = started_call(&url);
    assert_eq!(text_of(outcome), "dribbled");
    assert_eq!(heard, vec![0, 1, 2]);
}

#[test]
fn a_flood_after_the_stream_was_parked_arrives_whole_and_in_order() {
    let _serial = serial();
    const NOTICES: u64 = 5000;
    let url = hostile_server(Arc::new(|stream, id| {
        std::thread::sleep(IDLE);
        flood(stream, NOTICES, &answer_event(id, "flooded"));
    }));
    let (outcome, heard) = started_call(&url);
    assert_eq!(text_of(outcome), "flooded");
    assert_eq!(heard, (0..NOTICES).collect::<Vec<_>>());
}
