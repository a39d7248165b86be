//! A cancelled or timed-out call returns at once, even while an unrelated callback is slow, and
//! its own progress callback never runs after it has returned (issue 13, item 7).

mod common;

use common::*;
use mcpc::handlers::{Callbacks, LogMessage, Progress};
use mcpc::{CancellationToken, Client, ClientOptions, RequestOptions, Status};
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SLOW_CALLBACK: Duration = Duration::from_secs(2);

#[derive(Clone, Copy, PartialEq, Debug)]
enum End {
    Cancel,
    Timeout,
}

fn a_call_ended_early_does_not_wait_for_an_unrelated_callback(end: End) {
    let (slow_started_tx, slow_started) = crossbeam_channel::bounded(1);
    let (slow_done_tx, slow_done) = crossbeam_channel::bounded(1);
    let (barrier_tx, barrier_seen) = crossbeam_channel::bounded(1);
    let client_progress = Arc::new(AtomicUsize::new(0));
    let seen = client_progress.clone();
    let options = ClientOptions {
        callbacks: Callbacks {
            on_message: Some(Arc::new(move |m: &LogMessage| {
                if m.data == json!("slow") {
                    let _ = slow_started_tx.try_send(());
                    std::thread::sleep(SLOW_CALLBACK);
                    let _ = slow_done_tx.try_send(());
                } else {
                    let _ = barrier_tx.try_send(());
                }
            })),
            on_progress: Some(Arc::new(move |p: &Progress| {
                if p.token == json!("mine") {
                    seen.fetch_add(1, Ordering::SeqCst);
                }
            })),
            ..Callbacks::default()
        },
        ..ClientOptions::default()
    };
    let log = log_path(&format!("cancel-unrelated-{end:?}"));
    let client = Arc::new(Client::stdio(
        config(&["--log", log.to_str().unwrap()]),
        options,
    ));
    client.connect().unwrap();

    // The unrelated callback starts and stays busy for 2 s.
    let notify = json!({"kind": "notify", "method": "notifications/message",
                        "params": {"level": "info", "data": "slow"}});
    client
        .call_tool("fault", Some(notify), &RequestOptions::default())
        .unwrap();
    slow_started.recv_timeout(Duration::from_secs(10)).unwrap();

    // A call with its own progress callback, whose progress queues behind the slow callback.
    let returned = Arc::new(AtomicBool::new(false));
    let after_return = Arc::new(AtomicUsize::new(0));
    let token = CancellationToken::new();
    let opts = RequestOptions {
        cancellation: Some(token.clone()),
        progress_token: Some(json!("mine")),
        timeout: (end == End::Timeout).then(|| Duration::from_millis(400)),
        on_progress: Some({
            let (returned, after_return) = (returned.clone(), after_return.clone());
            Arc::new(move |_: &Progress| {
                if returned.load(Ordering::SeqCst) {
                    after_return.fetch_add(1, Ordering::SeqCst);
                }
            })
        }),
        ..RequestOptions::default()
    };
    let caller = {
        let (client, returned) = (client.clone(), returned.clone());
        std::thread::spawn(move || {
            let outcome = client.call_tool("slow", Some(json!({"ms": 10000})), &opts);
            returned.store(true, Ordering::SeqCst);
            (outcome, Instant::now())
        })
    };
    wait_for_log(&log, |lines| {
        lines
            .iter()
            .any(|l| is_method(l, "tools/call") && l["params"]["name"] == "slow")
    });
    // The server reports progress every 50 ms; a ping answered after a few reports is the
    // barrier that they have been read (and queued for the callback thread).
    std::thread::sleep(Duration::from_millis(200));
    client.ping(&RequestOptions::default()).unwrap();
    let ended = match end {
        End::Cancel => {
            let at = Instant::now();
            assert!(token.cancel(Some("user")));
            at
        }
        // Timed out 400 ms after it started; measured from that moment on the caller's side.
        End::Timeout => Instant::now(),
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !caller.is_finished() {
        assert!(Instant::now() < deadline, "the call never returned");
        std::thread::sleep(Duration::from_millis(1));
    }
    let (outcome, returned_at) = caller.join().unwrap();
    let error = outcome.unwrap_err();
    let took = returned_at.saturating_duration_since(ended);
    match end {
        End::Cancel => {
            assert_eq!(error.status, Status::Cancelled, "{error}");
            report_figure(&format!(
                "cancel with an unrelated 2 s callback running: CANCELLED {:.1} ms after the cancel",
                took.as_secs_f64() * 1000.0
            ));
            assert!(
                took < Duration::from_millis(200),
                "CANCELLED came {took:?} after the cancel"
            );
        }
        End::Timeout => {
            assert_eq!(error.status, Status::Timeout, "{error}");
            assert!(
                slow_done.try_recv().is_err(),
                "the call timed out while the unrelated callback still ran"
            );
        }
    }

    // Once the slow callback is over, the queued progress runs: the client's callback hears
    // it (so the call's own callback was queued), the call's own callback does not.
    slow_done.recv_timeout(Duration::from_secs(10)).unwrap();
    let barrier = json!({"kind": "notify", "method": "notifications/message",
                         "params": {"level": "info", "data": "barrier"}});
    client
        .call_tool("fault", Some(barrier), &RequestOptions::default())
        .unwrap();
    // The callback thread runs in order: once it has the barrier, the progress has run.
    barrier_seen.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(
        client_progress.load(Ordering::SeqCst) > 0,
        "no progress was queued"
    );
    assert_eq!(
        after_return.load(Ordering::SeqCst),
        0,
        "the call's own progress callback ran after the call returned"
    );
    client.close();
}

#[test]
fn a_cancelled_call_returns_at_once_while_an_unrelated_callback_is_slow() {
    a_call_ended_early_does_not_wait_for_an_unrelated_callback(End::Cancel);
}

#[test]
fn a_timed_out_call_returns_at_once_while_an_unrelated_callback_is_slow() {
    a_call_ended_early_does_not_wait_for_an_unrelated_callback(End::Timeout);
}
