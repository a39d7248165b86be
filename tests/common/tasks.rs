//! What the test server records about its tasks (the tool `task_events`), and the check every
//! cancelled task-backed call ends with, in either era.

use super::read_log;
use mcpc::handlers::Progress;
use mcpc::{CancellationToken, Client, Error, RequestOptions, Status};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A wide bound against hangs (CI is 2 loaded cores): a cancel returns well within it.
pub const AT_ONCE: Duration = Duration::from_secs(2);

/// Calls the tool `task` with a task that never ends, and cancels the call (reason "enough") as
/// soon as the task exists (its first status report), or, `by_timeout`, lets a 300 ms timeout
/// end it. Checks the call returned the right status, at once after a cancel; returns its error.
pub fn call_cancelled_once_created(client: &Client, by_timeout: bool) -> Error {
    let token = CancellationToken::new();
    let (created_tx, created) = crossbeam_channel::bounded::<()>(1);
    let opts = RequestOptions {
        cancellation: Some(token.clone()),
        on_progress: Some(Arc::new(move |_: &Progress| {
            let _ = created_tx.try_send(());
        })),
        timeout: by_timeout.then_some(Duration::from_millis(300)),
        ..RequestOptions::default()
    };
    let canceller = std::thread::spawn(move || {
        if !by_timeout {
            created.recv_timeout(Duration::from_secs(10)).unwrap();
            token.cancel(Some("enough"));
        }
        Instant::now()
    });
    let args = json!({ "outcome": "never", "steps": 0, "poll_ms": 20 });
    let e = client.call_tool("task", Some(args), &opts).unwrap_err();
    let returned = Instant::now();
    let cancelled_at = canceller.join().unwrap();
    if by_timeout {
        assert_eq!(e.status, Status::Timeout, "{e:?}");
        assert_eq!(e.cancel_reason.as_deref(), Some("timed out after 300 ms"));
    } else {
        assert_eq!(e.status, Status::Cancelled, "{e:?}");
        assert_eq!(e.cancel_reason.as_deref(), Some("enough"));
        assert!(returned.duration_since(cancelled_at) < AT_ONCE);
    }
    assert_eq!(e.data.as_ref().expect("error data")["taskId"], "task-1");
    e
}

/// What the server recorded about its tasks, in order.
pub fn events(client: &Client) -> Vec<String> {
    let result = client
        .call_tool("task_events", None, &RequestOptions::default())
        .expect("task_events");
    serde_json::from_value(result["structuredContent"]["events"].clone()).unwrap()
}

/// Waits (up to 5 s) until the server has recorded an event starting with `prefix`.
pub fn wait_for_event(client: &Client, prefix: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let events = events(client);
        if events.iter().any(|e| e.starts_with(prefix)) || Instant::now() > deadline {
            return events;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

pub fn count(events: &[String], prefix: &str) -> usize {
    events.iter().filter(|e| e.starts_with(prefix)).count()
}

pub fn position(events: &[String], event: &str) -> Option<usize> {
    events.iter().position(|e| e == event)
}

/// After a call backed by task `task-1` was cancelled or timed out: the server got exactly one
/// `tasks/cancel`, after the task existed, and the task ended cancelled; with the stdio
/// server's `log`, no `notifications/cancelled` was sent (the request was answered with the
/// task, and its polls are dropped without one).
pub fn check_one_tasks_cancel(client: &Client, log: Option<&Path>) {
    // The tasks/cancel goes out after the call returned: wait for it.
    let first = wait_for_event(client, "cancel task-1");
    assert!(count(&first, "cancel task-1") >= 1, "{first:?}");
    // A barrier: the server answered a later request, so a second cancel would be recorded.
    client
        .call_tool(
            "echo",
            Some(json!({"text": "x"})),
            &RequestOptions::default(),
        )
        .expect("echo");
    let events = events(client);
    assert_eq!(count(&events, "cancel "), 1, "one tasks/cancel: {events:?}");
    assert!(
        position(&events, "created task-1") < position(&events, "cancel task-1"),
        "after the task existed: {events:?}"
    );
    assert!(
        position(&events, "cancelled task-1").is_some(),
        "{events:?}"
    );
    if let Some(log) = log {
        assert!(
            !read_log(log)
                .iter()
                .any(|l| l["method"] == "notifications/cancelled"),
            "no notifications/cancelled for a call answered with a task (nor its polls)"
        );
    }
}
