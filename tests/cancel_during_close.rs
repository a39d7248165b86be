//! A cancel that races close: a call blocked at the server, close started on one thread and
//! the call's token cancelled on another at the same moment. Each round the call has exactly
//! one outcome (CANCELLED or CLOSED), close returns in bounded time, nothing panics, and the
//! server read at most one `notifications/cancelled`.

mod common;

use common::*;
use mcpc::{CancellationToken, RequestOptions, Status};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

#[test]
fn cancel_during_close_gives_one_outcome_and_a_bounded_close() {
    let (mut cancelled, mut closed) = (0, 0);
    let mut slowest = Duration::ZERO;
    for round in 0..20 {
        let log = log_path(&format!("cancel_during_close_{round}"));
        let client = Arc::new(connect_logged(&log, &[]));
        let token = CancellationToken::new();
        let caller = {
            let (client, token) = (client.clone(), token.clone());
            std::thread::spawn(move || {
                client.call_tool("never", None, &RequestOptions::with_cancellation(&token))
            })
        };
        // The call is at the server: the race is between close and cancel only.
        let lines = wait_for_log(&log, |l| l.iter().any(|x| is_method(x, "tools/call")));
        assert!(
            lines.iter().any(|x| is_method(x, "tools/call")),
            "round {round}"
        );
        let start = Arc::new(Barrier::new(2));
        let closer = {
            let (client, start) = (client.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let at = Instant::now();
                client.close();
                at.elapsed()
            })
        };
        start.wait();
        token.cancel(Some("racing close"));
        let close_took = closer.join().expect("close did not panic");
        let outcome = caller.join().expect("the call did not panic");
        slowest = slowest.max(close_took);
        match outcome.map_err(|e| e.status) {
            Err(Status::Cancelled) => cancelled += 1,
            Err(Status::Closed) => closed += 1,
            other => panic!("round {round}: {other:?}"),
        }
        assert!(
            close_took < Duration::from_secs(5),
            "round {round}: close took {close_took:?}"
        );
        // Close reaped the server: its log is complete.
        let notices = cancels(&read_log(&log)).len();
        assert!(notices <= 1, "round {round}: {notices} cancel notices");
    }
    common::report_figure(&format!(
        "cancel during close: 20 rounds, {cancelled} calls ended CANCELLED and {closed} CLOSED; slowest close {:.0} ms",
        slowest.as_secs_f64() * 1e3
    ));
}
