//! Windows: the server and everything it starts run in a job object, so close ends the whole
//! tree; and the server's exit is seen through its process handle even while a process it
//! started keeps stdout open (stdout then never ends).
#![cfg(windows)]

mod common;

use common::*;
use mcpc::{Client, RequestOptions, Status};
use serde_json::json;
use std::time::{Duration, Instant};

/// Has the server start a child of its own that holds the server's stdout and stderr.
fn start_descendant(client: &Client) -> u32 {
    let result = client
        .call_tool("detach_child", Some(json!({})), &RequestOptions::default())
        .unwrap();
    let pid = text(&result).parse().expect("a pid");
    assert!(process_exists(pid));
    pid
}

#[test]
fn close_ends_the_servers_whole_process_tree() {
    let client = connect(&[]);
    let server = client.server_pid().unwrap();
    let descendant = start_descendant(&client);
    let start = Instant::now();
    client.close();
    assert!(start.elapsed() < Duration::from_secs(5), "close is bounded");
    assert!(!process_exists(server), "the server is gone");
    assert!(
        !process_exists(descendant),
        "what the server started is gone too"
    );
}

#[test]
fn the_servers_exit_fails_pending_calls_while_a_descendant_holds_stdout() {
    let client = connect(&[]);
    let descendant = start_descendant(&client);
    let start = Instant::now();
    // The timeout only bounds the test: a reader that missed the exit would wait for ever.
    let bounded = RequestOptions {
        timeout: Some(Duration::from_secs(20)),
        ..RequestOptions::default()
    };
    let error = client
        .call_tool("crash", Some(json!({})), &bounded)
        .unwrap_err();
    assert_eq!(error.status, Status::TransportError, "{error:?}");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "the exit is seen though stdout stays open: {:?}",
        start.elapsed()
    );
    assert!(
        process_exists(descendant),
        "the descendant still holds stdout"
    );
    client.close();
    assert!(!process_exists(descendant), "close ends it");
}
