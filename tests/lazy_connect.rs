//! Lazy connect (`ClientOptions::lazy_connect`): a client starts nothing until its first
//! request, which connects; concurrent first requests connect once; a failed lazy connect
//! fails its request with the connect's status and message, and the next request tries again;
//! close ends a lazy connect with CLOSED. The servers are started through `sh`, which appends
//! its pid to a marker file first, so the test counts starts from outside the library.
#![cfg(unix)]

mod common;

use common::*;
use mcpc::{CancellationToken, Client, ClientOptions, ConnectionState, HttpConfig, RequestOptions};
use mcpc::{Status, StdioConfig};
use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

fn lazy() -> ClientOptions {
    ClientOptions {
        lazy_connect: true,
        ..ClientOptions::default()
    }
}

/// A fresh marker file for one test.
fn marker(name: &str) -> PathBuf {
    log_path(&format!("{name}-starts"))
}

/// `sh` writing its pid to `marker`, then running `command` in its place.
fn counted(marker: &Path, command: &str) -> StdioConfig {
    let script = format!("echo $$ >> '{}'; {command}", marker.display());
    StdioConfig::new(["/bin/sh", "-c", &script])
}

/// The test server, its starts counted in `marker`.
fn counted_server(marker: &Path, args: &str) -> StdioConfig {
    counted(marker, &format!("exec '{}' {args}", SERVER.as_str()))
}

fn starts(marker: &Path) -> Vec<u32> {
    std::fs::read_to_string(marker)
        .unwrap_or_default()
        .lines()
        .map(|pid| pid.trim().parse().expect("a pid"))
        .collect()
}

/// Waits (at most 10 s) until a request has begun the lazy connect.
fn wait_connecting(client: &Client) {
    let began = Instant::now();
    while client.state() != ConnectionState::Connecting {
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "no connect began"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn none() -> RequestOptions {
    RequestOptions::default()
}

#[test]
fn a_lazy_client_starts_no_server_until_its_first_request() {
    let marker = marker("lazy-first");
    let client = Client::stdio(counted_server(&marker, ""), lazy());
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        starts(&marker).is_empty(),
        "a server started before any request"
    );
    assert_eq!(client.state(), ConnectionState::NotConnected);

    client
        .ping(&none())
        .expect("the first request connects, then pings");
    let started = starts(&marker);
    assert_eq!(started.len(), 1, "one server for the first request");
    assert_eq!(client.state(), ConnectionState::Connected);
    assert_eq!(client.server_pid(), Some(started[0]));
    let result = client
        .call_tool("echo", Some(serde_json::json!({ "text": "hi" })), &none())
        .expect("later requests use the same connection");
    assert_eq!(text(&result), "hi");
    assert_eq!(starts(&marker).len(), 1, "no second server");
}

#[test]
fn an_explicit_connect_still_connects_a_lazy_client() {
    let marker = marker("lazy-explicit");
    let client = Client::stdio(counted_server(&marker, ""), lazy());
    client.connect().expect("connect");
    assert_eq!(starts(&marker).len(), 1);
    client.ping(&none()).expect("ping");
    assert_eq!(starts(&marker).len(), 1);
}

#[test]
fn a_failed_lazy_connect_fails_its_request_with_the_connects_status_and_the_next_tries_again() {
    let missing = "/nonexistent/mcpc-no-such-server";
    let direct = Client::stdio(StdioConfig::new([missing]), ClientOptions::default())
        .connect()
        .expect_err("no such binary");
    let client = Client::stdio(StdioConfig::new([missing]), lazy());
    let err = client.ping(&none()).expect_err("no server to connect to");
    assert_eq!(
        err.status, direct.status,
        "the connect's status: {}",
        err.message
    );
    assert!(
        err.message.starts_with("lazy connect failed: ") && err.message.contains(&direct.message),
        "the message says the lazy connect failed and why: {:?} (connect said {:?})",
        err.message,
        direct.message
    );

    // A server that exits at once: each request after a failed lazy connect starts one again.
    let marker = marker("lazy-retry");
    let client = Client::stdio(counted(&marker, "exit 3"), lazy());
    for attempt in 1..=2 {
        let err = client.ping(&none()).expect_err("the server exits");
        assert!(
            err.message.starts_with("lazy connect failed"),
            "{}",
            err.message
        );
        assert_eq!(
            starts(&marker).len(),
            attempt,
            "request {attempt} tried again"
        );
    }
}

/// Runs `requests` pings at once on `client`; their outcomes.
fn pings_at_once(client: &Arc<Client>, requests: usize) -> Vec<mcpc::Result<serde_json::Value>> {
    let threads: Vec<_> = (0..requests)
        .map(|_| {
            let client = client.clone();
            // A wide bound, so that a regression fails instead of hanging.
            std::thread::spawn(move || {
                client.ping(&RequestOptions::with_timeout(Duration::from_secs(10)))
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

#[test]
fn concurrent_first_requests_start_one_server() {
    let marker = marker("lazy-concurrent");
    let client = Arc::new(Client::stdio(
        counted_server(&marker, "--slow-start-ms 300"),
        lazy(),
    ));
    for outcome in pings_at_once(&client, 8) {
        outcome.expect("every first request succeeds");
    }
    assert_eq!(
        starts(&marker).len(),
        1,
        "one server for eight first requests"
    );

    // A connect that fails slowly fails every request that waited for it, tried once.
    let marker = self::marker("lazy-concurrent-fail");
    let client = Arc::new(Client::stdio(counted(&marker, "sleep 0.3; exit 3"), lazy()));
    for outcome in pings_at_once(&client, 8) {
        let err = outcome.expect_err("the server exits");
        assert!(
            err.message.starts_with("lazy connect failed"),
            "{}",
            err.message
        );
    }
    assert_eq!(
        starts(&marker).len(),
        1,
        "the failed connect was tried once"
    );
}

#[test]
fn a_request_waiting_for_a_lazy_connect_keeps_its_own_timeout_and_cancel() {
    // The server never answers the handshake: the first request's connect hangs.
    let client = Arc::new(Client::stdio(config(&["--silent-initialize"]), lazy()));
    // The request that starts the connect is bounded by its own timeout too.
    let began = Instant::now();
    let err = client
        .ping(&RequestOptions::with_timeout(Duration::from_millis(300)))
        .expect_err("the connect hangs");
    assert_eq!(err.status, Status::Timeout, "{}", err.message);
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
    assert_eq!(
        client.state(),
        ConnectionState::Connecting,
        "the connect goes on"
    );

    let first = {
        let client = client.clone();
        std::thread::spawn(move || client.ping(&none()))
    };
    wait_connecting(&client);
    let began = Instant::now();
    let err = client
        .ping(&RequestOptions::with_timeout(Duration::from_millis(300)))
        .expect_err("the connect hangs");
    assert_eq!(err.status, Status::Timeout, "{}", err.message);
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );

    let token = CancellationToken::new();
    let waiting = {
        let (client, token) = (client.clone(), token.clone());
        std::thread::spawn(move || client.ping(&RequestOptions::with_cancellation(&token)))
    };
    std::thread::sleep(Duration::from_millis(200));
    let began = Instant::now();
    token.cancel(Some("enough"));
    let err = waiting.join().unwrap().expect_err("cancelled");
    assert_eq!(err.status, Status::Cancelled, "{}", err.message);
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );

    client.close();
    let err = first.join().unwrap().expect_err("closed");
    assert_eq!(err.status, Status::Closed, "{}", err.message);
}

#[test]
fn close_ends_a_lazy_connect_and_the_requests_waiting_for_it_with_closed() {
    let client = Arc::new(Client::stdio(config(&["--silent-initialize"]), lazy()));
    let (tx, rx) = mpsc::channel();
    for _ in 0..4 {
        let (client, tx) = (client.clone(), tx.clone());
        std::thread::spawn(move || {
            let outcome = client.ping(&none());
            let _ = tx.send((outcome, Instant::now()));
        });
    }
    wait_connecting(&client);
    std::thread::sleep(Duration::from_millis(200));
    let close_began = Instant::now();
    client.close();
    for _ in 0..4 {
        let (outcome, returned) = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("a request still waiting 10 s after close");
        let err = outcome.expect_err("closed");
        assert_eq!(err.status, Status::Closed, "{}", err.message);
        let after = returned.saturating_duration_since(close_began);
        assert!(
            after < Duration::from_secs(5),
            "returned {after:?} after close"
        );
    }
}

#[test]
fn a_lazy_http_client_opens_no_connection_before_its_first_request() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let accepts = Arc::new(AtomicUsize::new(0));
    {
        let accepts = accepts.clone();
        std::thread::spawn(move || loop {
            match listener.accept() {
                // Dropped at once: the request fails, having connected.
                Ok(_) => {
                    accepts.fetch_add(1, Ordering::SeqCst);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                Err(_) => return,
            }
        });
    }
    let client = Client::http(HttpConfig::new(url), lazy());
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        accepts.load(Ordering::SeqCst),
        0,
        "connected before any request"
    );

    let err = client
        .ping(&RequestOptions::with_timeout(Duration::from_secs(10)))
        .expect_err("the listener answers nothing");
    assert!(
        err.message.starts_with("lazy connect failed"),
        "{}",
        err.message
    );
    assert!(
        accepts.load(Ordering::SeqCst) >= 1,
        "the first request connected"
    );
}

/// Through the C API: `mcp_client_options_set_lazy_connect` and
/// `mcp_client_options_set_idle_shutdown_ms`.
mod c_api {
    use super::*;
    use mcpc::ffi::*;
    use std::ffi::{CStr, CString};
    use std::ptr::{null, null_mut};

    /// A stdio client of `argv` with lazy connect and, if not 0, idle shutdown.
    unsafe fn client(argv: &[&str], idle_ms: u64) -> *mut mcp_client {
        let options = mcp_client_options_new();
        assert_eq!(
            mcp_client_options_set_lazy_connect(options, true),
            mcp_status::Ok
        );
        assert_eq!(
            mcp_client_options_set_idle_shutdown_ms(options, idle_ms),
            mcp_status::Ok
        );
        let argv: Vec<CString> = argv.iter().map(|a| CString::new(*a).unwrap()).collect();
        let mut pointers: Vec<*const std::ffi::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
        pointers.push(null());
        let client = mcp_client_new_stdio(pointers.as_ptr(), options);
        mcp_client_options_free(options);
        assert!(!client.is_null());
        client
    }

    /// Pings; the status and message.
    unsafe fn ping(client: *mut mcp_client) -> (mcp_status, String) {
        let result = mcp_client_ping(client, null());
        let status = mcp_result_status(result);
        let message = mcp_result_message(result);
        let message = match message.is_null() {
            true => String::new(),
            false => CStr::from_ptr(message).to_string_lossy().into_owned(),
        };
        mcp_result_free(result);
        (status, message)
    }

    #[test]
    fn a_lazy_c_client_starts_its_server_on_the_first_request_and_again_after_idle_shutdown() {
        let marker = marker("lazy-c");
        let script = format!(
            "echo $$ >> '{}'; exec '{}'",
            marker.display(),
            SERVER.as_str()
        );
        unsafe {
            let client = client(&["/bin/sh", "-c", &script], 300);
            std::thread::sleep(Duration::from_millis(300));
            assert!(
                starts(&marker).is_empty(),
                "a server started before any request"
            );
            assert_eq!(ping(client).0, mcp_status::Ok);
            let first = starts(&marker);
            assert_eq!(first.len(), 1);

            let began = Instant::now();
            while process_exists(first[0]) {
                assert!(
                    began.elapsed() < Duration::from_secs(10),
                    "never stopped when idle"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            assert_eq!(
                mcp_client_connection_state(client),
                mcp_connection_state::NotConnected
            );
            assert_eq!(ping(client).0, mcp_status::Ok);
            let both = starts(&marker);
            assert_eq!(both.len(), 2, "the next request started a new server");
            assert_ne!(both[0], both[1]);
            mcp_client_free(client);
        }
    }

    #[test]
    fn a_lazy_c_client_whose_server_cannot_start_fails_the_request_with_the_connects_status() {
        unsafe {
            let client = client(&["/nonexistent/mcpc-no-such-server"], 0);
            let (status, message) = ping(client);
            assert_eq!(status, mcp_status::TransportError, "{message}");
            assert!(message.starts_with("lazy connect failed: "), "{message}");
            mcp_client_free(client);
            // NULL options are refused with a status, not a crash.
            assert_ne!(
                mcp_client_options_set_lazy_connect(null_mut(), true),
                mcp_status::Ok
            );
            assert_ne!(
                mcp_client_options_set_idle_shutdown_ms(null_mut(), 1),
                mcp_status::Ok
            );
        }
    }
}
