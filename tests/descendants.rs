//! A stdio server whose descendants outlive it: a process it starts in a session of its own
//! (setsid, so outside its process group and out of reach of close's signals) keeps the
//! server's stdin, stdout and stderr open. Close and free must still return within their
//! bound, and the server's exit must still be seen, though stdout never ends.

mod common;

use common::*;
use mcpc::{Client, ConnectionState, RequestOptions, Status};
use serde_json::json;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Kills the detached process when the test ends, however it ends.
struct Detached(u32);

impl Drop for Detached {
    fn drop(&mut self) {
        // SAFETY: kill has no memory effects.
        unsafe { libc::kill(self.0 as libc::pid_t, libc::SIGKILL) };
    }
}

/// Has the server start `sleep 600` in a session of its own, holding the server's pipes.
fn detach(client: &Client) -> Detached {
    let result = client
        .call_tool(
            "detach_child",
            Some(json!({"secs": 600})),
            &RequestOptions::default(),
        )
        .unwrap();
    let detached = Detached(text(&result).parse().expect("a pid"));
    assert!(process_exists(detached.0));
    detached
}

/// Runs `f` on a thread of its own and waits up to `limit`: its result and how long it took,
/// or `None` when it did not return in time (the thread is left behind then).
fn within<T: Send + 'static>(
    limit: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> Option<(T, Duration)> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let start = Instant::now();
        let value = f();
        let _ = tx.send((value, start.elapsed()));
    });
    rx.recv_timeout(limit).ok()
}

/// Close and free with a server that ignores stdin's end and SIGTERM (the slowest close: 2 s,
/// SIGTERM, 2 s more, SIGKILL) while its detached child holds stdout and stderr: both return
/// within the bound, the pending call gets CLOSED, and the detached child is not waited for.
#[test]
fn close_and_free_return_in_bounded_time_while_a_detached_descendant_holds_the_pipes() {
    let slowest = [
        "--ignore-stdin-eof",
        "--ignore-sigterm",
        "--stderr-every-request",
    ];
    let closed = Arc::new(connect(&slowest));
    let freed = connect(&slowest);
    let _holders = [detach(&closed), detach(&freed)];
    let pending = {
        let client = closed.clone();
        std::thread::spawn(move || client.call_tool("never", None, &RequestOptions::default()))
    };
    // A barrier, not a sleep: the next call is answered after `never` was read.
    closed.ping(&RequestOptions::default()).unwrap();

    let limit = Duration::from_secs(10);
    let close = within(limit, move || closed.close());
    let free = within(limit, move || drop(freed));
    let (_, close_took) = close.expect("close returned within 10 s");
    let (_, free_took) = free.expect("free (drop) returned within 10 s");
    report_figure(&format!(
        "close with a detached descendant holding stdout and stderr, server ignoring SIGTERM: {} ms (free: {} ms)",
        close_took.as_millis(),
        free_took.as_millis()
    ));
    eprintln!("close took {close_took:?}, free took {free_took:?}");
    assert!(close_took < Duration::from_secs(6), "close: {close_took:?}");
    assert!(free_took < Duration::from_secs(6), "free: {free_took:?}");
    let outcome = pending.join().unwrap();
    assert_eq!(outcome.unwrap_err().status, Status::Closed);
}

/// The server exits while a call is pending, and the process it detached keeps its stdout
/// open, so stdout never ends: the exit itself is seen, and the calls fail with
/// TRANSPORT_ERROR naming the exit, within 2 s.
#[test]
fn a_server_that_exits_while_a_descendant_holds_its_stdout_fails_pending_calls() {
    let client = Arc::new(connect(&["--stderr-every-request"]));
    let _holder = detach(&client);
    let limit = RequestOptions::with_timeout(Duration::from_secs(10));
    let pending = {
        let (client, limit) = (client.clone(), limit.clone());
        std::thread::spawn(move || {
            let outcome = client.call_tool("never", None, &limit);
            (outcome, Instant::now())
        })
    };
    client.ping(&RequestOptions::default()).unwrap(); // `never` was read
    let start = Instant::now();
    let err = client
        .call_tool("crash", None, &limit)
        .expect_err("the server exited");
    let took = start.elapsed();
    report_figure(&format!(
        "stdio server exit seen while a descendant holds stdout: calls failed {} ms after the crash call",
        took.as_millis()
    ));
    eprintln!("the exit was seen after {took:?}: {}", err.message);
    assert_eq!(err.status, Status::TransportError, "{}", err.message);
    assert!(err.message.contains("exited"), "{}", err.message);
    assert!(took < Duration::from_secs(2), "{took:?}");

    let (outcome, when) = pending.join().unwrap();
    let pending_err = outcome.unwrap_err();
    assert_eq!(pending_err.status, Status::TransportError);
    assert!(when.duration_since(start) < Duration::from_secs(2));
    assert_eq!(client.state(), ConnectionState::Failed);
    assert_eq!(
        client.ping(&RequestOptions::default()).unwrap_err().status,
        Status::TransportError
    );
    // Close does not wait for the descendant either.
    let start = Instant::now();
    client.close();
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
}

/// The same exit seen by a caller alone: nobody else has a call pending, so the caller reads
/// its own answer (the reactor does not); its wait must still end at the server's exit,
/// though stdout never ends.
#[test]
fn a_lone_caller_sees_the_exit_of_a_server_whose_descendant_holds_its_stdout() {
    let client = connect(&["--stderr-every-request"]);
    let _holder = detach(&client);
    let start = Instant::now();
    let err = client
        .call_tool(
            "crash",
            None,
            &RequestOptions::with_timeout(Duration::from_secs(10)),
        )
        .expect_err("the server exited");
    let took = start.elapsed();
    assert_eq!(err.status, Status::TransportError, "{}", err.message);
    assert!(err.message.contains("exited"), "{}", err.message);
    assert!(took < Duration::from_secs(2), "{took:?}");
    client.close();
}
