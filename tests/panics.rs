//! A panic on a library thread ends the call it strands with INTERNAL_ERROR, and nothing reaches
//! stderr: Rust's default panic hook prints "thread ... panicked" even for a caught panic, and
//! the library must never write to stderr.
//!
//! The panics come through the public API: a custom transport written in Rust whose round trip
//! panics (it runs on a library worker thread, which used to die with the call left waiting
//! forever), a Rust request handler that panics (on a handler thread) and a Rust progress
//! callback that panics (on the callback thread). The checks
//! run in a child process (this test binary again, running the ignored test), so its real
//! stderr can be read: inside the test harness a panic's text would be captured.

mod common;

use common::child_process::run_ignored_test;
use mcpc::handlers::{Progress, RequestHandler, ServerRequest};
use mcpc::BlockingTransport;
use mcpc::{Client, ClientOptions, RequestOptions, Result, Status};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Far more than a caught panic needs; the old code left the call waiting until this.
const TIMEOUT: Duration = Duration::from_secs(20);

/// Answers everything, except that `tools/call` of the tool "explode" panics.
struct Exploding;

impl BlockingTransport for Exploding {
    fn round_trip(&self, request: &str, on_sent: &mut dyn FnMut()) -> Result<String> {
        on_sent();
        let request: Value = serde_json::from_str(request).unwrap();
        let result = match request["method"].as_str().unwrap() {
            "initialize" => json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "serverInfo": {"name": "exploding", "version": "1"}
            }),
            "tools/call" if request["params"]["name"] == "explode" => {
                panic!("the host's transport has a bug")
            }
            _ => json!({}),
        };
        Ok(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}).to_string())
    }

    fn notify(&self, _frame: &str) -> Result<()> {
        Ok(())
    }

    fn close(&self) {}
}

#[test]
#[ignore = "run in a child process by caught_panics_end_their_calls_and_print_nothing"]
fn caught_panics_child() {
    // A Rust custom transport whose round trip panics, on a library worker thread.
    let options = ClientOptions {
        mode: mcpc::ConnectMode::Legacy,
        ..ClientOptions::default()
    };
    let client = Client::custom(Exploding, options);
    client.connect().unwrap();
    let timeout = RequestOptions::with_timeout(TIMEOUT);
    for _ in 0..3 {
        let started = Instant::now();
        let error = client.call_tool("explode", None, &timeout).unwrap_err();
        assert_eq!(error.status, Status::InternalError, "{error}");
        assert!(error.message.contains("has a bug"), "{error}");
        assert!(started.elapsed() < TIMEOUT / 2, "{:?}", started.elapsed());
        // The client goes on.
        client.ping(&timeout).unwrap();
    }
    client.close();

    // A request handler that panics (on a handler thread), and a progress callback that
    // panics (on the callback thread), against our stdio test server.
    let panicking: RequestHandler = Arc::new(|_: &ServerRequest| panic!("handler bug"));
    let mut options = ClientOptions::default();
    options
        .callbacks
        .request_handlers
        .insert("roots/list".into(), panicking);
    let client = common::connect_with(common::config(&[]), options);
    let answer = client
        .call_tool(
            "ask_client",
            Some(json!({"method": "roots/list"})),
            &timeout,
        )
        .unwrap();
    assert!(answer.to_string().contains("panicked"), "{answer}");
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let with_progress = RequestOptions {
        on_progress: Some(Arc::new(move |_: &Progress| {
            counter.fetch_add(1, Ordering::SeqCst);
            panic!("progress callback bug");
        })),
        timeout: Some(TIMEOUT),
        ..RequestOptions::default()
    };
    client
        .call_tool("progress", Some(json!({"steps": 3})), &with_progress)
        .unwrap();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        3,
        "each callback ran (and panicked)"
    );
    client.close();
}

#[test]
fn caught_panics_end_their_calls_and_print_nothing() {
    let child = run_ignored_test("caught_panics_child", &[], 3 * TIMEOUT);
    assert!(child.passed, "{}\n{}", child.stdout, child.stderr);
    assert!(
        child.stderr.is_empty(),
        "the library wrote to stderr:\n{}",
        child.stderr
    );
}
