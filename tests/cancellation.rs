//! The cancellation invariants (DESIGN.md 1-7, 9, 10) and the Ruby client's cancellation tests,
//! against our test server over stdio and against custom transports written in Rust.

mod common;

use common::*;
use mcpc::{CancellationToken, ClientOptions, RequestOptions, Status};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

fn cancel_after(
    token: &CancellationToken,
    after: Duration,
    reason: Option<&'static str>,
) -> thread::JoinHandle<bool> {
    let token = token.clone();
    thread::spawn(move || {
        thread::sleep(after);
        token.cancel(reason)
    })
}

#[test]
fn pre_cancelled_token_sends_nothing() {
    let log = log_path("precancel");
    let client = connect_logged(&log, &[]);
    let token = CancellationToken::new();
    assert!(token.cancel(Some("early")));
    let start = Instant::now();
    let err = client
        .call_tool(
            "slow",
            Some(json!({"ms": 5000})),
            &RequestOptions::with_cancellation(&token),
        )
        .unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(1));
    assert_eq!(err.status, Status::Cancelled);
    assert_eq!(
        err.request_id, None,
        "no request was sent, so there is no id"
    );
    assert_eq!(err.cancel_reason.as_deref(), Some("early"));
    // A later call is read after anything the first could have sent.
    client.ping(&RequestOptions::default()).unwrap();
    let lines = wait_for_log(&log, |l| l.iter().any(|x| is_method(x, "ping")));
    assert!(
        !lines.iter().any(|l| is_method(l, "tools/call")),
        "no tools/call may be sent: {lines:?}"
    );
    assert!(
        cancels(&lines).is_empty(),
        "no cancel may be sent: {lines:?}"
    );
}

#[test]
fn mid_flight_cancel_wakes_the_caller_and_notifies_once_after_the_request() {
    let log = log_path("midflight");
    let client = connect_logged(&log, &[]);
    let token = CancellationToken::new();
    let canceller = cancel_after(
        &token,
        Duration::from_millis(150),
        Some("user pressed cancel"),
    );
    let start = Instant::now();
    let err = client
        .call_tool(
            "slow",
            Some(json!({"ms": 10000})),
            &RequestOptions::with_cancellation(&token),
        )
        .unwrap_err();
    let waited = start.elapsed();
    assert!(canceller.join().unwrap(), "the first cancel returns true");
    assert!(
        !token.cancel(Some("again")),
        "a second cancel returns false"
    );
    assert_eq!(err.status, Status::Cancelled);
    assert_eq!(err.cancel_reason.as_deref(), Some("user pressed cancel"));
    assert!(
        waited < Duration::from_secs(2),
        "woken at once, not after the tool: {waited:?}"
    );
    let id = err.request_id.expect("the request was sent");

    let lines = wait_for_log(&log, |l| !cancels(l).is_empty());
    let cancel_lines = cancels(&lines);
    assert_eq!(cancel_lines.len(), 1, "{lines:?}");
    assert_eq!(
        cancel_lines[0]["params"],
        json!({"requestId": id, "reason": "user pressed cancel"})
    );
    let request_at = request_index(&lines, id).expect("request logged");
    let cancel_at = lines
        .iter()
        .position(|l| is_method(l, "notifications/cancelled"))
        .unwrap();
    assert!(
        request_at < cancel_at,
        "the request line comes before its cancel line"
    );

    // The connection is still good for the next call.
    let ok = client
        .call_tool(
            "echo",
            Some(json!({"text": "after"})),
            &RequestOptions::default(),
        )
        .unwrap();
    assert_eq!(text(&ok), "after");
}

#[test]
fn cancel_without_reason_sends_no_reason_key() {
    let log = log_path("noreason");
    let client = connect_logged(&log, &[]);
    let token = CancellationToken::new();
    let canceller = cancel_after(&token, Duration::from_millis(100), None);
    let err = client
        .call_tool("never", None, &RequestOptions::with_cancellation(&token))
        .unwrap_err();
    canceller.join().unwrap();
    assert_eq!((err.status, err.cancel_reason), (Status::Cancelled, None));
    let lines = wait_for_log(&log, |l| !cancels(l).is_empty());
    assert_eq!(
        cancels(&lines)[0]["params"],
        json!({"requestId": err.request_id.unwrap()})
    );
}

#[test]
fn late_cancel_after_the_response_sends_nothing() {
    let log = log_path("latecancel");
    let client = connect_logged(&log, &[]);
    let token = CancellationToken::new();
    let opts = RequestOptions::with_cancellation(&token);
    let ok = client
        .call_tool("echo", Some(json!({"text": "done"})), &opts)
        .unwrap();
    assert_eq!(text(&ok), "done");
    assert!(
        token.cancel(Some("too late")),
        "still the token's first cancel"
    );
    let lines = log_after_ping(&client, &log);
    assert!(cancels(&lines).is_empty(), "{lines:?}");
}

#[test]
fn timeout_is_a_cancel_with_a_reason() {
    let log = log_path("timeout");
    let client = connect_logged(&log, &[]);
    let start = Instant::now();
    let err = client
        .call_tool(
            "slow",
            Some(json!({"ms": 5000})),
            &RequestOptions::with_timeout(Duration::from_millis(200)),
        )
        .unwrap_err();
    let waited = start.elapsed();
    assert_eq!(err.status, Status::Timeout);
    assert!(
        waited >= Duration::from_millis(200) && waited < Duration::from_secs(2),
        "{waited:?}"
    );
    assert_eq!(err.cancel_reason.as_deref(), Some("timed out after 200 ms"));
    let lines = wait_for_log(&log, |l| !cancels(l).is_empty());
    let cancel_lines = cancels(&lines);
    assert_eq!(cancel_lines.len(), 1);
    assert_eq!(
        cancel_lines[0]["params"]["requestId"],
        json!(err.request_id.unwrap())
    );
    assert_eq!(
        cancel_lines[0]["params"]["reason"],
        "timed out after 200 ms"
    );
}

#[test]
fn client_default_timeout_applies_and_a_request_can_lift_it() {
    let options = ClientOptions {
        timeout: Some(Duration::from_millis(100)),
        ..ClientOptions::default()
    };
    let client = connect_with(config(&[]), options);
    let err = client
        .call_tool(
            "slow",
            Some(json!({"ms": 3000})),
            &RequestOptions::default(),
        )
        .unwrap_err();
    assert_eq!(err.status, Status::Timeout);
    let no_timeout = RequestOptions::with_timeout(Duration::ZERO);
    let ok = client
        .call_tool("slow", Some(json!({"ms": 300})), &no_timeout)
        .unwrap();
    assert_eq!(text(&ok), "slept 300 ms");
}

#[test]
fn one_token_serves_every_page_and_stops_the_walk() {
    let log = log_path("pages");
    // On a fast machine 1,000 pages (the default limit) take less than the 100 ms before the
    // cancel; the walk must be ended by the cancel (a limit that high still ends a walk the
    // cancel missed, as a failure rather than a hang).
    let options = ClientOptions {
        max_pages: 1_000_000,
        ..ClientOptions::default()
    };
    let log_arg = log.to_str().unwrap();
    let args = ["--log", log_arg, "--endless-pages", "--page-size", "1"];
    let client = connect_with(config(&args), options);
    let token = CancellationToken::new();
    let canceller = cancel_after(&token, Duration::from_millis(100), Some("stop paging"));
    let err = client
        .tools(&RequestOptions::with_cancellation(&token))
        .unwrap_err();
    canceller.join().unwrap();
    assert_eq!(err.status, Status::Cancelled);
    // After the cancel no more pages are requested: two pings later, the count is the same.
    let pages_then = log_after_ping(&client, &log)
        .iter()
        .filter(|l| is_method(l, "tools/list"))
        .count();
    let pages_later = log_after_ping(&client, &log)
        .iter()
        .filter(|l| is_method(l, "tools/list"))
        .count();
    assert!(
        pages_then > 1,
        "several pages were fetched before the cancel"
    );
    assert_eq!(pages_then, pages_later);
    assert!(
        cancels(&read_log(&log)).len() <= 1,
        "at most the in-flight page is cancelled"
    );
}

#[test]
fn one_token_cancels_many_concurrent_calls() {
    let log = log_path("manycalls");
    let client = Arc::new(connect_logged(&log, &[]));
    let token = CancellationToken::new();
    let callers: Vec<_> = (0..4)
        .map(|_| {
            let (client, token) = (client.clone(), token.clone());
            thread::spawn(move || {
                client.call_tool("never", None, &RequestOptions::with_cancellation(&token))
            })
        })
        .collect();
    // The four calls are at the server: the cancel races nothing.
    let sent = |l: &[serde_json::Value]| l.iter().filter(|x| is_method(x, "tools/call")).count();
    let lines = wait_for_log(&log, |l| sent(l) >= 4);
    assert_eq!(sent(&lines), 4, "the four calls reached the server");
    assert!(token.cancel(Some("all")));
    let ids: Vec<i64> = callers
        .into_iter()
        .map(|c| {
            let err = c.join().unwrap().unwrap_err();
            assert_eq!(err.status, Status::Cancelled);
            err.request_id.unwrap()
        })
        .collect();
    let lines = wait_for_log(&log, |l| cancels(l).len() >= 4);
    let mut cancelled: Vec<i64> = cancels(&lines)
        .iter()
        .map(|c| c["params"]["requestId"].as_i64().unwrap())
        .collect();
    let mut ids_sorted = ids.clone();
    cancelled.sort();
    ids_sorted.sort();
    assert_eq!(
        cancelled, ids_sorted,
        "exactly one notice per cancelled request"
    );
}

#[test]
fn close_ends_pending_calls_with_closed_and_leaves_no_child() {
    let log = log_path("close_pending");
    let client = Arc::new(connect_logged(&log, &[]));
    let pid = client.server_pid().unwrap();
    assert!(process_exists(pid));
    let caller = {
        let client = client.clone();
        thread::spawn(move || {
            let start = Instant::now();
            (
                client.call_tool("never", None, &RequestOptions::default()),
                start.elapsed(),
            )
        })
    };
    // The call is pending at the server when close starts.
    let lines = wait_for_log(&log, |l| l.iter().any(|x| is_method(x, "tools/call")));
    assert!(lines.iter().any(|x| is_method(x, "tools/call")));
    let close_started = Instant::now();
    client.close();
    let (outcome, _) = caller.join().unwrap();
    assert_eq!(outcome.unwrap_err().status, Status::Closed);
    assert!(
        close_started.elapsed() < Duration::from_secs(3),
        "the server exits on stdin EOF"
    );
    assert!(
        !process_exists(pid),
        "the server process is gone after close"
    );
    let after = client.ping(&RequestOptions::default()).unwrap_err();
    assert_eq!(after.status, Status::Closed);
    assert_eq!(client.connect().unwrap_err().status, Status::Closed);
    client.close(); // twice is fine
}

// Unix: a server that ignores stdin's end gets SIGTERM, then SIGKILL. Windows has no SIGTERM
// for a console-less server: its job is ended after the one grace period (the test below).
#[cfg(unix)]
#[test]
fn close_escalates_to_sigterm_then_sigkill() {
    for (args, at_least) in [
        (vec!["--ignore-stdin-eof"], Duration::from_millis(1900)),
        (
            vec!["--ignore-stdin-eof", "--ignore-sigterm"],
            Duration::from_millis(3900),
        ),
    ] {
        let client = connect(&args);
        let pid = client.server_pid().unwrap();
        let start = Instant::now();
        client.close();
        let took = start.elapsed();
        assert!(
            took >= at_least && took < at_least + Duration::from_secs(3),
            "{args:?}: {took:?}"
        );
        assert!(!process_exists(pid), "{args:?}: the server is gone");
    }
}

#[cfg(windows)]
#[test]
fn close_ends_the_server_after_one_grace_period_on_windows() {
    let client = connect(&["--ignore-stdin-eof", "--ignore-sigterm"]);
    let pid = client.server_pid().unwrap();
    let start = Instant::now();
    client.close();
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert!(!process_exists(pid), "the server is gone");
}

#[test]
fn server_crash_ends_pending_calls_with_transport_error_at_once() {
    let log = log_path("crash_pending");
    let client = Arc::new(connect_logged(&log, &[]));
    let waiting = {
        let client = client.clone();
        thread::spawn(move || client.call_tool("never", None, &RequestOptions::default()))
    };
    // The first call is pending at the server when it crashes.
    let lines = wait_for_log(&log, |l| l.iter().any(|x| is_method(x, "tools/call")));
    assert!(lines.iter().any(|x| is_method(x, "tools/call")));
    let start = Instant::now();
    let err = client
        .call_tool("crash", None, &RequestOptions::default())
        .unwrap_err();
    assert_eq!(err.status, Status::TransportError);
    assert!(err.message.contains("exit"), "{}", err.message);
    assert!(start.elapsed() < Duration::from_secs(2));
    assert_eq!(
        waiting.join().unwrap().unwrap_err().status,
        Status::TransportError
    );
    assert_eq!(
        client.ping(&RequestOptions::default()).unwrap_err().status,
        Status::TransportError
    );
}

#[test]
fn eight_threads_random_cancels_every_call_has_exactly_one_right_outcome() {
    let log = log_path("stress");
    let client = Arc::new(connect_logged(&log, &[]));
    let sent_cancels = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let (client, sent_cancels) = (client.clone(), sent_cancels.clone());
            thread::spawn(move || {
                let mut seed = 0x9E37_79B9_7F4A_7C15u64 ^ (t as u64 + 1);
                let mut next = move || {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed
                };
                let (mut ok, mut cancelled) = (0, 0);
                for i in 0..200 {
                    let payload = format!("t{t}-c{i}");
                    let token = CancellationToken::new();
                    let delay_ms = next() % 4;
                    let cancel_in = next() % 3000;
                    let canceller = (next() % 2 == 0).then(|| {
                        let token = token.clone();
                        thread::spawn(move || {
                            thread::sleep(Duration::from_micros(cancel_in));
                            token.cancel(Some("stress"));
                        })
                    });
                    let args = json!({"text": payload, "delay_ms": delay_ms});
                    let outcome = client.call_tool(
                        "echo",
                        Some(args),
                        &RequestOptions::with_cancellation(&token),
                    );
                    match outcome {
                        Ok(result) => {
                            assert_eq!(
                                text(&result),
                                payload,
                                "a response was delivered to the wrong call"
                            );
                            ok += 1;
                        }
                        Err(e) if e.status == Status::Cancelled => {
                            if e.request_id.is_some() {
                                sent_cancels.fetch_add(1, Ordering::SeqCst);
                            }
                            cancelled += 1;
                        }
                        Err(e) => panic!("unexpected outcome {e}"),
                    }
                    if let Some(c) = canceller {
                        c.join().unwrap();
                    }
                }
                (ok, cancelled)
            })
        })
        .collect();
    let (mut ok, mut cancelled) = (0, 0);
    for t in threads {
        let (o, c) = t.join().unwrap();
        ok += o;
        cancelled += c;
    }
    assert_eq!(ok + cancelled, 1600);
    eprintln!("ok={ok} cancelled={cancelled} stats={:?}", client.stats());
    assert!(
        ok > 100 && cancelled > 10,
        "both outcomes happen: ok={ok} cancelled={cancelled}"
    );
    let expected = sent_cancels.load(Ordering::SeqCst);
    let lines = wait_for_log(&log, |l| cancels(l).len() >= expected);
    let lines_after = log_after_ping(&client, &log);
    assert_eq!(
        cancels(&lines).len(),
        expected,
        "one notice per cancel that won after sending"
    );
    assert_eq!(cancels(&lines_after).len(), expected, "and never more");
    // Each notice names a request that was sent before it.
    for (at, line) in lines_after.iter().enumerate() {
        if is_method(line, "notifications/cancelled") {
            let id = line["params"]["requestId"].as_i64().unwrap();
            assert!(
                request_index(&lines_after, id).is_some_and(|r| r < at),
                "notice {id} before its request"
            );
        }
    }
}
