//! What a client costs in threads: an idle stdio client has none of its own. Its stdout,
//! stderr and exit are watched by the process's one reactor thread (`mcpc-reactor`), its cancel
//! notices and answers run on the shared `mcpc-io` pool and its callbacks on the shared
//! `mcpc-pool` (stderr callbacks on `mcpc-io-worker`), whatever the number of clients; those
//! belong to the process, end when idle and are not counted here. Close leaves nothing behind,
//! also when a process the server started still holds its pipes. Sequential HTTP calls reuse
//! one worker thread, idle workers serve every client of the process, and a blocking HTTP call
//! runs its exchange on the caller's thread (calls in flight add no thread). In a test binary
//! of their own, so that no other test's threads come and go while they count; the tests take
//! turns (`SERIAL`).

mod common;

use common::http_server::{http_requests, posts_of, HttpServer};
use common::*;
use mcpc::handlers::{Callbacks, Progress};
use mcpc::{Client, ClientOptions, ConnectMode, Request, RequestOptions};
use serde_json::json;
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

/// The threads the process shares between all its clients: the reactor, the workers that run
/// what the reactor hands off, the pools for cancel notices and answers, for host callbacks and
/// for started requests' completions, the completions' clock, and the thread that starts stdio
/// servers (each stays a few seconds after its last job).
const SHARED_THREADS: [&str; 7] = [
    "mcpc-reactor",
    "mcpc-spawn",
    "mcpc-io-worker",
    "mcpc-io",
    "mcpc-pool",
    "mcpc-complete",
    "mcpc-timer",
];

/// The names of this process's threads that the library started for its clients (all are
/// named `mcpc-...`; the test harness's own threads come and go and are not counted, nor are
/// the process-wide ones).
fn library_threads() -> Vec<String> {
    let names: Vec<String> = common::thread_names::library_threads()
        .into_iter()
        .filter(|name| !SHARED_THREADS.contains(&name.as_str()))
        .collect();
    names
}

fn threads() -> usize {
    library_threads().len()
}

/// The thread count once it has settled on `want` (threads end a moment after being joined
/// by the kernel's reckoning), or what it is after 5 s.
fn threads_settled(want: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(5);
    while threads() != want && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    threads()
}

#[test]
fn an_idle_stdio_client_has_no_thread_of_its_own_and_callbacks_add_none() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = threads();
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    let options = ClientOptions {
        callbacks: Callbacks {
            on_progress: Some(Arc::new(move |_: &Progress| {
                counter.fetch_add(1, Ordering::Relaxed);
            })),
            ..Callbacks::default()
        },
        ..ClientOptions::default()
    };
    let client = connect_with(config(&[]), options);
    client.ping(&RequestOptions::default()).unwrap();
    assert_eq!(
        threads_settled(before),
        before,
        "idle client: {:?}",
        library_threads()
    );
    let reactors = common::thread_names::library_threads()
        .iter()
        .filter(|name| *name == "mcpc-reactor")
        .count();
    assert_eq!(reactors, 1, "one reactor for the process");

    // A call whose server reports progress: the client-wide callback runs on the shared pool.
    let opts = RequestOptions {
        progress_token: Some(json!("t")),
        ..RequestOptions::default()
    };
    client
        .call_tool("progress", Some(json!({"steps": 2})), &opts)
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while seen.load(Ordering::Relaxed) < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(seen.load(Ordering::Relaxed), 2, "progress callbacks run");
    assert_eq!(threads_settled(before), before, "with callbacks");

    client.close();
    assert_eq!(threads_settled(before), before, "after close");
}

/// The ids of this process's threads named `name`.
fn threads_named(name: &str) -> HashSet<String> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| {
            let task = task.ok()?;
            let comm = std::fs::read_to_string(task.path().join("comm")).ok()?;
            (comm.trim() == name).then(|| task.file_name().to_string_lossy().into_owned())
        })
        .collect()
}

/// Fifty clients that each completed one started call (its completion run on the client's
/// completion thread, its timeout watched meanwhile) hold at most two completion threads in
/// all: a client's completion thread is a strand of the process's completion pool, not a
/// thread of its own.
#[test]
fn started_calls_of_many_clients_share_a_few_completion_threads() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let clients: Vec<Client> = (0..50).map(|_| connect(&[])).collect();
    let opts = RequestOptions {
        timeout: Some(Duration::from_secs(60)),
        ..RequestOptions::default()
    };
    for (n, client) in clients.iter().enumerate() {
        let (done, completed) = crossbeam_channel::bounded(1);
        client
            .start(Request::Ping, &opts, move |outcome| {
                let thread = std::thread::current().name().map(str::to_owned);
                done.send((outcome.is_ok(), thread)).unwrap();
            })
            .unwrap();
        let (ok, thread) = completed
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("client {n}: no completion"));
        assert!(ok, "client {n}: the ping failed");
        assert_eq!(thread.as_deref(), Some("mcpc-complete"), "client {n}");
    }
    let completion_threads = threads_named("mcpc-complete").len();
    assert!(
        completion_threads <= 2,
        "{completion_threads} completion threads for 50 clients"
    );
    let clocks = threads_named("mcpc-timer").len();
    assert!(clocks <= 1, "{clocks} clock threads");
    drop(clients);
}

#[test]
fn sequential_http_calls_reuse_one_worker_thread() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = HttpServer::start("threads_http_reuse", &[]);
    let mut config = server.config();
    config.listen = false; // no standalone stream: every mcpc-http thread runs a call
    let options = ClientOptions {
        mode: ConnectMode::Legacy,
        ..ClientOptions::default()
    };
    let client = Client::http(config, options);
    client.connect().unwrap();
    let mut seen = HashSet::new();
    for _ in 0..50 {
        client.ping(&RequestOptions::default()).unwrap();
        seen.extend(threads_named("mcpc-http"));
    }
    // A thread per request would show many ids over 50 calls. A few at most: the caller may send
    // its next request while the workers of the last calls are still draining their streams
    // (and, on a loaded machine, not yet idle), and then another takes it or one is started.
    // None at all when every stream's end came with its answer: the caller read it itself
    // (transport/http/body_end.rs).
    assert!(seen.len() <= 4, "worker threads seen: {seen:?}");
    client.close();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !threads_named("mcpc-http").is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        threads_named("mcpc-http").is_empty(),
        "close ends idle workers"
    );
}

/// Eight blocking HTTP calls in flight: each caller runs its own exchange on its own thread,
/// so no worker thread is started for them (a worker per exchange in flight would add eight);
/// a cancel still aborts each at once.
#[test]
fn blocking_http_calls_in_flight_run_on_their_callers_threads() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for mode in [ConnectMode::Legacy, ConnectMode::Modern] {
        let server = HttpServer::start(
            "threads_http_caller",
            if mode == ConnectMode::Modern {
                &["--modern"]
            } else {
                &[]
            },
        );
        let mut config = server.config();
        config.listen = false;
        let options = ClientOptions {
            mode,
            ..ClientOptions::default()
        };
        let client = Arc::new(Client::http(config, options));
        client.connect().unwrap();
        client.ping(&RequestOptions::default()).ok();
        let before = threads_named("mcpc-http").len();

        let token = mcpc::CancellationToken::new();
        let callers: Vec<_> = (0..8)
            .map(|_| {
                let (client, token) = (client.clone(), token.clone());
                std::thread::spawn(move || {
                    let opts = RequestOptions::with_cancellation(&token);
                    client.call_tool("slow", Some(json!({ "ms": 60_000 })), &opts)
                })
            })
            .collect();
        let lines =
            server.wait_for(|lines| posts_of(&http_requests(lines), "tools/call").len() == 8);
        assert_eq!(posts_of(&http_requests(&lines), "tools/call").len(), 8);
        let during = threads_named("mcpc-http").len();
        // The ping's answer frees its caller before the rest of its stream is drained, so the
        // one worker that drains it may start only after `before` was counted (seen on a
        // loaded machine): at most that one, never one per call in flight.
        assert!(
            during <= before + 1,
            "{mode:?}: {during} mcpc-http threads with 8 calls in flight, {before} before"
        );

        let cancelled_at = Instant::now();
        token.cancel(Some("done"));
        for caller in callers {
            let error = caller.join().unwrap().unwrap_err();
            assert_eq!(error.status, mcpc::Status::Cancelled, "{mode:?}");
        }
        assert!(
            cancelled_at.elapsed() < Duration::from_secs(5),
            "{mode:?}: the callers were not freed by the cancel"
        );
        client.close();
    }
}

/// A server that starts a process in a session of its own (setsid) holding its stdin, stdout
/// and stderr, then exits: the exit is seen without a thread of the client's, and
/// close leaves no thread of ours behind, none blocked on a pipe the other process holds.
#[test]
fn close_leaves_no_thread_blocked_on_pipes_a_descendant_holds() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = threads();
    let client = connect_with(config(&[]), ClientOptions::default());
    let detached = client
        .call_tool(
            "detach_child",
            Some(json!({"secs": 600})),
            &RequestOptions::default(),
        )
        .unwrap();
    let detached: libc::pid_t = text(&detached).parse().unwrap();
    let crashed = client.call_tool(
        "crash",
        None,
        &RequestOptions::with_timeout(Duration::from_secs(10)),
    );
    assert_eq!(crashed.unwrap_err().status, mcpc::Status::TransportError);
    // The exit was seen on the reactor, which drains what the descendant may write to stderr
    // until close: no thread of the client's.
    assert_eq!(
        threads_settled(before),
        before,
        "after the exit: {:?}",
        library_threads()
    );
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        client.close();
        let _ = tx.send(());
    });
    let closed = rx.recv_timeout(Duration::from_secs(10)).is_ok();
    let left = threads_settled(before);
    // SAFETY: kill has no memory effects.
    unsafe { libc::kill(detached, libc::SIGKILL) };
    assert!(closed, "close returned");
    assert_eq!(left, before, "after close: {:?}", library_threads());
}

/// A custom transport that answers `initialize` and everything else at once; every round trip
/// runs on a worker thread (`mcpc-custom`).
struct Answering;

impl mcpc::BlockingTransport for Answering {
    fn round_trip(&self, request: &str, on_sent: &mut dyn FnMut()) -> mcpc::Result<String> {
        on_sent();
        let request: serde_json::Value = serde_json::from_str(request).unwrap();
        let result = match request["method"].as_str() {
            Some("initialize") => json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "serverInfo": {"name": "answering", "version": "1"}
            }),
            _ => json!({}),
        };
        Ok(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}).to_string())
    }

    fn notify(&self, _frame: &str) -> mcpc::Result<()> {
        Ok(())
    }

    fn close(&self) {}
}

/// Fifty clients, one call each, one after another: a worker that finished one client's call
/// takes the next client's, so the calls share a thread or two (a pool of workers per client
/// would start one per client, each staying idle for its next call).
#[test]
fn idle_workers_are_shared_across_clients() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let clients: Vec<Client> = (0..50)
        .map(|_| {
            let client = Client::custom(Answering, ClientOptions::default());
            client.connect().unwrap();
            client
        })
        .collect();
    let mut seen = HashSet::new();
    for client in &clients {
        client.ping(&RequestOptions::default()).unwrap();
        seen.extend(threads_named("mcpc-custom"));
    }
    assert!(seen.len() <= 4, "worker threads seen: {}", seen.len());
    clients.iter().for_each(|client| client.close());
}
