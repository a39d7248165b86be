//! A server that stops reading its stdin while a call's request is larger than the pipe
//! buffer: the write cannot finish, yet a cancel, a timeout or a close frees the caller at
//! once, other calls are not held behind it, and the stream the server reads stays whole
//! (a started request is finished before anything follows it, then its cancel notice).
//!
//! The server (our test server with `--stall-reading-while`) stops reading once initialized,
//! for as long as a file exists. Each call runs on its own thread and its outcome is awaited
//! with a bound, so a caller that is never freed fails the test instead of hanging it.
//!
//! Unix only: the tests wait until the request's bytes are in the server's stdin pipe by
//! reading its unread count through /proc, which Windows has no counterpart of.
#![cfg(unix)]

mod common;

use common::*;
use mcpc::{CancellationToken, Client, Error, RequestOptions, Status};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Larger than any pipe buffer (64 KiB by default, 1 MiB at most unprivileged).
const BIG: usize = 4 * 1024 * 1024 + 1;
/// How long a caller may take to be freed before the test calls it stuck (the item's bound
/// is 100 ms; the margin is for a loaded CI machine).
const FREED_WITHIN: Duration = Duration::from_secs(1);

struct Stalled {
    client: Arc<Client>,
    /// While this file exists, the server reads nothing.
    hold: PathBuf,
    log: PathBuf,
}

impl Stalled {
    fn start(name: &str) -> Stalled {
        let log = log_path(name);
        let hold = log.with_extension("hold");
        std::fs::write(&hold, b"").unwrap();
        let client = connect(&[
            "--log",
            log.to_str().unwrap(),
            "--stall-reading-while",
            hold.to_str().unwrap(),
        ]);
        Stalled {
            client: Arc::new(client),
            hold,
            log,
        }
    }

    /// Starts a call on its own thread; its outcome and when it came arrive on the channel.
    fn call(
        &self,
        tool: &str,
        args: Value,
        opts: RequestOptions,
    ) -> mpsc::Receiver<(Result<Value, Error>, Instant)> {
        let (tx, rx) = mpsc::channel();
        let client = self.client.clone();
        let tool = tool.to_owned();
        std::thread::spawn(move || {
            let outcome = client.call_tool(&tool, Some(args), &opts);
            let _ = tx.send((outcome, Instant::now()));
        });
        rx
    }

    /// A call to `never` with a request line larger than the pipe buffer; returns once part
    /// of it is in the pipe, so the write has started and cannot finish.
    fn big_call(&self, opts: RequestOptions) -> mpsc::Receiver<(Result<Value, Error>, Instant)> {
        let outcome = self.call("never", json!({ "padding": "x".repeat(BIG) }), opts);
        self.wait_for_bytes_in_pipe();
        outcome
    }

    /// Waits (bounded) until the server's stdin pipe holds bytes it has not read.
    fn wait_for_bytes_in_pipe(&self) {
        let pid = self.client.server_pid().expect("a stdio server");
        let deadline = Instant::now() + Duration::from_secs(10);
        while unread_in_stdin(pid) == 0 {
            assert!(
                Instant::now() < deadline,
                "the request never reached the pipe"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Lets the server read again.
    fn resume(&self) {
        let _ = std::fs::remove_file(&self.hold);
    }
}

impl Drop for Stalled {
    fn drop(&mut self) {
        // A server that reads again sees stdin end at close and leaves at once.
        self.resume();
    }
}

/// How many bytes wait unread in process `pid`'s stdin pipe (FIONREAD on the same pipe,
/// opened through /proc).
fn unread_in_stdin(pid: u32) -> usize {
    let path = std::ffi::CString::new(format!("/proc/{pid}/fd/0")).unwrap();
    // SAFETY: open/ioctl/close on a descriptor we own, ioctl writing into a local int.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_NONBLOCK);
        if fd < 0 {
            return 0;
        }
        let mut unread: libc::c_int = 0;
        let rc = libc::ioctl(fd, libc::FIONREAD, &mut unread);
        libc::close(fd);
        if rc == 0 {
            unread.max(0) as usize
        } else {
            0
        }
    }
}

/// Waits for a call's outcome, failing the test when it does not come within `limit`.
fn outcome_within(
    rx: &mpsc::Receiver<(Result<Value, Error>, Instant)>,
    limit: Duration,
    what: &str,
) -> (Result<Value, Error>, Instant) {
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("{what}: the caller was not freed within {limit:?}"))
}

#[test]
fn cancel_frees_a_caller_whose_request_the_server_does_not_read() {
    let server = Stalled::start("write_cancel");
    let token = CancellationToken::new();
    let call = server.big_call(RequestOptions::with_cancellation(&token));

    let cancelled_at = Instant::now();
    assert!(token.cancel(Some("stop")));
    let (outcome, returned_at) = outcome_within(&call, Duration::from_secs(5), "cancel");
    let freed = returned_at.duration_since(cancelled_at);
    assert_eq!(outcome.unwrap_err().status, Status::Cancelled);
    common::report_figure(&format!(
        "stdio, a 4 MiB request to a server that does not read: cancel freed the caller in {:.1} ms",
        freed.as_secs_f64() * 1000.0
    ));
    assert!(freed < FREED_WITHIN, "freed after {freed:?}");
}

#[test]
fn a_timeout_fires_while_the_request_cannot_be_written() {
    let server = Stalled::start("write_timeout");
    let started = Instant::now();
    let call = server.big_call(RequestOptions::with_timeout(Duration::from_millis(300)));
    let (outcome, returned_at) = outcome_within(&call, Duration::from_secs(5), "timeout");
    let took = returned_at.duration_since(started);
    assert_eq!(outcome.unwrap_err().status, Status::Timeout);
    common::report_figure(&format!(
        "stdio, a 4 MiB request to a server that does not read, timeout 300 ms: TIMEOUT after {:.1} ms",
        took.as_secs_f64() * 1000.0
    ));
    assert!(
        took < Duration::from_millis(300) + FREED_WITHIN,
        "took {took:?}"
    );
}

#[test]
fn close_frees_a_caller_whose_request_the_server_does_not_read() {
    let server = Stalled::start("write_close");
    let call = server.big_call(RequestOptions::default());

    let closing_at = Instant::now();
    let closer = {
        let client = server.client.clone();
        std::thread::spawn(move || {
            client.close();
            Instant::now()
        })
    };
    let (outcome, returned_at) = outcome_within(&call, Duration::from_secs(10), "close");
    let freed = returned_at.duration_since(closing_at);
    assert_eq!(outcome.unwrap_err().status, Status::Closed);
    let closed = closer.join().unwrap().duration_since(closing_at);
    common::report_figure(&format!(
        "stdio, a 4 MiB request to a server that does not read (nor sees stdin end): close freed the caller in {:.1} ms and returned in {:.0} ms",
        freed.as_secs_f64() * 1000.0,
        closed.as_secs_f64() * 1000.0
    ));
    assert!(freed < FREED_WITHIN, "freed after {freed:?}");
    // The server ignores the end of its stdin, so close waits out its grace period before
    // SIGTERM (CLOSE_GRACE, 2 s); nothing is added for the stuck write.
    assert!(closed < Duration::from_secs(5), "close took {closed:?}");
}

#[test]
fn other_calls_are_not_held_behind_a_write_that_cannot_finish() {
    let server = Stalled::start("write_others");
    let _stuck = server.big_call(RequestOptions::default());

    let started = Instant::now();
    let other = server.call(
        "echo",
        json!({ "text": "small" }),
        RequestOptions::with_timeout(Duration::from_millis(200)),
    );
    let (outcome, returned_at) = outcome_within(&other, Duration::from_secs(5), "other call");
    let took = returned_at.duration_since(started);
    assert_eq!(outcome.unwrap_err().status, Status::Timeout);
    common::report_figure(&format!(
        "stdio, a call behind a 4 MiB request the server does not read, timeout 200 ms: TIMEOUT after {:.1} ms",
        took.as_secs_f64() * 1000.0
    ));
    assert!(
        took < Duration::from_millis(200) + FREED_WITHIN,
        "took {took:?}"
    );
}

/// The server stops reading, then reads again. A big request cancelled in the middle of its
/// write is finished on the wire and followed by its cancel notice; a small one that timed out
/// while queued behind it was never written, so it is never sent and gets no notice. Every line the
/// server read is whole JSON.
#[test]
fn a_cancelled_request_is_finished_whole_before_its_notice_when_the_server_reads_again() {
    let server = Stalled::start("write_order");
    let big_token = CancellationToken::new();
    let big = server.big_call(RequestOptions::with_cancellation(&big_token));
    // Queued behind the big one (the pipe is full), and timed out before any of it is written.
    let small = server.call(
        "echo",
        json!({ "text": "queued" }),
        RequestOptions::with_timeout(Duration::from_millis(100)),
    );
    let (small, _) = outcome_within(&small, FREED_WITHIN * 5, "queued call");
    let small = small.unwrap_err();
    assert_eq!(small.status, Status::Timeout);
    assert!(big_token.cancel(Some("big")));
    let (big, _) = outcome_within(&big, FREED_WITHIN * 5, "cancel");
    let big = big.unwrap_err();
    assert_eq!(big.status, Status::Cancelled);

    server.resume();
    // The barrier: once this is answered, the server has read every request queued before
    // it. The big request's notice goes once its last byte is written, from the dispatcher,
    // so it may come after the ping: wait for it (bounded).
    server
        .client
        .ping(&RequestOptions::with_timeout(Duration::from_secs(10)))
        .expect("the connection works again");
    let big_id = big.request_id.expect("the big request was sent");
    let lines = wait_for_log(&server.log, |lines| {
        cancels(lines)
            .iter()
            .any(|l| l["params"]["requestId"] == big_id)
    });

    let torn: Vec<String> = lines
        .iter()
        .filter_map(|l| l.as_str().map(|s| s.chars().take(80).collect()))
        .collect();
    assert!(torn.is_empty(), "lines that are not whole JSON: {torn:?}");
    let request = request_index(&lines, big_id).expect("the big request was read whole");
    assert_eq!(
        lines[request]["params"]["arguments"]["padding"]
            .as_str()
            .map(str::len),
        Some(BIG)
    );
    let cancel = lines
        .iter()
        .position(|l| is_method(l, "notifications/cancelled") && l["params"]["requestId"] == big_id)
        .expect("the big request's cancel notice");
    assert!(
        request < cancel,
        "the cancel notice came before its request"
    );

    assert_eq!(
        small.request_id, None,
        "a request never written is reported as never sent"
    );
    assert!(
        !lines
            .iter()
            .any(|l| l["params"]["arguments"]["text"] == "queued"),
        "a request that timed out before its first byte was written is never sent"
    );
    assert!(
        cancels(&lines)
            .iter()
            .all(|l| l["params"]["requestId"] == big_id),
        "and gets no notice"
    );
}
