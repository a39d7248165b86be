//! Close completes every pending call at once, whatever the call waits on between requests:
//! a task whose server asks for a long poll interval (60 s), so the call sits between two
//! `tasks/get`; an input round whose handler waits for a person. Close from another thread
//! must end it with CLOSED at once, blocking or started without blocking, and a cancel must end
//! it too; an input handler is told through its token. Bounds are wide margins against a call
//! left waiting for its next poll or for the handler's own limit.

mod common;

use common::{config, report_figure};
use mcpc::handlers::{Callbacks, HandlerError, Progress, RequestHandler, ServerRequest};
use mcpc::{CancellationToken, Client, ClientOptions, ConnectMode, RequestOptions, Status};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Well under the server's 60 s poll interval, far over what an immediate wake takes.
const BOUND: Duration = Duration::from_secs(5);

fn task_client() -> Arc<Client> {
    let options = ClientOptions {
        mode: ConnectMode::Modern,
        tasks: true,
        ..ClientOptions::default()
    };
    let client = Client::stdio(config(&["--modern"]), options);
    client.connect().expect("connect");
    Arc::new(client)
}

/// Options whose progress callback says when the task exists (its first status report), and
/// the channel that hears it.
fn told_when_created(
    token: Option<CancellationToken>,
) -> (RequestOptions, crossbeam_channel::Receiver<()>) {
    let (created_tx, created) = crossbeam_channel::bounded::<()>(1);
    let opts = RequestOptions {
        cancellation: token,
        on_progress: Some(Arc::new(move |_: &Progress| {
            let _ = created_tx.try_send(());
        })),
        ..RequestOptions::default()
    };
    (opts, created)
}

/// Calls the slow-poll task on a thread of its own; the channel gets its outcome and when.
fn call_on_a_thread(
    client: &Arc<Client>,
    opts: RequestOptions,
) -> crossbeam_channel::Receiver<(mcpc::Result<serde_json::Value>, Instant)> {
    let (tx, rx) = crossbeam_channel::bounded(1);
    let client = client.clone();
    std::thread::spawn(move || {
        let outcome = client.call_tool("task", Some(slow_poll_task()), &opts);
        let _ = tx.send((outcome, Instant::now()));
    });
    rx
}

/// A task that never ends, polled every 60 s (the most the client honours).
fn slow_poll_task() -> serde_json::Value {
    json!({ "outcome": "never", "steps": 0, "poll_ms": 60_000 })
}

#[test]
fn close_ends_a_call_waiting_between_task_polls_at_once() {
    let client = task_client();
    let (opts, created) = told_when_created(None);
    let call = call_on_a_thread(&client, opts);
    created.recv_timeout(BOUND).expect("the task was created");
    // The call is now waiting for its next poll; close from this thread.
    let closed_at = Instant::now();
    client.close();
    let close_took = closed_at.elapsed();
    let (outcome, returned_at) = call.recv_timeout(BOUND).expect("the call returned");
    let waited = returned_at.saturating_duration_since(closed_at);
    report_figure(&format!(
        "close of a call waiting between task polls (pollIntervalMs 60000): the call returned {} ms after close began, close took {} ms",
        waited.as_millis(),
        close_took.as_millis()
    ));
    let e = outcome.expect_err("closed");
    assert_eq!(e.status, Status::Closed, "{e:?}");
    assert!(waited < BOUND, "the call returned {waited:?} after close");
    assert!(close_took < BOUND, "close took {close_took:?}");
}

#[test]
fn close_ends_a_started_call_waiting_between_task_polls_at_once() {
    let client = task_client();
    let (opts, created) = told_when_created(None);
    let (done_tx, done) = crossbeam_channel::bounded(1);
    let request = mcpc::Request::CallTool {
        name: "task".into(),
        arguments: Some(slow_poll_task().into()),
    };
    client
        .start(request, &opts, move |outcome| {
            let _ = done_tx.send((outcome, Instant::now()));
        })
        .unwrap();
    created.recv_timeout(BOUND).expect("the task was created");
    let closed_at = Instant::now();
    client.close();
    let close_took = closed_at.elapsed();
    let (outcome, delivered_at) = done.recv_timeout(BOUND).expect("delivered");
    let e = outcome.expect_err("closed");
    assert_eq!(e.status, Status::Closed, "{e:?}");
    let waited = delivered_at.saturating_duration_since(closed_at);
    assert!(waited < BOUND, "delivered {waited:?} after close");
    // Close waits for started calls to be delivered; one stuck in a pause held it for its
    // whole bound (2 s).
    assert!(
        close_took < Duration::from_secs(1),
        "close took {close_took:?}"
    );
}

#[test]
fn cancel_ends_a_call_waiting_between_task_polls_at_once() {
    let client = task_client();
    let token = CancellationToken::new();
    let (opts, created) = told_when_created(Some(token.clone()));
    let call = call_on_a_thread(&client, opts);
    created.recv_timeout(BOUND).expect("the task was created");
    let cancelled_at = Instant::now();
    token.cancel(Some("enough"));
    let (outcome, returned_at) = call.recv_timeout(BOUND).expect("the call returned");
    let e = outcome.expect_err("cancelled");
    assert_eq!(e.status, Status::Cancelled, "{e:?}");
    assert!(returned_at.saturating_duration_since(cancelled_at) < BOUND);
}

/// An input round (`input_required`, the tool `confirm`) whose elicitation handler waits for a
/// person, here until its token is cancelled (20 s at most): close tells the handler through
/// its token, and the call returns CLOSED at once, not when the handler gives up.
#[test]
fn close_ends_a_call_whose_input_handler_waits_and_tells_the_handler() {
    let (started_tx, started) = crossbeam_channel::bounded::<()>(1);
    let (told_tx, told) = crossbeam_channel::bounded::<bool>(1);
    let waiting: RequestHandler = Arc::new(move |request: &ServerRequest| {
        let _ = started_tx.try_send(());
        let give_up = Instant::now() + Duration::from_secs(20);
        while !request.cancellation.is_cancelled() && Instant::now() < give_up {
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = told_tx.try_send(request.cancellation.is_cancelled());
        Err(HandlerError {
            code: -32603,
            message: "nobody answered".into(),
        })
    });
    let mut callbacks = Callbacks::default();
    callbacks
        .request_handlers
        .insert("elicitation/create".into(), waiting);
    let options = ClientOptions {
        callbacks,
        ..ClientOptions::default()
    };
    let client = Arc::new(Client::stdio(config(&[]), options));
    client.connect().expect("connect");
    let (tx, call) = crossbeam_channel::bounded(1);
    {
        let client = client.clone();
        std::thread::spawn(move || {
            let outcome = client.call_tool(
                "confirm",
                Some(json!({"question": "sure?"})),
                &RequestOptions::default(),
            );
            let _ = tx.send((outcome, Instant::now()));
        });
    }
    started.recv_timeout(BOUND).expect("the handler was asked");
    let closed_at = Instant::now();
    client.close();
    let (outcome, returned_at) = call.recv_timeout(BOUND).expect("the call returned");
    let e = outcome.expect_err("closed");
    assert_eq!(e.status, Status::Closed, "{e:?}");
    assert!(returned_at.saturating_duration_since(closed_at) < BOUND);
    assert_eq!(
        told.recv_timeout(BOUND),
        Ok(true),
        "the handler's token was cancelled"
    );
}
