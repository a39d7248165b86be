//! The discovery probe (`server/discover`, sent first in auto mode) is never cancelled on the
//! wire, like `initialize`: not when it times out and the client falls back to the handshake,
//! not when close ends the connect while the probe waits. The server's own log is the evidence.

mod common;

use common::*;
use mcpc::{Client, ClientOptions, ConnectMode, Status};
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn auto(discover_timeout: Duration) -> ClientOptions {
    ClientOptions {
        mode: ConnectMode::Auto,
        discover_timeout,
        ..ClientOptions::default()
    }
}

fn probe_id(lines: &[Value]) -> Value {
    lines
        .iter()
        .find(|l| is_method(l, "server/discover"))
        .map(|l| l["id"].clone())
        .expect("the probe reached the server")
}

#[test]
fn a_probe_that_times_out_is_not_cancelled_on_the_wire() {
    let log = log_path("probe_timeout");
    let mut args = vec!["--log", log.to_str().unwrap()];
    args.extend(["--modern", "--discover", "silent"]);
    let client = connect_with(config(&args), auto(Duration::from_millis(200)));
    assert!(!client.is_modern(), "fell back to the handshake");
    // The barrier: a ping answered, so everything the client wrote before it is in the log.
    let lines = log_after_ping(&client, &log);
    let id = probe_id(&lines);
    assert!(
        cancels(&lines).is_empty(),
        "the probe {id} (or anything) was cancelled: {lines:?}"
    );
}

#[test]
fn close_during_the_probe_sends_no_cancel_for_it() {
    let log = log_path("probe_close");
    let mut args = vec!["--log", log.to_str().unwrap()];
    args.extend(["--modern", "--discover", "silent"]);
    let client = Arc::new(Client::stdio(config(&args), auto(Duration::from_secs(30))));
    let connecting = {
        let client = client.clone();
        std::thread::spawn(move || client.connect())
    };
    // The probe is at the server, unanswered: close now.
    let lines = wait_for_log(&log, |l| l.iter().any(|x| is_method(x, "server/discover")));
    let id = probe_id(&lines);
    let start = Instant::now();
    client.close();
    let outcome = connecting.join().unwrap();
    assert_eq!(outcome.unwrap_err().status, Status::Closed);
    assert!(start.elapsed() < Duration::from_secs(5));
    // Close ends the server with stdin EOF first: it has read all the client wrote, and the
    // log is complete once the process is gone.
    let lines = read_log(&log);
    assert!(
        cancels(&lines).is_empty(),
        "the probe {id} was cancelled: {lines:?}"
    );
}
