//! Custom transports (the seed's "Custom transports" contract), written in Rust against the
//! `BlockingTransport` trait: the send boundary, its fallback, and cancels fired from inside
//! the transport.

use mcpc::BlockingTransport;
use mcpc::{CancellationToken, Client, ClientOptions, RequestOptions, Result, Status};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// How the fake transport behaves for `tools/call`.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// Wait this long, then call on_sent, then answer after a further 300 ms.
    DelayedOnSent(u64),
    /// Never call on_sent; answer after 300 ms.
    NeverOnSent,
    /// Fail the round trip (before on_sent) after 100 ms.
    FailBeforeOnSent,
    /// Cancel the test's token from inside the round trip while holding the transport lock.
    CancelFromInside,
    /// Never answer initialize (until closed).
    SilentInitialize,
}

#[derive(Clone)]
struct Fake {
    mode: Mode,
    events: Arc<Mutex<Vec<String>>>,
    /// Held while the transport "writes"; notify needs it too.
    wire: Arc<Mutex<()>>,
    token: CancellationToken,
    closed: Arc<(Mutex<bool>, std::sync::Condvar)>,
}

impl Fake {
    fn new(mode: Mode) -> Self {
        Fake {
            mode,
            events: Arc::default(),
            wire: Arc::default(),
            token: CancellationToken::new(),
            closed: Arc::default(),
        }
    }

    fn record(&self, event: String) {
        self.events.lock().unwrap().push(event);
    }

    fn events(&self) -> Vec<String> {
        self.events.lock().unwrap().clone()
    }

    /// Sleeps, but wakes early when the transport is closed.
    fn sleep(&self, ms: u64) {
        let (lock, cond) = &*self.closed;
        let closed = lock.lock().unwrap();
        let _ = cond
            .wait_timeout_while(closed, Duration::from_millis(ms), |c| !*c)
            .unwrap();
    }
}

impl BlockingTransport for Fake {
    fn round_trip(&self, request: &str, on_sent: &mut dyn FnMut()) -> Result<String> {
        let request: Value = serde_json::from_str(request).unwrap();
        let id = request["id"].clone();
        let method = request["method"].as_str().unwrap().to_owned();
        let answer =
            |result: Value| Ok(json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string());
        if method == "initialize" {
            if self.mode == Mode::SilentInitialize {
                self.record(format!("initialize {id}"));
                self.sleep(60_000);
                return Err(mcpc::Error::transport("closed"));
            }
            on_sent();
            return answer(
                json!({"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "fake", "version": "1"}}),
            );
        }
        if method != "tools/call" {
            on_sent();
            return answer(json!({}));
        }
        self.record(format!("request {id}"));
        match self.mode {
            Mode::DelayedOnSent(ms) => {
                self.sleep(ms);
                self.record(format!("sent {id}"));
                on_sent();
                self.sleep(300);
            }
            Mode::NeverOnSent => self.sleep(300),
            Mode::FailBeforeOnSent => {
                self.sleep(100);
                return Err(mcpc::Error::transport("the wire broke"));
            }
            Mode::CancelFromInside => {
                let _wire = self.wire.lock().unwrap();
                self.token.cancel(Some("from inside"));
                on_sent();
            }
            Mode::SilentInitialize => {}
        }
        self.record(format!("returned {id}"));
        // A late response for a cancelled call: the client must drop it.
        answer(json!({"content": [{"type": "text", "text": "late"}]}))
    }

    fn notify(&self, frame: &str) -> Result<()> {
        let _wire = self.wire.lock().unwrap();
        let frame: Value = serde_json::from_str(frame).unwrap();
        if frame["method"] == "notifications/cancelled" {
            self.record(format!("cancel {}", frame["params"]["requestId"]));
        }
        Ok(())
    }

    fn close(&self) {
        let (lock, cond) = &*self.closed;
        *lock.lock().unwrap() = true;
        cond.notify_all();
    }
}

fn connected(fake: &Fake) -> Client {
    let client = Client::custom(fake.clone(), ClientOptions::default());
    client.connect().unwrap();
    client
}

/// Waits up to 3 s for `n` events.
fn wait_events(fake: &Fake, n: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(3);
    while fake.events().len() < n && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(5));
    }
    fake.events()
}

fn call_and_cancel_after(
    client: &Client,
    token: &CancellationToken,
    ms: u64,
) -> (mcpc::Error, Duration) {
    let canceller = {
        let token = token.clone();
        thread::spawn(move || {
            thread::sleep(Duration::from_millis(ms));
            token.cancel(Some("stop"));
        })
    };
    let start = Instant::now();
    let err = client
        .call_tool("slow", None, &RequestOptions::with_cancellation(token))
        .unwrap_err();
    let waited = start.elapsed();
    canceller.join().unwrap();
    (err, waited)
}

#[test]
fn the_cancel_waits_for_the_send_boundary_with_no_timer() {
    // The Ruby SDK's regression test waits 200 ms; a longer delay keeps the "at once" bound
    // far from it even on a loaded machine.
    let fake = Fake::new(Mode::DelayedOnSent(1000));
    let client = connected(&fake);
    let token = CancellationToken::new();
    let (err, waited) = call_and_cancel_after(&client, &token, 50);
    assert_eq!(err.status, Status::Cancelled);
    assert!(
        waited < Duration::from_millis(800),
        "the caller is woken at once: {waited:?}"
    );
    let id = err.request_id.unwrap();
    let events = wait_events(&fake, 3);
    assert_eq!(
        events,
        [
            format!("request {id}"),
            format!("sent {id}"),
            format!("cancel {id}")
        ]
    );
    assert_eq!(
        client.stats().unmatched_responses,
        0,
        "the late response has not come yet"
    );
    // The late response arrives after 1000 + 300 ms and is dropped, counted as unmatched.
    thread::sleep(Duration::from_millis(600));
    assert_eq!(client.stats().unmatched_responses, 1);
    assert_eq!(
        fake.events()
            .iter()
            .filter(|e| e.starts_with("cancel"))
            .count(),
        1
    );
}

#[test]
fn a_transport_that_never_signals_gets_the_cancel_after_the_round_trip() {
    let fake = Fake::new(Mode::NeverOnSent);
    let client = connected(&fake);
    let token = CancellationToken::new();
    let (err, waited) = call_and_cancel_after(&client, &token, 50);
    assert_eq!(err.status, Status::Cancelled);
    assert!(waited < Duration::from_millis(250), "{waited:?}");
    let id = err.request_id.unwrap();
    assert_eq!(
        wait_events(&fake, 3),
        [
            format!("request {id}"),
            format!("returned {id}"),
            format!("cancel {id}")
        ]
    );
}

#[test]
fn a_failed_send_after_a_winning_cancel_still_notifies() {
    let fake = Fake::new(Mode::FailBeforeOnSent);
    let client = connected(&fake);
    let token = CancellationToken::new();
    let (err, _) = call_and_cancel_after(&client, &token, 20);
    assert_eq!(err.status, Status::Cancelled, "the cancel won the race");
    let id = err.request_id.unwrap();
    assert_eq!(
        wait_events(&fake, 2),
        [format!("request {id}"), format!("cancel {id}")]
    );
}

#[test]
fn a_cancel_fired_inside_the_transport_does_not_deadlock() {
    let fake = Fake::new(Mode::CancelFromInside);
    let client = connected(&fake);
    let start = Instant::now();
    let err = client
        .call_tool(
            "slow",
            None,
            &RequestOptions::with_cancellation(&fake.token),
        )
        .unwrap_err();
    assert_eq!(err.status, Status::Cancelled);
    assert_eq!(err.cancel_reason.as_deref(), Some("from inside"));
    assert!(start.elapsed() < Duration::from_secs(2));
    let id = err.request_id.unwrap();
    let events = wait_events(&fake, 3);
    assert!(events.contains(&format!("cancel {id}")), "{events:?}");
}

#[test]
fn initialize_is_never_cancelled_on_the_wire_even_when_it_times_out() {
    let fake = Fake::new(Mode::SilentInitialize);
    let options = ClientOptions {
        connect_timeout: Duration::from_millis(200),
        ..ClientOptions::default()
    };
    let client = Client::custom(fake.clone(), options);
    let start = Instant::now();
    let err = client.connect().unwrap_err();
    assert_eq!(err.status, Status::Timeout);
    assert!(
        err.message.starts_with("initialize failed"),
        "{}",
        err.message
    );
    assert!(start.elapsed() < Duration::from_secs(2));
    // The barrier: close, which returns once the transport is closed and the library's
    // threads have ended, so a notice it meant to send has been sent.
    client.close();
    assert!(*fake.closed.0.lock().unwrap(), "the transport was closed");
    let events = fake.events();
    assert_eq!(events.len(), 1, "no cancel for initialize: {events:?}");
    assert!(!client.is_connected());
}
