//! The README's promise that a cancelled worker returns at once, measured: 200 times, a worker
//! blocks in a call the server never answers, another thread cancels it, and the time from
//! `cancel()` to the worker's return is recorded. The bound is on the 99th percentile, wide
//! enough for a loaded 2-core machine. A test binary of its own, so no other test competes
//! for the cores while it measures.

mod common;

use common::*;
use mcpc::{CancellationToken, RequestOptions, Status};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

const CANCELS: usize = 200;
const P99_BOUND: Duration = Duration::from_millis(50);

#[test]
fn p99_of_200_cancels_of_a_blocked_call_is_under_50_ms() {
    let log = log_path("cancel_latency");
    let client = Arc::new(connect_logged(&log, &[]));
    // One worker thread for all the calls: each round it gets a token, makes the call, and
    // reports when the call returned.
    let (work_tx, work_rx) = mpsc::channel::<CancellationToken>();
    let (done_tx, done_rx) = mpsc::channel::<(Status, Instant)>();
    let worker = {
        let client = client.clone();
        std::thread::spawn(move || {
            for token in work_rx {
                let outcome =
                    client.call_tool("never", None, &RequestOptions::with_cancellation(&token));
                let returned = Instant::now();
                let status = outcome.map_or_else(|e| e.status, |_| Status::Ok);
                done_tx.send((status, returned)).unwrap();
            }
        })
    };
    let calls =
        |lines: &[serde_json::Value]| lines.iter().filter(|l| is_method(l, "tools/call")).count();
    let mut latencies = Vec::with_capacity(CANCELS);
    for round in 1..=CANCELS {
        let token = CancellationToken::new();
        work_tx.send(token.clone()).unwrap();
        // The call is at the server, so the worker is blocked waiting for its answer.
        let lines = wait_for_log(&log, |l| calls(l) >= round);
        assert_eq!(
            calls(&lines),
            round,
            "round {round}: the call reached the server"
        );
        let cancelled = Instant::now();
        assert!(token.cancel(Some("latency")));
        let (status, returned) = done_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(status, Status::Cancelled, "round {round}");
        latencies.push(returned.saturating_duration_since(cancelled));
    }
    drop(work_tx);
    worker.join().unwrap();
    latencies.sort();
    let at =
        |q: f64| latencies[((latencies.len() as f64 * q).ceil() as usize).min(latencies.len()) - 1];
    let (p50, p99, max) = (at(0.50), at(0.99), *latencies.last().unwrap());
    common::report_figure(&format!(
        "cancel latency: {CANCELS} cancels of a blocked stdio call, cancel() to the caller's return: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3,
        max.as_secs_f64() * 1e3
    ));
    eprintln!("p50 {p50:?} p99 {p99:?} max {max:?}");
    assert!(p99 < P99_BOUND, "p99 {p99:?} (p50 {p50:?}, max {max:?})");
}
