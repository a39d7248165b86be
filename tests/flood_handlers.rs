//! A server that sends many sampling requests at once cannot make the client run a thread for
//! each: at most `MAX_SERVER_REQUEST_HANDLERS` handlers run, the others are answered -32603 at
//! once, and the ones that ran answer once they finish.

mod common;

use common::{log_path, wait_for_log};
use mcpc::handlers::{Callbacks, LogHandler, RequestHandler, ServerRequest};
use mcpc::limits::{MAX_SERVER_REQUEST_HANDLERS, MAX_SERVER_REQUEST_HANDLER_BYTES};
use mcpc::{Client, ClientOptions, HandlerError, LogLevel, RequestOptions};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::Duration;

const REQUESTS: usize = 200;

fn error_code(line: &Value) -> Option<i64> {
    line.pointer("/error/code").and_then(Value::as_i64)
}

/// The test server, logging to `log`, sending `count` sampling requests once initialized.
fn sampling_flood(log: &std::path::Path, count: usize) -> mcpc::StdioConfig {
    common::config(&[
        "--log",
        log.to_str().unwrap(),
        "--flood",
        "sampling/createMessage",
        "--flood-count",
        &count.to_string(),
    ])
}

#[test]
fn a_flood_of_sampling_requests_runs_a_bounded_number_of_handlers() {
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    let handler: RequestHandler = {
        let (running, peak, gate) = (running.clone(), peak.clone(), gate.clone());
        Arc::new(move |_: &ServerRequest| {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            let (open, opened) = &*gate;
            let guard = open.lock().unwrap();
            // Bounded, so a failing run does not hang.
            let _ = opened.wait_timeout_while(guard, Duration::from_secs(30), |open| !*open);
            running.fetch_sub(1, Ordering::SeqCst);
            Ok(json!({
                "role": "assistant",
                "content": { "type": "text", "text": "ok" },
                "model": "test"
            }))
        })
    };
    let options = ClientOptions {
        callbacks: Callbacks {
            request_handlers: [("sampling/createMessage".to_owned(), handler)].into(),
            ..Callbacks::default()
        },
        ..ClientOptions::default()
    };
    let log = log_path("flood_handlers");
    let config = sampling_flood(&log, REQUESTS);
    let client = common::connect_with(config, options);
    let refused = REQUESTS - MAX_SERVER_REQUEST_HANDLERS;
    let lines = wait_for_log(&log, |lines| {
        lines
            .iter()
            .filter(|l| error_code(l) == Some(-32603))
            .count()
            >= refused
    });
    let errors = lines.iter().filter(|l| error_code(l) == Some(-32603));
    let seen_peak = peak.load(Ordering::SeqCst);
    {
        let (open, opened) = &*gate;
        *open.lock().unwrap() = true;
        opened.notify_all();
    }
    assert_eq!(
        errors.count(),
        refused,
        "the requests past the limit are answered -32603 at once (peak of {seen_peak} handlers)"
    );
    assert!(
        seen_peak <= MAX_SERVER_REQUEST_HANDLERS,
        "{seen_peak} handlers ran at once"
    );
    assert_eq!(client.stats().refused_requests, refused as u64);
    let lines = wait_for_log(&log, |lines| {
        lines.iter().filter(|l| l.get("result").is_some()).count() >= MAX_SERVER_REQUEST_HANDLERS
    });
    let answered = lines.iter().filter(|l| l.get("result").is_some()).count();
    // The initialize response is not in the server's log: every result line is a handler's.
    assert_eq!(answered, MAX_SERVER_REQUEST_HANDLERS);
    client.close();
}

/// Large sampling requests (4 MiB of text each) run as many handlers as their bytes allow
/// (`MAX_SERVER_REQUEST_HANDLER_BYTES`), not 32 of them: the others are answered -32603 at
/// once, as past the count. Before, 20 such requests ran 20 handlers holding 80 MiB.
#[test]
fn large_sampling_requests_run_a_bounded_number_of_bytes_of_handlers() {
    const LARGE: usize = 20;
    const TEXT_BYTES: usize = 4 * 1024 * 1024;
    let most = MAX_SERVER_REQUEST_HANDLER_BYTES / TEXT_BYTES;
    let started = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    let handler: RequestHandler = {
        let (started, gate) = (started.clone(), gate.clone());
        Arc::new(move |_: &ServerRequest| {
            started.fetch_add(1, Ordering::SeqCst);
            let (open, opened) = &*gate;
            let guard = open.lock().unwrap();
            let _ = opened.wait_timeout_while(guard, Duration::from_secs(30), |open| !*open);
            Err(HandlerError {
                code: -32000,
                message: "done".into(),
            })
        })
    };
    let options = ClientOptions {
        callbacks: Callbacks {
            request_handlers: [("sampling/createMessage".to_owned(), handler)].into(),
            ..Callbacks::default()
        },
        ..ClientOptions::default()
    };
    let log = log_path("flood_handlers_large");
    let mut config = sampling_flood(&log, LARGE);
    config
        .argv
        .extend(["--flood-bytes".to_owned(), TEXT_BYTES.to_string()]);
    let client = common::connect_with(config, options);
    let refused = |lines: &[Value]| {
        lines
            .iter()
            .filter(|l| error_code(l) == Some(-32603))
            .count()
    };
    // 80 MiB to read and parse: a wider wait than `wait_for_log`'s.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let lines = loop {
        let lines = common::read_log(&log);
        if refused(&lines) >= LARGE - most || std::time::Instant::now() > deadline {
            break lines;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let ran = started.load(Ordering::SeqCst);
    {
        let (open, opened) = &*gate;
        *open.lock().unwrap() = true;
        opened.notify_all();
    }
    assert!(
        refused(&lines) >= LARGE - most,
        "{} of {LARGE} requests of 4 MiB refused, {ran} handlers ran (at most {most} fit)",
        refused(&lines)
    );
    assert!((1..=most).contains(&ran), "{ran} handlers ran");
    let message = lines
        .iter()
        .find(|l| error_code(l) == Some(-32603))
        .and_then(|l| l.pointer("/error/message"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    assert!(message.contains("MiB"), "{message}");
    client.close();
}

/// The library's warning about refused server requests reaches the host's log callback on the
/// callback thread, never on the reader thread that noticed (which holds the stdout reader):
/// a log callback that makes a blocking call on the same client gets its answer. Before, the
/// warning ran on the reader thread, and such a call waited for a reader that was itself.
#[test]
fn a_log_callback_may_call_the_client_while_a_flood_is_refused() {
    let slot: Arc<OnceLock<Weak<Client>>> = Arc::default();
    let (said, heard) = mpsc::channel();
    let on_log: LogHandler = {
        let slot = slot.clone();
        let said = Mutex::new(said);
        Arc::new(move |_: LogLevel, message: &str| {
            if !message.contains("refused") {
                return;
            }
            if let Some(client) = slot.get().and_then(Weak::upgrade) {
                let opts = RequestOptions {
                    timeout: Some(Duration::from_secs(5)),
                    ..RequestOptions::default()
                };
                let _ = said
                    .lock()
                    .unwrap()
                    .send(client.ping(&opts).map_err(|e| e.status));
            }
        })
    };
    let blocked = Arc::new((Mutex::new(false), Condvar::new()));
    let handler: RequestHandler = {
        let blocked = blocked.clone();
        Arc::new(move |_: &ServerRequest| {
            let (open, opened) = &*blocked;
            let guard = open.lock().unwrap();
            let _ = opened.wait_timeout_while(guard, Duration::from_secs(30), |open| !*open);
            Err(HandlerError {
                code: -32603,
                message: "not now".into(),
            })
        })
    };
    let options = ClientOptions {
        callbacks: Callbacks {
            on_log: Some(on_log),
            request_handlers: [("sampling/createMessage".to_owned(), handler)].into(),
            ..Callbacks::default()
        },
        ..ClientOptions::default()
    };
    let log = log_path("flood_handlers_log_calls");
    let config = sampling_flood(&log, REQUESTS * 10);
    let client = Arc::new(common::connect_with(config, options));
    let _ = slot.set(Arc::downgrade(&client));
    // Refusals are logged at the 1st, 2nd, 4th... 1024th: the flood starts once the client is
    // initialized, and the later ones come long after the slot is set.
    let answer = heard.recv_timeout(Duration::from_secs(20));
    {
        let (open, opened) = &*blocked;
        *open.lock().unwrap() = true;
        opened.notify_all();
    }
    if answer.is_err() {
        // The reader thread is stuck in the callback: closing would wait for it.
        std::mem::forget(client);
        panic!("the log callback's ping never returned");
    }
    assert!(answer.unwrap().is_ok(), "the log callback's ping failed");
    client.close();
}
