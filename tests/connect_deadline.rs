//! The connect timeout bounds the whole of connect (the auto mode's probe, a proxy tunnel, the
//! handshake) and a request's timeout bounds all its legs (input rounds): each is one deadline,
//! taken when the operation starts, with every leg getting what is left of it. Against servers
//! that accept and then say nothing, over stdio, plain HTTP and a CONNECT proxy.

mod common;

use common::*;
use mcpc::{Client, ClientOptions, ConnectMode, HttpConfig, RequestOptions, Status};
use serde_json::json;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const CONNECT_TIMEOUT: Duration = Duration::from_millis(1500);
/// Well under the auto mode's own probe timeout (5 s) plus the connect timeout: a wide margin
/// over 1.5 s against a loaded machine.
const BOUND: Duration = Duration::from_secs(4);
const MODES: [ConnectMode; 3] = [ConnectMode::Auto, ConnectMode::Legacy, ConnectMode::Modern];

fn options(mode: ConnectMode) -> ClientOptions {
    ClientOptions {
        mode,
        connect_timeout: CONNECT_TIMEOUT,
        ..ClientOptions::default()
    }
}

/// Connects and checks the outcome is TIMEOUT within the bound; returns how long it took.
fn times_out(what: &str, mode: ConnectMode, client: &Client) -> Duration {
    let start = Instant::now();
    let error = client.connect().expect_err("nothing answers");
    let took = start.elapsed();
    assert_eq!(error.status, Status::Timeout, "{what} {mode:?}: {error:?}");
    assert!(
        took < BOUND,
        "{what} {mode:?}: connect returned after {took:?} with a {CONNECT_TIMEOUT:?} connect timeout"
    );
    took
}

/// Keeps every socket it accepted open and silent until the test ends. With `tunnel`, it first
/// answers the CONNECT request head as a proxy that opened the tunnel would.
fn silent_listener(tunnel: bool) -> (u16, Arc<Mutex<Vec<TcpStream>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let held: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
    let keep = held.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let keep = keep.clone();
            std::thread::spawn(move || {
                if tunnel {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut line = String::new();
                    while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                        if line == "\r\n" {
                            break;
                        }
                        line.clear();
                    }
                    let _ = (&stream).write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
                }
                keep.lock().unwrap().push(stream);
            });
        }
    });
    (port, held)
}

#[test]
fn connect_to_a_silent_stdio_server_times_out_within_the_connect_timeout() {
    for mode in MODES {
        // Reads everything, answers nothing (the shell keeps stdout open).
        let config = mcpc::StdioConfig::new(["sh", "-c", "cat >/dev/null"]);
        let client = Client::stdio(config, options(mode));
        let took = times_out("stdio", mode, &client);
        report_figure(&format!(
            "connect_deadline: a silent stdio server, {mode:?} mode, 1500 ms connect timeout: TIMEOUT after {took:?}"
        ));
    }
}

#[test]
fn connect_to_a_silent_http_server_times_out_within_the_connect_timeout() {
    let (port, _held) = silent_listener(false);
    for mode in MODES {
        let config = HttpConfig::new(format!("http://127.0.0.1:{port}/mcp"));
        let client = Client::http(config, options(mode));
        let took = times_out("http", mode, &client);
        report_figure(&format!(
            "connect_deadline: a silent HTTP server, {mode:?} mode, 1500 ms connect timeout: TIMEOUT after {took:?}"
        ));
    }
}

#[test]
fn connect_through_a_proxy_that_opens_the_tunnel_and_says_nothing_times_out_within_the_connect_timeout(
) {
    let (proxy, _held) = silent_listener(true);
    for mode in MODES {
        // Nothing listens there: only the proxy is ever reached.
        let mut config = HttpConfig::new("http://127.0.0.1:9/mcp");
        config
            .set_proxy(Some(&format!("http://127.0.0.1:{proxy}")))
            .unwrap();
        let client = Client::http(config, options(mode));
        let took = times_out("proxy", mode, &client);
        report_figure(&format!(
            "connect_deadline: a proxy that opens the tunnel and says nothing, {mode:?} mode, 1500 ms connect timeout: TIMEOUT after {took:?}"
        ));
    }
}

/// A call whose server sheds load without end (input_required with no input requests, each
/// leg answered at once, 250 ms apart) ends with TIMEOUT at its timeout, not at its timeout per
/// leg (40 rounds would take about 10 s).
#[test]
fn a_request_whose_input_rounds_go_on_forever_times_out_at_its_timeout() {
    let options = ClientOptions {
        input_required_max_rounds: 40,
        ..ClientOptions::default()
    };
    let client = connect_with(config(&["--modern"]), options);
    assert!(client.is_modern());
    let timeout = Duration::from_millis(1500);
    let start = Instant::now();
    let error = client
        .call_tool(
            "state_only",
            Some(json!({ "legs": 1_000_000 })),
            &RequestOptions::with_timeout(timeout),
        )
        .expect_err("the legs never end");
    let took = start.elapsed();
    assert_eq!(error.status, Status::Timeout, "{error:?}");
    assert_eq!(
        error.cancel_reason.as_deref(),
        Some("timed out after 1500 ms")
    );
    assert!(
        took < Duration::from_secs(4),
        "returned after {took:?} with a {timeout:?} timeout"
    );
    report_figure(&format!(
        "connect_deadline: endless input rounds with a 1500 ms request timeout: TIMEOUT after {took:?}"
    ));
}
