//! Our test server sleeps while clients hold streams open: a thread of it that holds a stream
//! (a handshake-era standalone GET, an HTTP+SSE event stream, a request whose answer is still to
//! come) or runs a handler that waits for its cancel (`never`, a listen) waits for the client
//! without waking on a timer. bench/many_clients.c holds a thousand such streams open against
//! this server; if each woke every few milliseconds, the server would take both cores and its
//! figures would measure the server, not the client. Counted as the voluntary context switches
//! of all the server's threads (a thread that wakes on a timer switches each time it goes back
//! to sleep) while the clients sit idle. Linux: read from /proc.
#![cfg(target_os = "linux")]

mod common;

use common::http_server::HttpServer;
use mcpc::{Client, ClientOptions, ConnectMode, HttpTransportKind, Request, RequestOptions};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const CLIENTS: usize = 20;
/// How long the server is watched while the clients sit idle.
const WATCHED: Duration = Duration::from_secs(2);
/// The most wake-ups per second per client the server may have meanwhile. A thread that looks
/// every 5 ms wakes about 200 times a second; a server asleep has a few, once, for the idle
/// connections the clients' pools close.
const MAX_WAKEUPS_PER_CLIENT_PER_SECOND: u64 = 5;
/// How long the streams may take to be open, as the server sees them.
const SETTLE: Duration = Duration::from_secs(20);

/// The voluntary context switches of all the threads of process `pid`, so far.
fn voluntary_switches(pid: u32) -> u64 {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("the server's threads");
    tasks
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("status")).ok())
        .filter_map(|status| {
            let line = status
                .lines()
                .find(|line| line.starts_with("voluntary_ctxt_switches:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .sum()
}

/// Asserts that the server is (nearly) asleep over `WATCHED`, the clients' streams open.
fn assert_asleep(server: &HttpServer, what: &str) {
    let before = voluntary_switches(server.pid());
    std::thread::sleep(WATCHED);
    let wakeups = voluntary_switches(server.pid()).saturating_sub(before);
    let per_second = wakeups * 1000 / WATCHED.as_millis() as u64;
    eprintln!("quiet_test_server: {what}: {per_second} server wake-ups a second");
    let bound = MAX_WAKEUPS_PER_CLIENT_PER_SECOND * CLIENTS as u64;
    assert!(
        per_second <= bound,
        "{what}: the test server woke {per_second} times a second, over {bound}, while \
         {CLIENTS} clients sat idle with their streams open"
    );
}

/// Waits (up to `SETTLE`) until `ready` holds.
fn wait_until(what: &str, ready: impl Fn() -> bool) {
    let deadline = Instant::now() + SETTLE;
    while !ready() {
        assert!(Instant::now() < deadline, "{what}: not ready in {SETTLE:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Starts, on each client, a call of the tool that never answers; its stream stays open.
fn start_never_calls(clients: &[Client]) {
    for client in clients {
        let never = Request::CallTool {
            name: "never".into(),
            arguments: None,
        };
        client
            .start(never, &RequestOptions::default(), |_| {})
            .expect("start a call of never");
    }
}

/// How many `never` calls the server has been sent.
fn never_calls_logged(server: &HttpServer) -> usize {
    server
        .log()
        .iter()
        .filter(|line| line["http"]["body"]["params"]["name"] == "never")
        .count()
}

#[test]
fn standalone_streams_and_unanswered_requests_leave_the_server_asleep() {
    let server = HttpServer::start("quiet_test_server_handshake", &[]);
    let clients: Vec<Client> = (0..CLIENTS)
        .map(|_| server.connect(ConnectMode::Legacy))
        .collect();
    // Each client's standalone GET stream is open once a broadcast reaches them all.
    let notice = json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" });
    wait_until("the standalone streams", || {
        server.broadcast(&notice) == CLIENTS as u64
    });
    assert_asleep(&server, "handshake era, standalone GET streams open");

    start_never_calls(&clients);
    wait_until("the never calls", || never_calls_logged(&server) == CLIENTS);
    assert_asleep(
        &server,
        "handshake era, a call of never waiting on each client",
    );
}

#[test]
fn modern_requests_waiting_leave_the_server_asleep() {
    let server = HttpServer::start("quiet_test_server_modern", &["--modern"]);
    let clients: Vec<Client> = (0..CLIENTS)
        .map(|_| server.connect(ConnectMode::Modern))
        .collect();
    for client in &clients {
        let listen = Request::Other {
            method: "subscriptions/listen".into(),
            params: Some(json!({ "notifications": { "toolsListChanged": true } })),
        };
        client
            .start(listen, &RequestOptions::default(), |_| {})
            .expect("start a listen");
    }
    let listeners = |client: &Client| -> Value {
        let answer = client.request("test/listeners", None, &RequestOptions::default());
        answer.expect("test/listeners")["count"].clone()
    };
    wait_until("the listens", || listeners(&clients[0]) == CLIENTS);
    assert_asleep(&server, "modern era, a listen waiting on each client");

    start_never_calls(&clients);
    wait_until("the never calls", || never_calls_logged(&server) == CLIENTS);
    assert_asleep(
        &server,
        "modern era, a listen and a call of never waiting on each",
    );
}

#[test]
fn http_sse_event_streams_leave_the_server_asleep() {
    let server = HttpServer::start("quiet_test_server_sse", &["--sse"]);
    let clients: Vec<Client> = (0..CLIENTS)
        .map(|_| {
            let mut config = server.config();
            config.transport = HttpTransportKind::LegacySse;
            let client = Client::http(config, ClientOptions::default());
            client.connect().expect("connect over HTTP+SSE");
            client
        })
        .collect();
    start_never_calls(&clients);
    wait_until("the never calls", || never_calls_logged(&server) == CLIENTS);
    assert_asleep(
        &server,
        "HTTP+SSE, event streams open, a call of never on each",
    );
}
