//! Close and connect are bounded whatever host callbacks do: close returns within
//! `limits::CLOSE_BOUND` though a stderr callback never returns, and a log or stderr callback
//! may call `connect` while a reconnect is under way without deadlocking it.

mod common;

use common::*;
use crossbeam_channel::{bounded, Receiver, Sender};
use mcpc::handlers::{Callbacks, LogHandler};
use mcpc::{limits, Client, ClientOptions, RequestOptions, Status, StderrMode};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

/// Wide: a deadlock or an unbounded wait never ends.
const HANG: Duration = Duration::from_secs(20);

fn none() -> RequestOptions {
    RequestOptions::default()
}

/// The client, for callbacks made before it exists.
type Slot = Arc<OnceLock<Weak<Client>>>;

fn from_slot(slot: &Slot) -> Option<Arc<Client>> {
    slot.get().and_then(Weak::upgrade)
}

/// Runs `body` on a thread of its own; `None` if it has not returned within `limit`.
fn within<T: Send + 'static>(
    limit: Duration,
    body: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let (done, result) = bounded(1);
    std::thread::spawn(move || {
        let _ = done.send(body());
    });
    result.recv_timeout(limit).ok()
}

/// Crashes the server under the client, so the next connect is a reconnect.
fn crash(client: &Client) {
    let error = client
        .call_tool("crash", None, &none())
        .expect_err("the server exits");
    assert_eq!(error.status, Status::TransportError, "{error:?}");
}

#[test]
fn close_returns_within_its_bound_while_a_stderr_callback_never_returns() {
    let armed = Arc::new(AtomicBool::new(false));
    let (entered_tx, entered) = bounded::<()>(1);
    // Never sent to: the callback waits until the test ends and drops it.
    let (release, released): (Sender<()>, Receiver<()>) = bounded(0);
    let callback = {
        let armed = armed.clone();
        Arc::new(move |_line: &str| {
            if armed.swap(false, Ordering::SeqCst) {
                let _ = entered_tx.send(());
                let _ = released.recv();
            }
        })
    };
    let mut config = config(&["--stderr-every-request"]);
    config.stderr = StderrMode::Callback(callback);
    let client = connect_with(config, ClientOptions::default());
    armed.store(true, Ordering::SeqCst);
    client.ping(&none()).unwrap();
    entered.recv_timeout(HANG).expect("the stderr callback ran");
    let closed = within(HANG, move || {
        let start = Instant::now();
        client.close();
        let took = start.elapsed();
        drop(client);
        (took, start.elapsed())
    });
    let (close_took, free_took) =
        closed.expect("close returned (it waited for the stderr callback)");
    assert!(
        free_took < limits::CLOSE_BOUND,
        "close took {close_took:?}, close and drop {free_took:?}: over the bound of {:?}",
        limits::CLOSE_BOUND
    );
    report_figure(&format!(
        "close_bound: close with a stderr callback that never returns took {close_took:?} (bound {:?})",
        limits::CLOSE_BOUND
    ));
    drop(release);
}

/// Options whose log callback runs `on_reconnect` once, when the library says it connects
/// again.
fn log_on_reconnect(on_reconnect: impl Fn() + Send + Sync + 'static) -> ClientOptions {
    let fired = AtomicBool::new(false);
    let log: LogHandler = Arc::new(move |_, message: &str| {
        if message.contains("connecting again") && !fired.swap(true, Ordering::SeqCst) {
            on_reconnect();
        }
    });
    ClientOptions {
        callbacks: Callbacks {
            on_log: Some(log),
            ..Callbacks::default()
        },
        ..ClientOptions::default()
    }
}

#[test]
fn a_log_callback_may_call_connect_during_a_reconnect() {
    let slot: Slot = Arc::default();
    let (report, reported) = bounded::<Result<Value, Status>>(1);
    let options = {
        let slot = slot.clone();
        log_on_reconnect(move || {
            let outcome = match from_slot(&slot) {
                Some(client) => client.connect().map_err(|e| e.status),
                None => Err(Status::InternalError),
            };
            let _ = report.send(outcome);
        })
    };
    let client = Arc::new(connect_with(config(&[]), options));
    let _ = slot.set(Arc::downgrade(&client));
    let first_pid = client.server_pid().unwrap();
    crash(&client);
    let reconnected = {
        let client = client.clone();
        within(HANG, move || client.connect().map_err(|e| e.status))
    };
    let reconnected =
        reconnected.expect("connect returned (the log callback's connect deadlocked it)");
    assert!(reconnected.is_ok(), "{reconnected:?}");
    let from_callback = reported.recv_timeout(HANG).expect("the log callback ran");
    assert!(
        from_callback.is_ok(),
        "the callback's connect: {from_callback:?}"
    );
    assert_ne!(client.server_pid(), Some(first_pid), "a new server");
    client.ping(&none()).unwrap();
}

#[test]
fn a_stderr_callback_may_call_connect_during_a_reconnect() {
    let slot: Slot = Arc::default();
    let armed = Arc::new(AtomicBool::new(false));
    let (entered_tx, entered) = bounded::<()>(1);
    let (reconnecting_tx, reconnecting) = bounded::<()>(1);
    let (report, reported) = bounded::<Result<Value, Status>>(1);
    // On the crash's stderr line, the callback waits for the reconnect to begin, then connects
    // itself: the reconnect ends the old connection meanwhile, which waits for this thread.
    let callback = {
        let (slot, armed) = (slot.clone(), armed.clone());
        Arc::new(move |_line: &str| {
            if !armed.swap(false, Ordering::SeqCst) {
                return;
            }
            let _ = entered_tx.send(());
            let _ = reconnecting.recv_timeout(HANG);
            let outcome = match from_slot(&slot) {
                Some(client) => client.connect().map_err(|e| e.status),
                None => Err(Status::InternalError),
            };
            let _ = report.send(outcome);
        })
    };
    let options = log_on_reconnect(move || {
        let _ = reconnecting_tx.send(());
    });
    let mut config = config(&["--stderr-every-request"]);
    config.stderr = StderrMode::Callback(callback);
    let client = Arc::new(connect_with(config, options));
    let _ = slot.set(Arc::downgrade(&client));
    armed.store(true, Ordering::SeqCst);
    crash(&client);
    entered
        .recv_timeout(HANG)
        .expect("the stderr callback heard the crash's line");
    let reconnected = {
        let client = client.clone();
        within(HANG, move || client.connect().map_err(|e| e.status))
    };
    let reconnected =
        reconnected.expect("connect returned (the stderr callback's connect deadlocked it)");
    assert!(reconnected.is_ok(), "{reconnected:?}");
    let from_callback = reported
        .recv_timeout(HANG)
        .expect("the stderr callback connected");
    assert!(
        from_callback.is_ok(),
        "the callback's connect: {from_callback:?}"
    );
    client.ping(&none()).unwrap();
}
