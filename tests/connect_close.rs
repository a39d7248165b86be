//! A close from another thread ends a connect in progress at any point (while the server is
//! being started or the connection opened, during the handshake) with CLOSED at once, over
//! stdio and HTTP, against servers that never answer the handshake.

mod common;

use common::*;
use mcpc::{Client, ClientOptions, HttpConfig, Status};
use std::net::TcpListener;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// When close is called after connect started: from at once (the server or connection is
/// still being set up) to well into the handshake.
const CLOSE_AFTER_US: [u64; 12] = [
    0, 50, 200, 500, 1_000, 2_000, 3_000, 5_000, 10_000, 20_000, 50_000, 300_000,
];

/// What one race gave: connect's outcome, how long after close began connect returned, and
/// how long close took.
struct Race {
    outcome: mcpc::Result<serde_json::Value>,
    connect_after_close: Duration,
    close_took: Duration,
}

/// Starts connect on a thread, closes after `delay`, and waits (at most 10 s) for connect.
fn race(client: Client, delay: Duration) -> Race {
    let client = Arc::new(client);
    let (tx, rx) = mpsc::channel();
    {
        let client = client.clone();
        std::thread::spawn(move || {
            let outcome = client.connect();
            let _ = tx.send((outcome, Instant::now()));
        });
    }
    std::thread::sleep(delay);
    let close_started = Instant::now();
    client.close();
    let close_took = close_started.elapsed();
    let (outcome, returned) = rx
        .recv_timeout(Duration::from_secs(10))
        .unwrap_or_else(|_| panic!("close after {delay:?}: connect still running 10 s later"));
    Race {
        outcome,
        connect_after_close: returned.saturating_duration_since(close_started),
        close_took,
    }
}

fn check(kind: &str, delay: Duration, race: Race, close_limit: Duration) -> Duration {
    let err = race
        .outcome
        .expect_err("a closed client's connect cannot succeed");
    assert_eq!(
        err.status,
        Status::Closed,
        "{kind}, close after {delay:?}: {}",
        err.message
    );
    // Well under the 2 s a server that reads nothing gets at close: connect must not wait for
    // the server's exit (close does), only for close to begin.
    assert!(
        race.connect_after_close < Duration::from_secs(1),
        "{kind}, close after {delay:?}: connect returned {:?} after close",
        race.connect_after_close
    );
    assert!(
        race.close_took < close_limit,
        "{kind}, close after {delay:?}: close took {:?}",
        race.close_took
    );
    race.connect_after_close
}

#[test]
fn close_ends_a_stdio_connect_at_any_point() {
    let mut worst = Duration::ZERO;
    for us in CLOSE_AFTER_US {
        let delay = Duration::from_micros(us);
        // Reads initialize and never answers it; exits as soon as stdin closes.
        let client = Client::stdio(config(&["--silent-initialize"]), ClientOptions::default());
        let took = check("stdio", delay, race(client, delay), Duration::from_secs(2));
        worst = worst.max(took);
    }
    // A server still starting up, reading nothing yet (close then needs SIGTERM, after 2 s).
    let client = Client::stdio(
        config(&["--slow-start-ms", "60000"]),
        ClientOptions::default(),
    );
    let delay = Duration::from_millis(300);
    let took = check(
        "stdio slow start",
        delay,
        race(client, delay),
        Duration::from_secs(6),
    );
    worst = worst.max(took);
    report_figure(&format!(
        "close during a stdio connect: connect returned CLOSED at most {} ms after close began",
        worst.as_millis()
    ));
}

#[test]
fn close_ends_an_http_connect_at_any_point() {
    // Accepts every connection and never answers on any.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.extend(stream.ok());
        }
    });
    let mut worst = Duration::ZERO;
    for us in CLOSE_AFTER_US {
        let delay = Duration::from_micros(us);
        let client = Client::http(HttpConfig::new(url.clone()), ClientOptions::default());
        let took = check("http", delay, race(client, delay), Duration::from_secs(2));
        worst = worst.max(took);
    }
    report_figure(&format!(
        "close during an HTTP connect: connect returned CLOSED at most {} ms after close began",
        worst.as_millis()
    ));
}
