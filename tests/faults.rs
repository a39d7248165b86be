//! A server that misbehaves, over stdio: each fault gets its documented status within a wide
//! time bound, other calls on the same client are unaffected while the transport survives,
//! and nothing leaks (file descriptors, child processes).

mod common;

use common::*;
use mcpc::handlers::{Callbacks, LogMessage};
use mcpc::{ClientOptions, RequestOptions, Status};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn fault(kind: &str) -> Option<serde_json::Value> {
    Some(json!({ "kind": kind }))
}

#[test]
fn a_response_with_an_id_never_sent_is_dropped_and_others_go_on() {
    let log = log_path("wrong_id");
    let client = Arc::new(connect_logged(&log, &[]));
    let stuck = {
        let client = client.clone();
        std::thread::spawn(move || {
            client.call_tool(
                "fault",
                fault("wrong_id"),
                &RequestOptions::with_timeout(Duration::from_millis(500)),
            )
        })
    };
    // The stuck call is on the server's side before the next one starts.
    wait_for_log(&log, |lines| {
        lines
            .iter()
            .any(|l| is_method(l, "tools/call") && l["params"]["name"] == "fault")
    });
    let ok = client
        .call_tool(
            "echo",
            Some(json!({"text": "unaffected"})),
            &RequestOptions::default(),
        )
        .unwrap();
    assert_eq!(text(&ok), "unaffected");
    assert_eq!(stuck.join().unwrap().unwrap_err().status, Status::Timeout);
    assert_eq!(
        client.stats().unmatched_responses,
        1,
        "the stray answer went to nobody"
    );
}

#[test]
fn a_duplicate_answer_is_dropped() {
    let client = connect(&[]);
    let first = client
        .call_tool("fault", fault("duplicate"), &RequestOptions::default())
        .unwrap();
    assert_eq!(text(&first), "first");
    let next = client
        .call_tool(
            "echo",
            Some(json!({"text": "next"})),
            &RequestOptions::default(),
        )
        .unwrap();
    assert_eq!(text(&next), "next");
    // The duplicate may come after `next`'s answer, and a caller that reads for itself stops at
    // its own answer: it is dropped when the reader gets to it, never given to a call.
    let deadline = Instant::now() + Duration::from_secs(5);
    while client.stats().unmatched_responses == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(client.stats().unmatched_responses, 1);
}

#[test]
fn valid_json_that_is_not_json_rpc_is_skipped() {
    let client = connect(&[]);
    let ok = client
        .call_tool("fault", fault("not_jsonrpc"), &RequestOptions::default())
        .unwrap();
    assert_eq!(text(&ok), "after the odd line");
    let stats = client.stats();
    assert_eq!(stats.bad_frames, 1);
    assert!(stats.last_bad_frame.unwrap().contains("neither a request"));
}

#[test]
fn a_flood_of_notifications_is_delivered_without_stalling_calls() {
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    let options = ClientOptions {
        callbacks: Callbacks {
            on_message: Some(Arc::new(move |_: &LogMessage| {
                counter.fetch_add(1, Ordering::Relaxed);
            })),
            ..Callbacks::default()
        },
        ..ClientOptions::default()
    };
    let client = connect_with(config(&[]), options);
    let start = Instant::now();
    let args = Some(json!({"kind": "flood", "count": 20000}));
    let ok = client
        .call_tool("fault", args, &RequestOptions::default())
        .unwrap();
    assert_eq!(text(&ok), "flooded 20000");
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
    // The callback queue is bounded (1024): on a loaded machine some may be dropped, and
    // counted; none is lost without a trace.
    let accounted = || seen.load(Ordering::Relaxed) as u64 + client.stats().dropped_callbacks;
    let deadline = Instant::now() + Duration::from_secs(20);
    while accounted() < 20000 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        accounted(),
        20000,
        "every notification reached the callback or was counted as dropped"
    );
    assert!(
        seen.load(Ordering::Relaxed) >= 1024,
        "at least a full queue was delivered"
    );
}

#[test]
fn bytes_dripped_slowly_still_make_a_response() {
    let client = connect(&[]);
    let ok = client
        .call_tool("fault", fault("drip"), &RequestOptions::default())
        .unwrap();
    assert_eq!(text(&ok), "dripped");
}

#[test]
fn a_server_that_closes_stdout_but_stays_alive_fails_the_calls_at_once() {
    let client = connect(&[]);
    let pid = client.server_pid().unwrap();
    let start = Instant::now();
    let err = client
        .call_tool("fault", fault("close_stdout"), &RequestOptions::default())
        .unwrap_err();
    assert_eq!(err.status, Status::TransportError);
    assert!(err.message.contains("closed its stdout"), "{}", err.message);
    assert!(start.elapsed() < Duration::from_secs(2));
    assert_eq!(
        client.ping(&RequestOptions::default()).unwrap_err().status,
        Status::TransportError
    );
    let start = Instant::now();
    client.close();
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(!process_exists(pid));
}
