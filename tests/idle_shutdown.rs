//! Idle shutdown (`ClientOptions::idle_shutdown`): a stdio server with no request for the
//! idle time is stopped, and the next request starts a new one; a request in flight or an
//! open listen keeps it running. The servers are started through `sh`, which appends its pid
//! to a marker file first (then `exec`s the server under that pid), so the test sees each
//! start from outside the library.
#![cfg(unix)]

mod common;

use common::*;
use mcpc::handlers::Callbacks;
use mcpc::RequestOptions;
use mcpc::{CancellationToken, Client, ClientOptions, ConnectionState, Listen, LogLevel};
use mcpc::{Status, StdioConfig};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const IDLE: Duration = Duration::from_millis(300);

fn idle_after(idle: Duration) -> ClientOptions {
    ClientOptions {
        idle_shutdown: Some(idle),
        ..ClientOptions::default()
    }
}

fn marker(name: &str) -> PathBuf {
    log_path(&format!("{name}-starts"))
}

/// The test server, its pid appended to `marker` as it starts.
fn counted_server(marker: &Path) -> StdioConfig {
    let script = format!(
        "echo $$ >> '{}'; exec '{}'",
        marker.display(),
        SERVER.as_str()
    );
    StdioConfig::new(["/bin/sh", "-c", &script])
}

fn starts(marker: &Path) -> Vec<u32> {
    std::fs::read_to_string(marker)
        .unwrap_or_default()
        .lines()
        .map(|pid| pid.trim().parse().expect("a pid"))
        .collect()
}

fn none() -> RequestOptions {
    RequestOptions::default()
}

#[test]
fn an_idle_server_is_stopped_and_the_next_request_starts_a_new_one() {
    let marker = marker("idle-restart");
    let logged = Arc::new(Mutex::new(Vec::<String>::new()));
    let keep = logged.clone();
    let options = ClientOptions {
        callbacks: Callbacks {
            on_log: Some(Arc::new(move |_: LogLevel, message: &str| {
                keep.lock().unwrap().push(message.to_owned());
            })),
            ..Callbacks::default()
        },
        ..idle_after(IDLE)
    };
    let client = Client::stdio(counted_server(&marker), options);
    client.connect().expect("connect");
    client.ping(&none()).expect("ping");
    let first = starts(&marker);
    assert_eq!(first.len(), 1);
    assert!(
        gone_within(first[0], Instant::now(), Duration::from_secs(10)).is_some(),
        "the idle server still runs 10 s later"
    );
    assert_eq!(client.state(), ConnectionState::NotConnected);
    assert!(
        logged
            .lock()
            .unwrap()
            .iter()
            .any(|m| m.contains("no request for 300 ms: stopping it")),
        "the log says why the server stopped: {:?}",
        logged.lock().unwrap()
    );

    let result = client
        .call_tool("echo", Some(json!({ "text": "again" })), &none())
        .expect("the next request starts the server again");
    assert_eq!(text(&result), "again");
    let both = starts(&marker);
    assert_eq!(both.len(), 2, "a second server");
    assert_ne!(both[0], both[1]);
    assert!(process_exists(both[1]), "the new server serves");
    assert_eq!(client.server_pid(), Some(both[1]));
    assert_eq!(client.state(), ConnectionState::Connected);
    client.close();
    assert!(!process_exists(both[1]), "close stops the new server");
}

#[test]
fn a_request_in_flight_keeps_the_server_running() {
    let marker = marker("idle-in-flight");
    let client = Client::stdio(counted_server(&marker), idle_after(IDLE));
    client.connect().expect("connect");
    // Five idle times long.
    let result = client
        .call_tool(
            "echo",
            Some(json!({ "text": "slow", "delay_ms": 1500 })),
            &none(),
        )
        .expect("a slow call is not cut short by idle shutdown");
    assert_eq!(text(&result), "slow");
    assert_eq!(starts(&marker).len(), 1, "the server was never restarted");
}

#[test]
fn an_open_listen_keeps_the_server_running_and_once_it_ends_the_server_stops() {
    let marker = marker("idle-listen");
    let client = Arc::new(Client::stdio(counted_server(&marker), idle_after(IDLE)));
    client.connect().expect("connect");
    let pid = starts(&marker)[0];
    let token = CancellationToken::new();
    let listening = {
        let (client, token) = (client.clone(), token.clone());
        std::thread::spawn(move || {
            let listen = Listen {
                tools_list_changed: true,
                ..Listen::default()
            };
            client.listen(&listen, &RequestOptions::with_cancellation(&token))
        })
    };
    std::thread::sleep(IDLE * 6);
    assert!(
        process_exists(pid),
        "the server was stopped under an open listen"
    );
    assert_eq!(client.state(), ConnectionState::Connected);

    token.cancel(None);
    let err = listening.join().unwrap().expect_err("cancelled");
    assert_eq!(err.status, Status::Cancelled, "{}", err.message);
    assert!(
        gone_within(pid, Instant::now(), Duration::from_secs(10)).is_some(),
        "the server still runs 10 s after the listen ended"
    );
    assert_eq!(starts(&marker).len(), 1);
}

/// A server that ignores its stdin's end and SIGTERM is stopped for idleness in the
/// background: nothing of the library waits the two graces for its SIGKILL (the stop's thread
/// is gone at once), the next request starts a new server meanwhile, and the old one is killed
/// and reaped all the same.
#[cfg(target_os = "linux")]
#[test]
fn a_stubborn_idle_server_is_ended_in_the_background() {
    use common::thread_names::threads_named_any;
    let marker = marker("idle-stubborn");
    let script = format!(
        "echo $$ >> '{}'; exec '{}' --ignore-stdin-eof --ignore-sigterm",
        marker.display(),
        SERVER.as_str()
    );
    let client = Client::stdio(
        StdioConfig::new(["/bin/sh", "-c", &script]),
        idle_after(IDLE),
    );
    client.connect().expect("connect");
    let began = Instant::now();
    while client.state() != ConnectionState::NotConnected
        && began.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        client.state(),
        ConnectionState::NotConnected,
        "stopped for idleness"
    );
    let stopped_at = Instant::now();
    let first = starts(&marker)[0];
    // Well within the first grace: the stop's work is done, the server is not.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        threads_named_any(&["mcpc-idle-stop"]),
        0,
        "a thread still waits for the stopped server"
    );
    assert!(
        process_exists(first),
        "the server ignores its stdin's end for a grace"
    );
    client
        .ping(&none())
        .expect("the next request starts a new server");
    assert_eq!(starts(&marker).len(), 2);
    assert!(
        gone_within(first, Instant::now(), Duration::from_secs(15)).is_some(),
        "the stopped server is still there (or unreaped)"
    );
    assert!(
        stopped_at.elapsed() >= Duration::from_millis(3500),
        "killed before its two graces"
    );
    client.close();
}
