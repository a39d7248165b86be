//! The completion API: requests started without blocking, their results through a callback
//! (Rust `Client::start`, C `mcp_client_start_callback`) or a pollable completion queue
//! (`mcp_client_start`), with the blocking API's cancel, timeout and close guarantees.

mod common;

use common::*;
use mcpc::ffi::*;
use mcpc::{CancellationToken, Client, Request, RequestOptions, Status};
use serde_json::{json, Value};
use std::ffi::{c_void, CStr, CString};
use std::ptr::null;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const WIDE: Duration = Duration::from_secs(20);

fn echo(text: &str, delay_ms: u64) -> Request {
    Request::CallTool {
        name: "echo".into(),
        arguments: Some(json!({ "text": text, "delay_ms": delay_ms }).into()),
    }
}

fn slow(ms: u64) -> Request {
    Request::CallTool {
        name: "slow".into(),
        arguments: Some(json!({ "ms": ms }).into()),
    }
}

/// Starts `request`; its outcome goes to `tx` with `tag`.
fn start_to(
    client: &Client,
    request: Request,
    opts: &RequestOptions,
    tx: &Sender<(u64, mcpc::Result<Value>)>,
    tag: u64,
) {
    let tx = tx.clone();
    client
        .start(request, opts, move |outcome| {
            let _ = tx.send((tag, outcome));
        })
        .expect("started");
}

/// Waits until the server has logged `n` requests of `method`.
fn wait_for_requests(log: &std::path::Path, method: &str, n: usize) -> Vec<Value> {
    let lines = wait_for_log(log, |l| {
        l.iter().filter(|x| is_method(x, method)).count() >= n
    });
    assert!(
        lines.iter().filter(|x| is_method(x, method)).count() >= n,
        "the server never got {n} {method}: {lines:?}"
    );
    lines
}

#[test]
fn many_in_flight_from_one_thread_are_matched_to_their_tags() {
    let client = connect(&[]);
    let (tx, rx) = channel();
    let n = 64;
    for tag in 0..n {
        // Later tags answer sooner, so completions arrive out of order.
        start_to(
            &client,
            echo(&format!("call {tag}"), (n - tag) % 7 * 3),
            &RequestOptions::default(),
            &tx,
            tag,
        );
    }
    let mut seen = vec![false; n as usize];
    for _ in 0..n {
        let (tag, outcome) = rx.recv_timeout(WIDE).expect("every call completes");
        assert_eq!(text(&outcome.unwrap()), format!("call {tag}"));
        assert!(!seen[tag as usize], "tag {tag} completed twice");
        seen[tag as usize] = true;
    }
    // Every kind of request starts: a page walk, one page, a prompt, a ping, an error.
    let requests = [
        Request::Tools,
        Request::ListTools { cursor: None },
        Request::Ping,
        Request::Other {
            method: "no/such/method".into(),
            params: None,
        },
    ];
    for (tag, request) in requests.into_iter().enumerate() {
        start_to(
            &client,
            request,
            &RequestOptions::default(),
            &tx,
            tag as u64,
        );
    }
    let mut outcomes: Vec<_> = (0..4).map(|_| rx.recv_timeout(WIDE).unwrap()).collect();
    outcomes.sort_by_key(|(tag, _)| *tag);
    let tools = outcomes[0].1.as_ref().unwrap();
    assert!(tools["tools"].as_array().is_some_and(|t| !t.is_empty()));
    assert!(outcomes[1].1.as_ref().unwrap()["tools"].is_array());
    assert!(outcomes[2].1.is_ok());
    assert_eq!(
        outcomes[3].1.as_ref().unwrap_err().status,
        Status::ServerError
    );
    assert!(rx.try_recv().is_err(), "one completion per start");
}

#[test]
fn an_all_pages_walk_started_without_blocking_gets_every_page() {
    let log = log_path("completion-pages");
    let client = connect_logged(&log, &["--page-size", "1"]);
    let blocking = client.tools(&RequestOptions::default()).unwrap();
    let (tx, rx) = channel();
    start_to(&client, Request::Tools, &RequestOptions::default(), &tx, 1);
    let (_, outcome) = rx.recv_timeout(WIDE).unwrap();
    assert_eq!(outcome.unwrap()["tools"].as_array().unwrap(), &blocking);
    assert!(blocking.len() > 1, "one page per tool, so several requests");
}

#[test]
fn cancel_of_a_started_call_completes_once_and_tells_the_server_once() {
    let log = log_path("completion-cancel");
    let client = connect_logged(&log, &[]);
    let token = CancellationToken::new();
    let (tx, rx) = channel();
    start_to(
        &client,
        slow(30_000),
        &RequestOptions::with_cancellation(&token),
        &tx,
        7,
    );
    wait_for_requests(&log, "tools/call", 1);
    let start = Instant::now();
    assert!(token.cancel(Some("no longer needed")));
    let (tag, outcome) = rx.recv_timeout(WIDE).unwrap();
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(tag, 7);
    let error = outcome.unwrap_err();
    assert_eq!(error.status, Status::Cancelled);
    assert_eq!(error.cancel_reason.as_deref(), Some("no longer needed"));
    let id = error.request_id.expect("the request was sent");
    assert!(
        !token.cancel(Some("again")),
        "the second cancel changes nothing"
    );
    // The notice is written by the engine's dispatcher after the completion is delivered:
    // wait for it, then a ping is the barrier after which no second one may appear.
    wait_for_log(&log, |lines| !cancels(lines).is_empty());
    let lines = log_after_ping(&client, &log);
    let cancels = cancels(&lines);
    assert_eq!(cancels.len(), 1, "one notice: {lines:?}");
    assert_eq!(cancels[0]["params"]["requestId"], json!(id));
    assert!(
        request_index(&lines, id).unwrap()
            < lines
                .iter()
                .position(|l| is_method(l, "notifications/cancelled"))
                .unwrap()
    );
    assert!(rx.try_recv().is_err(), "exactly one completion");
}

#[test]
fn a_started_call_with_a_cancelled_token_sends_nothing() {
    let log = log_path("completion-precancel");
    let client = connect_logged(&log, &[]);
    let token = CancellationToken::new();
    token.cancel(Some("early"));
    let (tx, rx) = channel();
    start_to(
        &client,
        slow(5000),
        &RequestOptions::with_cancellation(&token),
        &tx,
        1,
    );
    let error = rx.recv_timeout(WIDE).unwrap().1.unwrap_err();
    assert_eq!(error.status, Status::Cancelled);
    assert_eq!(error.request_id, None);
    let lines = log_after_ping(&client, &log);
    assert!(
        !lines.iter().any(|l| is_method(l, "tools/call")),
        "{lines:?}"
    );
    assert!(cancels(&lines).is_empty());
}

#[test]
fn a_started_call_times_out_like_a_blocking_one() {
    let log = log_path("completion-timeout");
    let client = connect_logged(&log, &[]);
    let (tx, rx) = channel();
    let start = Instant::now();
    start_to(
        &client,
        slow(30_000),
        &RequestOptions::with_timeout(Duration::from_millis(200)),
        &tx,
        1,
    );
    // A short call started later completes first: the timer serves every call.
    start_to(
        &client,
        echo("quick", 0),
        &RequestOptions::default(),
        &tx,
        2,
    );
    let (tag, quick) = rx.recv_timeout(WIDE).unwrap();
    assert_eq!((tag, text(&quick.unwrap())), (2, "quick"));
    let error = rx.recv_timeout(WIDE).unwrap().1.unwrap_err();
    assert!(start.elapsed() >= Duration::from_millis(200));
    assert_eq!(error.status, Status::Timeout);
    let id = error.request_id.unwrap();
    let lines = wait_for_log(&log, |l| !cancels(l).is_empty());
    assert_eq!(cancels(&lines)[0]["params"]["requestId"], json!(id));
}

/// The clients' completion threads share a pool: one client's completion blocked in host code
/// holds up neither another client's completions nor its timeouts.
#[test]
fn a_blocked_completion_holds_up_no_other_client() {
    let (blocked, other) = (connect(&[]), connect(&[]));
    let (release_tx, release) = std::sync::mpsc::channel::<()>();
    let (entered_tx, entered) = channel();
    blocked
        .start(Request::Ping, &RequestOptions::default(), move |_| {
            entered_tx.send(()).unwrap();
            let _ = release.recv_timeout(WIDE * 2);
        })
        .unwrap();
    entered
        .recv_timeout(WIDE)
        .expect("the first completion runs");
    let (tx, rx) = channel();
    start_to(
        &other,
        slow(30_000),
        &RequestOptions::with_timeout(Duration::from_millis(100)),
        &tx,
        1,
    );
    start_to(&other, echo("free", 0), &RequestOptions::default(), &tx, 2);
    let mut outcomes: Vec<_> = (0..2)
        .map(|_| rx.recv_timeout(WIDE).expect("the other client completes"))
        .collect();
    outcomes.sort_by_key(|(tag, _)| *tag);
    assert_eq!(outcomes[0].1.as_ref().unwrap_err().status, Status::Timeout);
    assert_eq!(text(outcomes[1].1.as_ref().unwrap()), "free");
    release_tx.send(()).unwrap();
}

#[test]
fn close_completes_every_pending_start_once_with_closed() {
    let log = log_path("completion-close");
    let client = connect_logged(&log, &[]);
    let (tx, rx) = channel();
    let n = 10;
    for tag in 0..n {
        start_to(&client, slow(30_000), &RequestOptions::default(), &tx, tag);
    }
    wait_for_requests(&log, "tools/call", n as usize);
    let start = Instant::now();
    client.close();
    assert!(start.elapsed() < Duration::from_secs(10));
    // Every completion was delivered before close returned.
    let mut tags: Vec<u64> = rx
        .try_iter()
        .map(|(tag, outcome)| {
            assert_eq!(outcome.unwrap_err().status, Status::Closed);
            tag
        })
        .collect();
    tags.sort();
    assert_eq!(tags, (0..n).collect::<Vec<_>>());
    let after = client.start(Request::Ping, &RequestOptions::default(), |_| {
        panic!("a start refused has no completion")
    });
    assert_eq!(after.unwrap_err().status, Status::Closed);
}

#[test]
fn a_completion_may_start_cancel_and_close() {
    let log = log_path("completion-reentry");
    let client = Arc::new(connect_logged(&log, &[]));
    let (tx, rx) = channel::<(&'static str, mcpc::Result<Value>)>();
    let token = CancellationToken::new();
    // A pending call that the first completion cancels.
    {
        let tx = tx.clone();
        client
            .start(
                slow(30_000),
                &RequestOptions::with_cancellation(&token),
                move |o| {
                    let _ = tx.send(("cancelled", o));
                },
            )
            .unwrap();
    }
    // A pending call that the close ends.
    {
        let tx = tx.clone();
        client
            .start(slow(30_000), &RequestOptions::default(), move |o| {
                let _ = tx.send(("closed", o));
            })
            .unwrap();
    }
    wait_for_requests(&log, "tools/call", 2);
    let weak = Arc::downgrade(&client);
    client
        .start(echo("first", 0), &RequestOptions::default(), move |first| {
            let _ = tx.send(("first", first));
            let client = weak.upgrade().expect("alive");
            token.cancel(Some("from a completion"));
            // A blocking call from a completion works (its own wait does not need this thread).
            let _ = tx.send(("blocking", client.ping(&RequestOptions::default())));
            let (tx2, client2) = (tx.clone(), Arc::downgrade(&client));
            client
                .start(
                    echo("second", 0),
                    &RequestOptions::default(),
                    move |second| {
                        let _ = tx2.send(("second", second));
                        // Close from a completion: the other pending call completes first.
                        client2.upgrade().expect("alive").close();
                        let _ = tx2.send(("closed-from-completion", Ok(Value::Null)));
                    },
                )
                .unwrap();
        })
        .unwrap();
    let mut got = Vec::new();
    while got.len() < 6 {
        got.push(rx.recv_timeout(WIDE).expect("every completion arrives"));
    }
    let find = |name: &str| &got.iter().find(|(n, _)| *n == name).unwrap().1;
    assert_eq!(text(find("first").as_ref().unwrap()), "first");
    assert_eq!(text(find("second").as_ref().unwrap()), "second");
    assert!(find("blocking").is_ok());
    assert_eq!(
        find("cancelled").as_ref().unwrap_err().status,
        Status::Cancelled
    );
    assert_eq!(find("closed").as_ref().unwrap_err().status, Status::Closed);
    let order: Vec<_> = got.iter().map(|(n, _)| *n).collect();
    let pos = |name| order.iter().position(|n| *n == name).unwrap();
    assert!(pos("closed") < pos("closed-from-completion"), "{order:?}");
    drop(got);
    assert_eq!(
        Arc::strong_count(&client),
        1,
        "no completion holds the client"
    );
}

#[test]
fn dropping_the_last_handle_inside_a_completion_closes_the_client() {
    let log = log_path("completion-drop-inside");
    let client = connect_logged(&log, &[]);
    let (tx, rx) = channel();
    start_to(&client, slow(30_000), &RequestOptions::default(), &tx, 1);
    wait_for_requests(&log, "tools/call", 1);
    let holder = Arc::new(Mutex::new(Some(client)));
    let inside = holder.clone();
    let tx2 = tx.clone();
    holder
        .lock()
        .unwrap()
        .as_ref()
        .unwrap()
        .start(Request::Ping, &RequestOptions::default(), move |_| {
            let client = inside.lock().unwrap().take().unwrap();
            drop(client); // close and free on the completion thread
            let _ = tx2.send((2, Ok(Value::Null)));
        })
        .unwrap();
    let mut tags = [
        rx.recv_timeout(WIDE).unwrap(),
        rx.recv_timeout(WIDE).unwrap(),
    ];
    tags.sort_by_key(|(tag, _)| *tag);
    assert_eq!(tags[0].1.as_ref().unwrap_err().status, Status::Closed);
    assert_eq!(tags[0].0, 1);
    assert_eq!(tags[1].0, 2);
}

// The C API.

unsafe fn c_client(log: &std::path::Path) -> *mut mcp_client {
    c_client_with(&["--log", log.to_str().unwrap()])
}

/// A connected C client of the test server run with `args`.
unsafe fn c_client_with(args: &[&str]) -> *mut mcp_client {
    let server = CString::new(SERVER.as_str()).unwrap();
    let args: Vec<CString> = args.iter().map(|a| CString::new(*a).unwrap()).collect();
    let mut argv = vec![server.as_ptr()];
    argv.extend(args.iter().map(|a| a.as_ptr()));
    argv.push(null());
    let client = mcp_client_new_stdio(argv.as_ptr(), std::ptr::null_mut());
    let connected = mcp_client_connect(client);
    assert_eq!(mcp_result_status(connected), mcp_status::Ok);
    let message = CStr::from_ptr(mcp_result_message(connected));
    assert_eq!(message.to_bytes(), b"", "an OK result's message is empty");
    mcp_result_free(connected);
    client
}

unsafe fn json_of(result: *mut mcp_result) -> Value {
    let text = mcp_result_json(result);
    assert!(
        !text.is_null(),
        "{}",
        CStr::from_ptr(mcp_result_message(result)).to_string_lossy()
    );
    serde_json::from_str(CStr::from_ptr(text).to_str().unwrap()).unwrap()
}

/// Once no more completions can come: a pop finds the queue empty (which disarms it, were it
/// armed late) and the queue is not readable.
unsafe fn assert_settled(queue: *mut mcp_completion_queue) {
    let (mut tag, mut result) = (0u64, std::ptr::null_mut());
    assert!(!mcp_completion_queue_pop(queue, &mut tag, &mut result));
    assert!(!readable(queue, 0), "a queue found empty is not readable");
}

/// Waits up to `timeout_ms` for the queue to say "pop now", as a host's event loop would: its
/// descriptor readable (poll), or on Windows its event object signaled (WaitForSingleObject).
#[cfg(unix)]
unsafe fn readable(queue: *mut mcp_completion_queue, timeout_ms: i32) -> bool {
    let mut pfd = libc::pollfd {
        fd: mcp_completion_queue_fd(queue),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut pfd, 1, timeout_ms) == 1 }
}

#[cfg(windows)]
unsafe fn readable(queue: *mut mcp_completion_queue, timeout_ms: i32) -> bool {
    use windows_sys::Win32::Foundation::WAIT_OBJECT_0;
    use windows_sys::Win32::System::Threading::WaitForSingleObject;
    let event = mcp_completion_queue_event(queue);
    assert!(!event.is_null(), "a Windows queue has an event");
    // SAFETY: the queue's event, open while the queue lives.
    unsafe { WaitForSingleObject(event, timeout_ms.max(0) as u32) == WAIT_OBJECT_0 }
}

#[test]
fn c_queue_in_a_poll_loop_matches_results_to_tags() {
    unsafe {
        let log = log_path("completion-c-queue");
        let client = c_client(&log);
        let queue = mcp_completion_queue_new();
        // A descriptor on POSIX systems, an event object on Windows, never both.
        #[cfg(unix)]
        {
            assert!(mcp_completion_queue_fd(queue) >= 0);
            assert!(mcp_completion_queue_event(queue).is_null());
        }
        #[cfg(windows)]
        {
            assert_eq!(mcp_completion_queue_fd(queue), -1);
            assert!(!mcp_completion_queue_event(queue).is_null());
        }
        assert!(!readable(queue, 0), "an empty queue is not readable");
        let n = 32u64;
        for tag in 0..n {
            let args = CString::new(json!({ "text": format!("c {tag}") }).to_string()).unwrap();
            let request = mcp_request_call_tool(c"echo".as_ptr(), args.as_ptr());
            assert_eq!(
                mcp_client_start(client, request, null(), queue, tag),
                mcp_status::Ok
            );
            mcp_request_free(request);
        }
        // A bad request completes with INVALID_ARGUMENT; a missing queue starts nothing.
        let bad = mcp_request_call_tool(null(), null());
        assert_eq!(
            mcp_client_start(client, bad, null(), queue, 1000),
            mcp_status::Ok
        );
        assert_eq!(
            mcp_client_start(client, bad, null(), std::ptr::null_mut(), 1),
            mcp_status::InvalidArgument
        );
        mcp_request_free(bad);
        let mut seen = std::collections::HashSet::new();
        let mut woken_for_nothing = 0;
        let deadline = Instant::now() + WIDE;
        while seen.len() < n as usize + 1 {
            assert!(
                Instant::now() < deadline,
                "completions missing: {}",
                seen.len()
            );
            if !readable(queue, 1000) {
                continue;
            }
            // Readable means a completion waits, but for an arming that came late (after the
            // pop that found the queue empty): at most one wake-up for nothing per completion,
            // never a descriptor that stays readable (a spin).
            let (mut tag, mut result) = (0u64, std::ptr::null_mut());
            let mut popped = 0;
            while mcp_completion_queue_pop(queue, &mut tag, &mut result) {
                if tag == 1000 {
                    assert_eq!(mcp_result_status(result), mcp_status::InvalidArgument);
                } else {
                    assert_eq!(text(&json_of(result)), format!("c {tag}"));
                }
                assert!(seen.insert(tag), "tag {tag} twice");
                mcp_result_free(result);
                popped += 1;
            }
            if popped == 0 {
                woken_for_nothing += 1;
                assert!(
                    woken_for_nothing <= seen.len(),
                    "readable with nothing to pop {woken_for_nothing} times"
                );
            }
        }
        // Everything has come: once a pop has found it empty, the queue is not readable.
        assert_settled(queue);
        mcp_client_free(client);
        assert!(!readable(queue, 0), "nothing more after free");
        mcp_completion_queue_free(queue);
    }
}

struct Seen {
    count: AtomicUsize,
    statuses: Mutex<Vec<(u64, mcp_status)>>,
}

unsafe extern "C" fn record(userdata: *mut c_void, tag: u64, result: *mut mcp_result) {
    let seen = &*(userdata as *const Seen);
    seen.statuses
        .lock()
        .unwrap()
        .push((tag, mcp_result_status(result)));
    mcp_result_free(result);
    seen.count.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn c_free_with_calls_pending_delivers_each_once_with_closed_before_it_returns() {
    unsafe {
        let log = log_path("completion-c-free");
        let client = c_client(&log);
        let seen = Box::new(Seen {
            count: AtomicUsize::new(0),
            statuses: Mutex::default(),
        });
        let userdata = &*seen as *const Seen as *mut c_void;
        let token = mcp_cancellation_new();
        let options = mcp_request_options_new();
        mcp_request_options_set_cancellation(options, token);
        let request = mcp_request_call_tool(c"slow".as_ptr(), c"{\"ms\": 30000}".as_ptr());
        let n = 8;
        for tag in 0..n {
            let opts = if tag == 0 { options } else { null() };
            let status =
                mcp_client_start_callback(client, request, opts, Some(record), userdata, tag);
            assert_eq!(status, mcp_status::Ok);
        }
        mcp_request_free(request);
        wait_for_requests(&log, "tools/call", n as usize);
        // The one with the token is cancelled first.
        assert!(mcp_cancellation_cancel(token, c"stop".as_ptr()));
        let deadline = Instant::now() + WIDE;
        while seen.count.load(Ordering::SeqCst) < 1 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        mcp_client_free(client);
        // Everything was delivered before free returned; the Box may go now.
        assert_eq!(seen.count.load(Ordering::SeqCst), n as usize);
        let mut statuses = seen.statuses.lock().unwrap().clone();
        statuses.sort_by_key(|(tag, _)| *tag);
        assert_eq!(statuses[0], (0, mcp_status::Cancelled));
        for (tag, status) in &statuses[1..] {
            assert_eq!(*status, mcp_status::Closed, "tag {tag}");
        }
        let cancel_lines = cancels(&read_log(&log)).len();
        assert_eq!(cancel_lines, 1, "the server heard of the cancel once");
        drop(seen);
        mcp_request_options_free(options);
        mcp_cancellation_free(token);
    }
}

unsafe extern "C" fn free_client(userdata: *mut c_void, _tag: u64, result: *mut mcp_result) {
    mcp_result_free(result);
    let slot = &*(userdata as *const Mutex<usize>);
    mcp_client_free(*slot.lock().unwrap() as *mut mcp_client);
}

#[test]
fn c_a_completion_callback_may_free_the_client() {
    unsafe {
        let log = log_path("completion-c-free-inside");
        let client = c_client(&log);
        let seen = Box::leak(Box::new(Seen {
            count: AtomicUsize::new(0),
            statuses: Mutex::default(),
        }));
        let pending = mcp_request_call_tool(c"slow".as_ptr(), c"{\"ms\": 30000}".as_ptr());
        let userdata = seen as *const Seen as *mut c_void;
        mcp_client_start_callback(client, pending, null(), Some(record), userdata, 1);
        mcp_request_free(pending);
        wait_for_requests(&log, "tools/call", 1);
        let slot: &'static Mutex<usize> = Box::leak(Box::new(Mutex::new(client as usize)));
        let ping = mcp_request_ping();
        let status = mcp_client_start_callback(
            client,
            ping,
            null(),
            Some(free_client),
            slot as *const _ as *mut c_void,
            2,
        );
        assert_eq!(status, mcp_status::Ok);
        mcp_request_free(ping);
        let deadline = Instant::now() + WIDE;
        while seen.count.load(Ordering::SeqCst) < 1 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        assert_eq!(
            *seen.statuses.lock().unwrap(),
            vec![(1, mcp_status::Closed)]
        );
    }
}

#[test]
fn over_http_in_both_eras_many_in_flight_and_a_cancel_reach_the_server() {
    use common::http_server::*;
    use mcpc::ConnectMode;
    for (mode, flags) in [
        (ConnectMode::Legacy, vec![]),
        (ConnectMode::Modern, vec!["--modern"]),
    ] {
        let server = HttpServer::start("completion_http", &flags);
        let client = server.connect(mode);
        let (tx, rx) = channel();
        let token = CancellationToken::new();
        start_to(
            &client,
            slow(30_000),
            &RequestOptions::with_cancellation(&token),
            &tx,
            100,
        );
        for tag in 0..8 {
            start_to(
                &client,
                echo(&format!("h {tag}"), 0),
                &RequestOptions::default(),
                &tx,
                tag,
            );
        }
        let mut done = 0;
        while done < 8 {
            let (tag, outcome) = rx.recv_timeout(WIDE).unwrap();
            assert_eq!(text(&outcome.unwrap()), format!("h {tag}"), "{mode:?}");
            done += 1;
        }
        server.wait_for(|lines| posts_of(&http_requests(lines), "tools/call").len() >= 9);
        token.cancel(Some("done with it"));
        let (tag, outcome) = rx.recv_timeout(WIDE).unwrap();
        assert_eq!(tag, 100);
        let error = outcome.unwrap_err();
        assert_eq!(error.status, Status::Cancelled, "{mode:?}");
        let id = error.request_id.unwrap();
        // The server sees the cancel: a notice (legacy) or the closed stream (modern).
        let lines = server.wait_for(|lines| {
            lines
                .iter()
                .any(|l| l["handler_done"] == id && l["cancelled"] == true)
        });
        assert!(
            lines
                .iter()
                .any(|l| l["handler_done"] == id && l["cancelled"] == true),
            "{mode:?}: the slow tool did not stop"
        );
        let notices = posts_of(&http_requests(&lines), "notifications/cancelled").len();
        assert_eq!(
            notices,
            usize::from(mode == ConnectMode::Legacy),
            "{mode:?}"
        );
    }
}

#[test]
fn input_required_rounds_run_on_the_completion_thread_and_a_cancel_ends_them() {
    let log = log_path("completion-rounds");
    let client = connect_logged(&log, &["--modern"]);
    let (tx, rx) = channel();
    let legs = |n: u64| Request::CallTool {
        name: "state_only".into(),
        arguments: Some(json!({ "legs": n }).into()),
    };
    start_to(&client, legs(3), &RequestOptions::default(), &tx, 1);
    let (_, outcome) = rx.recv_timeout(WIDE).unwrap();
    assert_eq!(text(&outcome.unwrap()), "legs done");
    // A long load-shedding exchange, cancelled between its legs.
    let token = CancellationToken::new();
    start_to(
        &client,
        legs(1000),
        &RequestOptions::with_cancellation(&token),
        &tx,
        2,
    );
    wait_for_requests(&log, "tools/call", 3 + 3);
    let start = Instant::now();
    token.cancel(Some("enough"));
    let (tag, outcome) = rx.recv_timeout(WIDE).unwrap();
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(tag, 2);
    assert_eq!(outcome.unwrap_err().status, Status::Cancelled);
}

#[test]
fn a_completion_that_panics_does_not_stop_the_others() {
    let client = connect(&[]);
    client
        .start(Request::Ping, &RequestOptions::default(), |_| {
            panic!("a host bug in a completion")
        })
        .unwrap();
    let (tx, rx) = channel();
    start_to(
        &client,
        echo("still here", 0),
        &RequestOptions::default(),
        &tx,
        1,
    );
    let (_, outcome) = rx
        .recv_timeout(WIDE)
        .expect("the completion thread goes on");
    assert_eq!(text(&outcome.unwrap()), "still here");
    let start = Instant::now();
    client.close();
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "close waited for nothing"
    );
}

#[test]
fn a_started_call_hears_its_own_progress_before_it_completes() {
    let client = connect(&[]);
    let heard = Arc::new(AtomicUsize::new(0));
    let opts = RequestOptions {
        on_progress: Some({
            let heard = heard.clone();
            Arc::new(move |_: &mcpc::handlers::Progress| {
                heard.fetch_add(1, Ordering::SeqCst);
            })
        }),
        ..RequestOptions::default()
    };
    let (tx, rx) = channel();
    let seen_at_completion = heard.clone();
    client
        .start(
            Request::CallTool {
                name: "progress".into(),
                arguments: Some(json!({ "steps": 5 }).into()),
            },
            &opts,
            move |outcome| {
                let _ = tx.send((seen_at_completion.load(Ordering::SeqCst), outcome));
            },
        )
        .unwrap();
    let (heard_then, outcome) = rx.recv_timeout(WIDE).unwrap();
    outcome.unwrap();
    assert_eq!(heard_then, 5, "every progress ran before the completion");
}

/// Waits (20 s at most) until `queue` holds a completion, then pops it.
unsafe fn pop_within(queue: *mut mcp_completion_queue, limit: Duration) -> Option<(u64, Value)> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if readable(queue, 100) {
            let (mut tag, mut result) = (0u64, std::ptr::null_mut());
            if mcp_completion_queue_pop(queue, &mut tag, &mut result) {
                let json = json_of(result);
                mcp_result_free(result);
                return Some((tag, json));
            }
        }
    }
    None
}

static HOLD_COMPLETION_THREAD: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

unsafe extern "C" fn hold_until_released(_: *mut c_void, _tag: u64, result: *mut mcp_result) {
    mcp_result_free(result);
    let deadline = Instant::now() + WIDE;
    while HOLD_COMPLETION_THREAD.load(Ordering::SeqCst) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A queue's completions are pushed by the thread that reads the responses: they arrive while
/// the client's completion thread is busy in a host callback (before, every completion waited
/// for that thread, one hand-off per call).
#[test]
fn c_queue_completions_do_not_wait_for_the_completion_thread() {
    unsafe {
        let log = log_path("completion-c-queue-direct");
        let client = c_client(&log);
        HOLD_COMPLETION_THREAD.store(true, Ordering::SeqCst);
        let ping = mcp_request_ping();
        let status = mcp_client_start_callback(
            client,
            ping,
            null(),
            Some(hold_until_released),
            std::ptr::null_mut(),
            0,
        );
        assert_eq!(status, mcp_status::Ok);
        mcp_request_free(ping);
        wait_for_requests(&log, "ping", 1);
        std::thread::sleep(Duration::from_millis(50)); // the callback is holding the thread
        let queue = mcp_completion_queue_new();
        let n = 8u64;
        for tag in 0..n {
            let args = CString::new(json!({ "text": format!("q {tag}") }).to_string()).unwrap();
            let request = mcp_request_call_tool(c"echo".as_ptr(), args.as_ptr());
            assert_eq!(
                mcp_client_start(client, request, null(), queue, tag),
                mcp_status::Ok
            );
            mcp_request_free(request);
        }
        let mut seen = std::collections::HashSet::new();
        while seen.len() < n as usize {
            let popped = pop_within(queue, Duration::from_secs(10));
            let Some((tag, json)) = popped else {
                HOLD_COMPLETION_THREAD.store(false, Ordering::SeqCst);
                panic!(
                    "only {} of {n} completions while the completion thread was busy",
                    seen.len()
                );
            };
            assert_eq!(text(&json), format!("q {tag}"));
            assert!(seen.insert(tag), "tag {tag} twice");
        }
        // An outcome decided before the call is watched (here a token cancelled before the
        // start; a very fast answer takes the same path) does not wait for that thread either.
        let token = mcp_cancellation_new();
        mcp_cancellation_cancel(token, c"before".as_ptr());
        let options = mcp_request_options_new();
        mcp_request_options_set_cancellation(options, token);
        let ping = mcp_request_ping();
        assert_eq!(
            mcp_client_start(client, ping, options, queue, 99),
            mcp_status::Ok
        );
        mcp_request_free(ping);
        let popped = readable(queue, 10_000).then(|| {
            let (mut tag, mut result) = (0u64, std::ptr::null_mut());
            assert!(mcp_completion_queue_pop(queue, &mut tag, &mut result));
            let status = mcp_result_status(result);
            mcp_result_free(result);
            (tag, status)
        });
        HOLD_COMPLETION_THREAD.store(false, Ordering::SeqCst);
        assert_eq!(popped, Some((99, mcp_status::Cancelled)));
        mcp_request_options_free(options);
        mcp_cancellation_free(token);
        mcp_client_free(client);
        mcp_completion_queue_free(queue);
    }
}

struct HandlerSeen {
    client: std::sync::atomic::AtomicPtr<mcp_client>,
    threads: Mutex<Vec<String>>,
    nested: Mutex<Vec<mcp_status>>,
}

unsafe extern "C" fn confirm_with_a_nested_call(
    userdata: *mut c_void,
    _method: *const std::ffi::c_char,
    _params: *const std::ffi::c_char,
    reply: *mut mcp_handler_reply,
) -> bool {
    let seen = &*(userdata as *const HandlerSeen);
    let name = std::thread::current().name().unwrap_or("").to_owned();
    seen.threads.lock().unwrap().push(name);
    // Host code that blocks on the same client: fine on the completion thread, a deadlock on
    // the thread that reads the responses.
    let result = mcp_client_call_tool(
        seen.client.load(Ordering::SeqCst),
        c"echo".as_ptr(),
        c"{\"text\":\"nested\"}".as_ptr(),
        null(),
    );
    seen.nested.lock().unwrap().push(mcp_result_status(result));
    mcp_result_free(result);
    mcp_handler_reply_set_result(
        reply,
        c"{\"action\":\"accept\",\"content\":{\"ok\":true}}".as_ptr(),
    )
}

/// A queued call whose server needs input runs the input handler (host code) on the completion
/// thread, never on the thread that routed the response, even though its completion may be
/// pushed from there.
#[test]
fn c_queue_input_handlers_run_on_the_completion_thread() {
    unsafe {
        let seen = Box::new(HandlerSeen {
            client: std::sync::atomic::AtomicPtr::new(std::ptr::null_mut()),
            threads: Mutex::default(),
            nested: Mutex::default(),
        });
        let options = mcp_client_options_new();
        let status = mcp_client_options_set_request_handler(
            options,
            c"elicitation/create".as_ptr(),
            Some(confirm_with_a_nested_call),
            &*seen as *const HandlerSeen as *mut c_void,
        );
        assert_eq!(status, mcp_status::Ok);
        let server = CString::new(SERVER.as_str()).unwrap();
        let argv = [server.as_ptr(), c"--modern".as_ptr(), null()];
        let client = mcp_client_new_stdio(argv.as_ptr(), options);
        mcp_client_options_free(options);
        let connected = mcp_client_connect(client);
        assert_eq!(mcp_result_status(connected), mcp_status::Ok);
        mcp_result_free(connected);
        seen.client.store(client, Ordering::SeqCst);
        let queue = mcp_completion_queue_new();
        for tag in 0..3u64 {
            let request = mcp_request_call_tool(c"confirm".as_ptr(), c"{}".as_ptr());
            assert_eq!(
                mcp_client_start(client, request, null(), queue, tag),
                mcp_status::Ok
            );
            mcp_request_free(request);
        }
        for _ in 0..3 {
            let (tag, json) = pop_within(queue, WIDE).expect("a completion");
            assert!(text(&json).starts_with("confirmed"), "tag {tag}: {json}");
        }
        assert_eq!(
            *seen.threads.lock().unwrap(),
            vec!["mcpc-complete"; 3],
            "the input handlers ran on the completion thread"
        );
        assert_eq!(*seen.nested.lock().unwrap(), vec![mcp_status::Ok; 3]);
        mcp_client_free(client);
        mcp_completion_queue_free(queue);
    }
}

/// Write system calls this thread has made (Linux counts them per thread).
#[cfg(target_os = "linux")]
fn writes_by_this_thread() -> u64 {
    let io = std::fs::read_to_string("/proc/thread-self/io").expect("per-thread io counts");
    io.lines()
        .find_map(|l| l.strip_prefix("syscw: "))
        .and_then(|n| n.trim().parse().ok())
        .expect("a syscw line")
}

/// Pops completions until `n` have come (bounded), as (tag, status, json or null).
#[cfg(unix)]
unsafe fn pop_statuses(
    queue: *mut mcp_completion_queue,
    n: usize,
    limit: Duration,
) -> Vec<(u64, mcp_status, Value)> {
    let deadline = Instant::now() + limit;
    let mut popped = Vec::new();
    while popped.len() < n && Instant::now() < deadline {
        if !readable(queue, 100) {
            continue;
        }
        let (mut tag, mut result) = (0u64, std::ptr::null_mut());
        while mcp_completion_queue_pop(queue, &mut tag, &mut result) {
            let status = mcp_result_status(result);
            let json = match mcp_result_json(result) {
                text if text.is_null() => Value::Null,
                text => serde_json::from_str(CStr::from_ptr(text).to_str().unwrap()).unwrap(),
            };
            mcp_result_free(result);
            popped.push((tag, status, json));
        }
    }
    popped.sort_by_key(|(tag, _, _)| *tag);
    popped
}

/// A batch's requests leave the calling thread in one write (the server wakes once for the
/// lot); each completes once with its own tag, a bad request and one whose token was
/// cancelled before the start included, and those two send nothing.
#[cfg(target_os = "linux")]
#[test]
fn c_a_batch_leaves_in_one_write_and_each_request_completes_once() {
    unsafe {
        let log = log_path("completion-c-batch");
        let client = c_client(&log);
        let queue = mcp_completion_queue_new();
        let n = 16;
        let requests: Vec<*const mcp_request> = (0..n)
            .map(|i| {
                let args = CString::new(json!({ "text": format!("b {i}") }).to_string()).unwrap();
                mcp_request_call_tool(c"echo".as_ptr(), args.as_ptr()).cast_const()
            })
            .collect();
        let tags: Vec<u64> = (0..n as u64).collect();
        let mut started = 0usize;
        let writes = writes_by_this_thread();
        let status = mcp_client_start_batch(
            client,
            requests.as_ptr(),
            null(),
            queue,
            tags.as_ptr(),
            n,
            &mut started,
        );
        let writes = writes_by_this_thread() - writes;
        assert_eq!(status, mcp_status::Ok);
        assert_eq!(started, n);
        assert_eq!(writes, 1, "the {n} requests leave in one write");
        // A bad request (INVALID_ARGUMENT) and one whose token was cancelled before the start
        // (CANCELLED, completed on this thread) in a second batch.
        let odd = [mcp_request_call_tool(null(), null()), mcp_request_ping()];
        let token = mcp_cancellation_new();
        assert!(mcp_cancellation_cancel(token, c"before".as_ptr()));
        let cancelled = mcp_request_options_new();
        mcp_request_options_set_cancellation(cancelled, token);
        let options = [null(), cancelled.cast_const()];
        let odd_tags = [n as u64, n as u64 + 1];
        let status = mcp_client_start_batch(
            client,
            odd.map(|r| r.cast_const()).as_ptr(),
            options.as_ptr(),
            queue,
            odd_tags.as_ptr(),
            2,
            &mut started,
        );
        assert_eq!((status, started), (mcp_status::Ok, 2));
        for request in requests.into_iter().chain(odd.map(|r| r.cast_const())) {
            mcp_request_free(request.cast_mut());
        }
        let popped = pop_statuses(queue, n + 2, WIDE);
        assert_eq!(popped.len(), n + 2, "every request completes: {popped:?}");
        for (tag, status, json) in &popped[..n] {
            assert_eq!(*status, mcp_status::Ok);
            assert_eq!(text(json), format!("b {tag}"));
        }
        assert_eq!(popped[n].1, mcp_status::InvalidArgument);
        assert_eq!(popped[n + 1].1, mcp_status::Cancelled);
        assert!(pop_statuses(queue, 1, Duration::from_millis(100)).is_empty());
        // The server got the 16 calls and nothing for the other two (the barrier: a call).
        let barrier = mcp_client_ping(client, null());
        assert_eq!(mcp_result_status(barrier), mcp_status::Ok);
        mcp_result_free(barrier);
        let lines = read_log(&log);
        assert_eq!(
            lines.iter().filter(|l| is_method(l, "tools/call")).count(),
            n
        );
        assert_eq!(lines.iter().filter(|l| is_method(l, "ping")).count(), 1);
        assert!(cancels(&lines).is_empty(), "nothing to cancel on the wire");
        mcp_client_free(client);
        mcp_completion_queue_free(queue);
        mcp_request_options_free(cancelled);
        mcp_cancellation_free(token);
    }
}

/// Starts `request` `n` times in one batch, with `options` for each; returns (status, started).
#[cfg(unix)]
unsafe fn start_batch_of(
    client: *mut mcp_client,
    request: *mut mcp_request,
    options: *mut mcp_request_options,
    queue: *mut mcp_completion_queue,
    first_tag: u64,
    n: usize,
) -> (mcp_status, usize) {
    let requests = vec![request.cast_const(); n];
    let options = vec![options.cast_const(); n];
    let tags: Vec<u64> = (first_tag..first_tag + n as u64).collect();
    let mut started = 0usize;
    let status = mcp_client_start_batch(
        client,
        requests.as_ptr(),
        options.as_ptr(),
        queue,
        tags.as_ptr(),
        n,
        &mut started,
    );
    (status, started)
}

/// Batches larger than the pipe, to a server that has stopped reading, return at once (what
/// does not fit is the writer thread's); a cancel ends every call at once; once the server
/// reads again it gets the requests the first batch began writing, whole, each before its
/// notice, and nothing of the second batch, which was still queued when it was cancelled.
#[cfg(unix)]
#[test]
fn c_batches_to_a_server_that_stops_reading_return_and_cancel_at_once() {
    unsafe {
        let log = log_path("completion-c-batch-stalled");
        let hold = log.with_extension("hold");
        std::fs::write(&hold, b"").unwrap();
        let client = c_client_with(&[
            "--log",
            log.to_str().unwrap(),
            "--stall-reading-while",
            hold.to_str().unwrap(),
        ]);
        let queue = mcp_completion_queue_new();
        // Requests of 256 KiB: the first batch's one write fills the pipe (64 KiB).
        let padding = "x".repeat(256 * 1024);
        let args = CString::new(json!({ "padding": padding }).to_string()).unwrap();
        let request = mcp_request_call_tool(c"never".as_ptr(), args.as_ptr());
        let token = mcp_cancellation_new();
        let options = mcp_request_options_new();
        mcp_request_options_set_cancellation(options, token);
        let n = 4;
        let began = Instant::now();
        let first = start_batch_of(client, request, options, queue, 0, n);
        let second = start_batch_of(client, request, options, queue, 100, n);
        let took = began.elapsed();
        assert_eq!(first, (mcp_status::Ok, n));
        assert_eq!(second, (mcp_status::Ok, n));
        assert!(
            took < Duration::from_secs(1),
            "the batches blocked for {took:?}"
        );
        let began = Instant::now();
        assert!(mcp_cancellation_cancel(token, c"enough".as_ptr()));
        let popped = pop_statuses(queue, 2 * n, Duration::from_secs(1));
        let took = began.elapsed();
        assert_eq!(popped.len(), 2 * n, "all cancelled within 1 s: {popped:?}");
        assert!(popped.iter().all(|(_, s, _)| *s == mcp_status::Cancelled));
        assert!(took < Duration::from_secs(1), "the cancel took {took:?}");
        std::fs::remove_file(&hold).unwrap();
        // The notices follow the requests' last bytes, which the server is reading only now:
        // wait for them, then a ping, after them on the wire, ends the look for anything more.
        wait_for_log(&log, |l| cancels(l).len() >= n);
        let barrier = mcp_client_ping(client, null());
        assert_eq!(mcp_result_status(barrier), mcp_status::Ok);
        mcp_result_free(barrier);
        let lines = read_log(&log);
        let calls: Vec<i64> = lines
            .iter()
            .filter(|l| is_method(l, "tools/call"))
            .map(|l| l["id"].as_i64().expect("a whole request"))
            .collect();
        assert_eq!(calls.len(), n, "the first batch only: {calls:?}");
        let notices = cancels(&lines);
        let told: Vec<i64> = notices
            .iter()
            .map(|l| l["params"]["requestId"].as_i64().unwrap())
            .collect();
        assert_eq!(
            told, calls,
            "one notice per request sent, none for the rest"
        );
        for id in told {
            let sent = request_index(&lines, id).unwrap();
            let notice = lines
                .iter()
                .position(|l| {
                    is_method(l, "notifications/cancelled") && l["params"]["requestId"] == id
                })
                .unwrap();
            assert!(sent < notice, "request {id} before its notice");
        }
        mcp_client_free(client);
        mcp_completion_queue_free(queue);
        mcp_request_free(request);
        mcp_request_options_free(options);
        mcp_cancellation_free(token);
    }
}

/// The stdio reader wakes a queue's host once per batch of lines it routes, not per line; a
/// server that writes without a pause (so the reader never runs out of input) must not hold a
/// completion back: its host is woken before the reader reads on.
#[test]
fn c_queue_completions_are_signalled_while_the_server_floods_without_a_pause() {
    unsafe {
        let log = log_path("completion-c-flood");
        let client = c_client_with(&[
            "--log",
            log.to_str().unwrap(),
            "--flood",
            "notifications/message",
        ]);
        let queue = mcp_completion_queue_new();
        for round in 0..20u64 {
            let args = CString::new(json!({ "text": format!("f {round}") }).to_string()).unwrap();
            let request = mcp_request_call_tool(c"echo".as_ptr(), args.as_ptr());
            assert_eq!(
                mcp_client_start(client, request, null(), queue, round),
                mcp_status::Ok
            );
            mcp_request_free(request);
            // Signalled within a wide bound (it takes milliseconds): a reader that woke the
            // host only when it ran out of input would wait for a lull in the flood.
            let popped = pop_within(queue, Duration::from_secs(2));
            let (tag, json) =
                popped.unwrap_or_else(|| panic!("round {round}: not signalled within 2 s"));
            assert_eq!((tag, text(&json)), (round, format!("f {round}").as_str()));
        }
        mcp_client_free(client);
        mcp_completion_queue_free(queue);
    }
}

/// Starts `n` echo calls (tags 0..n, text "held {tag}") and one all-pages `tools` walk (tag n)
/// on `queue`, then waits until the server has answered them all and the queue is readable,
/// popping nothing: the answers wait in the queue for a pop to finish them.
unsafe fn start_and_leave_unpopped(
    client: *mut mcp_client,
    queue: *mut mcp_completion_queue,
    log: &std::path::Path,
    n: u64,
) {
    for tag in 0..n {
        let args = CString::new(json!({ "text": format!("held {tag}") }).to_string()).unwrap();
        let request = mcp_request_call_tool(c"echo".as_ptr(), args.as_ptr());
        assert_eq!(
            mcp_client_start(client, request, null(), queue, tag),
            mcp_status::Ok
        );
        mcp_request_free(request);
    }
    let tools = mcp_request_tools();
    assert_eq!(
        mcp_client_start(client, tools, null(), queue, n),
        mcp_status::Ok
    );
    mcp_request_free(tools);
    wait_for_requests(log, "tools/call", n as usize);
    assert!(readable(queue, 20_000), "answers arrived");
    // Time for every answer (and the walk's pages, each sent from the completion thread) to be
    // routed; the checks below hold however many were.
    std::thread::sleep(Duration::from_millis(300));
}

/// Answered calls wait in the queue until a pop finishes them on the host's thread. A host that
/// closes its client instead of popping (from its own loop, say) must not make close wait for
/// pops that cannot come: close finishes them itself, and each still completes exactly once,
/// with its answer.
#[test]
fn c_close_finishes_answers_the_host_has_not_popped_without_waiting_for_it() {
    unsafe {
        let log = log_path("completion-c-close-unpopped");
        let client = c_client_with(&["--log", log.to_str().unwrap(), "--page-size", "1"]);
        let queue = mcp_completion_queue_new();
        let n = 16u64;
        start_and_leave_unpopped(client, queue, &log, n);
        let began = Instant::now();
        mcp_client_close(client);
        let took = began.elapsed();
        // Waiting for the host would take close's whole 2 s bound.
        assert!(took < Duration::from_millis(1500), "close took {took:?}");
        let (mut tag, mut result) = (0u64, std::ptr::null_mut());
        let mut seen = std::collections::HashSet::new();
        while mcp_completion_queue_pop(queue, &mut tag, &mut result) {
            assert!(seen.insert(tag), "tag {tag} twice");
            if tag < n {
                // Answered before close: the answer, not CLOSED.
                assert_eq!(text(&json_of(result)), format!("held {tag}"));
            } else {
                let status = mcp_result_status(result);
                assert!(
                    matches!(status, mcp_status::Ok | mcp_status::Closed),
                    "{status:?}"
                );
            }
            mcp_result_free(result);
        }
        assert_eq!(seen.len(), n as usize + 1, "each completed once: {seen:?}");
        assert_settled(queue);
        mcp_client_free(client);
        mcp_completion_queue_free(queue);
    }
}

/// Freeing a queue that holds answered calls hands them to their client's completion thread:
/// their operations go on at once (a walk whose first page waited unpopped asks for its next
/// page, with no pop and no close), the client goes on working, and its close does not wait
/// for them.
#[test]
fn c_freeing_a_queue_that_holds_answers_leaves_its_client_free_to_work_and_close() {
    unsafe {
        let log = log_path("completion-c-free-unpopped");
        let client = c_client_with(&["--log", log.to_str().unwrap(), "--page-size", "1"]);
        let queue = mcp_completion_queue_new();
        start_and_leave_unpopped(client, queue, &log, 16);
        let pages = |lines: &[Value]| lines.iter().filter(|l| is_method(l, "tools/list")).count();
        assert_eq!(
            pages(&wait_for_log(&log, |l| pages(l) >= 1)),
            1,
            "the walk waits for a pop to finish its first page"
        );
        mcp_completion_queue_free(queue);
        let lines = wait_for_log(&log, |l| pages(l) >= 2);
        assert!(
            pages(&lines) >= 2,
            "freed, the queue's answered walk goes on: its next page is asked for"
        );
        // Another queue and a blocking call still work.
        let other = mcp_completion_queue_new();
        let ping = mcp_request_ping();
        assert_eq!(
            mcp_client_start(client, ping, null(), other, 7),
            mcp_status::Ok
        );
        mcp_request_free(ping);
        let (mut tag, mut result) = (0u64, std::ptr::null_mut());
        let deadline = Instant::now() + WIDE;
        while !mcp_completion_queue_pop(other, &mut tag, &mut result) {
            assert!(Instant::now() < deadline, "the ping never completed");
            readable(other, 1000);
        }
        assert_eq!((tag, mcp_result_status(result)), (7, mcp_status::Ok));
        mcp_result_free(result);
        let pong = mcp_client_ping(client, null());
        assert_eq!(mcp_result_status(pong), mcp_status::Ok);
        mcp_result_free(pong);
        let began = Instant::now();
        mcp_client_close(client);
        let took = began.elapsed();
        assert!(took < Duration::from_millis(1500), "close took {took:?}");
        mcp_client_free(client);
        mcp_completion_queue_free(other);
    }
}

/// The race the pop and close share: one thread pops (finishing the answers it meets) while
/// another closes (finishing them itself). Each call is finished by exactly one of them and
/// completes exactly once, whoever wins each; repeated, so the interleavings vary.
#[test]
fn c_a_pop_racing_close_completes_each_call_exactly_once() {
    #[derive(Clone, Copy)]
    struct Ptr<T>(*mut T);
    // SAFETY: the queue and the client are used from two threads as their contracts allow
    // (pop and close are safe from any thread); both outlive the threads.
    unsafe impl<T> Send for Ptr<T> {}
    for round in 0..20 {
        unsafe {
            let log = log_path(&format!("completion-c-pop-close-{round}"));
            let client = c_client(&log);
            let queue = mcp_completion_queue_new();
            let n = 24u64;
            for tag in 0..n {
                let args =
                    CString::new(json!({ "text": format!("race {tag}") }).to_string()).unwrap();
                let request = mcp_request_call_tool(c"echo".as_ptr(), args.as_ptr());
                assert_eq!(
                    mcp_client_start(client, request, null(), queue, tag),
                    mcp_status::Ok
                );
                mcp_request_free(request);
            }
            wait_for_requests(&log, "tools/call", n as usize);
            let (q, c) = (Ptr(queue), Ptr(client));
            let popper = std::thread::spawn(move || {
                let q = q;
                let mut got = Vec::new();
                let deadline = Instant::now() + WIDE;
                while (got.len() as u64) < n && Instant::now() < deadline {
                    let (mut tag, mut result) = (0u64, std::ptr::null_mut());
                    while mcp_completion_queue_pop(q.0, &mut tag, &mut result) {
                        got.push((tag, mcp_result_status(result)));
                        mcp_result_free(result);
                    }
                    readable(q.0, 10);
                }
                got
            });
            let closer = std::thread::spawn(move || {
                let c = c;
                mcp_client_close(c.0);
            });
            closer.join().unwrap();
            let mut got = popper.join().unwrap();
            got.sort_by_key(|(tag, _)| *tag);
            let tags: Vec<u64> = got.iter().map(|(tag, _)| *tag).collect();
            assert_eq!(tags, (0..n).collect::<Vec<_>>(), "round {round}: {got:?}");
            for (tag, status) in &got {
                // Answered before close (echo answers at once), or cut off by it.
                assert!(
                    matches!(status, mcp_status::Ok | mcp_status::Closed),
                    "round {round}, tag {tag}: {status:?}"
                );
            }
            assert_settled(queue);
            mcp_client_free(client);
            mcp_completion_queue_free(queue);
        }
    }
}
