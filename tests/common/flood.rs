//! Watching the test process's memory while a server floods a client. Each flood test is a test
//! binary of its own, so that no other test's allocations move the figures.

use mcpc::{Client, RequestOptions};
use std::time::{Duration, Instant};

/// How long each flood lasts while the client sits idle.
pub const FLOOD: Duration = Duration::from_secs(10);
/// The most the process may grow over the flood (issue 13, item 9).
pub const GROWTH_BOUND_KIB: u64 = 64 * 1024;
/// The longest close may take once the flood has run.
pub const CLOSE_BOUND: Duration = Duration::from_secs(5);

/// A field of /proc/self/status, in KiB (`VmRSS`, `VmHWM`).
pub fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"));
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Lets the flood run for `FLOOD` with the client idle, sampling the resident size. Fails at
/// once when it grows past the bound (so a failing run cannot eat the machine: the client is
/// leaked rather than closed, since closing it may take long, and the process ends with the
/// failure). Then checks the client still answers, closes it within `CLOSE_BOUND`, and returns
/// (peak growth in KiB, close time).
pub fn survive(name: &str, client: Client, baseline_kib: u64) -> (u64, Duration) {
    let start = Instant::now();
    let mut peak = 0;
    while start.elapsed() < FLOOD {
        let growth = status_kib("VmRSS").saturating_sub(baseline_kib);
        peak = peak.max(growth);
        if growth > GROWTH_BOUND_KIB {
            std::mem::forget(client);
            panic!(
                "{name}: the client grew by {} MiB after {:?} of flood (bound {} MiB)",
                growth / 1024,
                start.elapsed(),
                GROWTH_BOUND_KIB / 1024
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // The high-water mark also catches a peak between two samples.
    peak = peak.max(status_kib("VmHWM").saturating_sub(baseline_kib));
    // A barrier: the client still gets its own answers through the flood.
    let alive = client.ping(&RequestOptions::with_timeout(Duration::from_secs(20)));
    let stats = client.stats();
    // Closed on another thread, so that a close that takes too long fails the test at the
    // bound instead of holding it up.
    let started = Instant::now();
    let (closed_tx, closed_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        client.close();
        let _ = closed_tx.send(());
    });
    if closed_rx.recv_timeout(CLOSE_BOUND).is_err() {
        panic!(
            "{name}: close took more than {CLOSE_BOUND:?} after the flood (peak growth {peak} KiB)"
        );
    }
    let close = started.elapsed();
    eprintln!(
        "{name}: peak growth {} KiB, close {close:?}, dropped answers {}, ping {alive:?}",
        peak, stats.dropped_answers
    );
    super::report_figure(&format!(
        "{name}: peak RSS growth {:.1} MiB over {} s of flood (bound {} MiB), close {} ms, {} answers dropped",
        peak as f64 / 1024.0,
        FLOOD.as_secs(),
        GROWTH_BOUND_KIB / 1024,
        close.as_millis(),
        stats.dropped_answers
    ));
    assert!(peak <= GROWTH_BOUND_KIB, "{name}: peak growth {peak} KiB");
    assert!(
        close < CLOSE_BOUND,
        "{name}: close took {close:?} after the flood"
    );
    alive.unwrap_or_else(|e| panic!("{name}: a ping during the flood failed: {e:?}"));
    (peak, close)
}

/// Has the test server send each client `count` notifications (its `fault` tool's flood),
/// from 8 threads at once, each taking every 8th client.
pub fn flood_every_client(clients: &[Client], count: u64) {
    std::thread::scope(|scope| {
        for caller in 0..8 {
            scope.spawn(move || {
                for client in clients.iter().skip(caller).step_by(8) {
                    let flood = serde_json::json!({"kind": "flood", "count": count});
                    client
                        .call_tool("fault", Some(flood), &RequestOptions::default())
                        .expect("the flood call");
                }
            });
        }
    });
}

/// Waits (up to `bound`) until every client's `heard` (the data of its log notices, in order)
/// holds `count`, then asserts each holds exactly 0..count, in order; `what` starts each
/// failure message.
pub fn assert_each_heard_in_order(
    heard: &[std::sync::Arc<std::sync::Mutex<Vec<u64>>>],
    count: u64,
    bound: Duration,
    what: &str,
) {
    let deadline = Instant::now() + bound;
    let all_heard = || {
        heard
            .iter()
            .all(|h| h.lock().unwrap().len() >= count as usize)
    };
    while !all_heard() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let expected: Vec<u64> = (0..count).collect();
    for (n, heard) in heard.iter().enumerate() {
        assert_eq!(*heard.lock().unwrap(), expected, "{what}client {n}");
    }
}
