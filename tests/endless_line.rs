//! A server that writes a line with no end: the pending call fails with PROTOCOL_ERROR as soon
//! as the line passes max_line_bytes (not at a newline that never comes), memory stays bounded
//! while the line goes on, and the stream recovers at the line's newline when there is one.
//! A test binary of its own, so the peak memory it measures is its own; its two tests take
//! turns (`SERIAL`), so that the other's line is not in the peak.

mod common;

use common::*;
use mcpc::{ClientOptions, RequestOptions, Status};
use serde_json::json;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

const LIMIT: usize = 64 * 1024;

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// This process's peak resident memory so far, in KiB.
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/self/status")
}

#[test]
fn a_line_without_end_fails_the_pending_call_once_it_passes_the_limit() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut config = config(&[]);
    config.max_line_bytes = LIMIT;
    let client = Arc::new(connect_with(config, ClientOptions::default()));
    let before = peak_rss_kib();

    let (tx, rx) = mpsc::channel();
    let started = Instant::now();
    {
        let client = client.clone();
        std::thread::spawn(move || {
            let outcome = client.call_tool(
                "fault",
                Some(json!({ "kind": "endless_line" })),
                &RequestOptions::default(),
            );
            let _ = tx.send((outcome, Instant::now()));
        });
    }
    let (outcome, failed_at) = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the call never failed: the endless line was never reported");
    let took = failed_at.duration_since(started);
    let error = outcome.unwrap_err();
    assert_eq!(error.status, Status::ProtocolError, "{error:?}");
    assert!(error.message.contains("limit"), "{}", error.message);

    // The line goes on; the client keeps skipping it, in bounded memory.
    std::thread::sleep(Duration::from_millis(500));
    let added_mib = peak_rss_kib().saturating_sub(before) as f64 / 1024.0;
    let closing = Instant::now();
    client.close();
    let closed = closing.elapsed();
    common::report_figure(&format!(
        "stdio, a server writing an endless line, max_line_bytes 64 KiB: PROTOCOL_ERROR after {:.1} ms, peak memory +{added_mib:.1} MiB, close {:.0} ms",
        took.as_secs_f64() * 1000.0,
        closed.as_secs_f64() * 1000.0
    ));
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert!(added_mib < 32.0, "peak memory grew by {added_mib:.1} MiB");
    assert!(closed < Duration::from_secs(5), "close took {closed:?}");
}

#[test]
fn the_stream_recovers_at_the_long_lines_newline() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut config = config(&[]);
    config.max_line_bytes = LIMIT;
    let client = connect_with(config, ClientOptions::default());
    let error = client
        .call_tool(
            "fault",
            Some(json!({ "kind": "endless_line", "bytes": 1024 * 1024 })),
            &RequestOptions::with_timeout(Duration::from_secs(10)),
        )
        .unwrap_err();
    assert_eq!(error.status, Status::ProtocolError, "{error:?}");
    let next = client
        .call_tool(
            "echo",
            Some(json!({ "text": "after" })),
            &RequestOptions::with_timeout(Duration::from_secs(10)),
        )
        .expect("the next call works: the stream went on after the long line");
    assert_eq!(text(&next), "after");
}
