//! Through the C API: when mcp_client_close or mcp_client_free returns, no request handler is
//! running or will run; a running one is told (its reply is cancelled) and waited for, up to
//! 2 s; a handler may free its own client (issue 13, item 10).

mod common;

use mcpc::ffi::*;
use std::ffi::{c_char, c_void, CString};
use std::ptr::null;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// What the handler saw and did; `userdata` points to it.
#[derive(Default)]
struct Probe {
    /// How long the handler takes.
    hold_ms: u64,
    /// Whether it stops early once cancelled.
    stops_when_cancelled: bool,
    started: AtomicBool,
    saw_cancel: AtomicBool,
    done: AtomicBool,
    calls: AtomicUsize,
    /// Set by the test once free has returned.
    freed: AtomicBool,
    /// Handler code that ran after free returned.
    after_free: AtomicUsize,
    /// When set, the handler frees this client itself, once `call_returned`.
    free_self: AtomicPtr<mcp_client>,
    call_returned: AtomicBool,
}

unsafe extern "C" fn handler(
    userdata: *mut c_void,
    _method: *const c_char,
    _params: *const c_char,
    reply: *mut mcp_handler_reply,
) -> bool {
    let probe = &*(userdata as *const Probe);
    probe.calls.fetch_add(1, Ordering::SeqCst);
    if probe.freed.load(Ordering::SeqCst) {
        probe.after_free.fetch_add(1, Ordering::SeqCst);
    }
    probe.started.store(true, Ordering::SeqCst);
    let client = probe.free_self.load(Ordering::SeqCst);
    if !client.is_null() {
        wait_for(&probe.call_returned);
        mcp_client_free(client);
        probe.done.store(true, Ordering::SeqCst);
        mcp_handler_reply_set_error(reply, -32603, c"freed".as_ptr());
        return false;
    }
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(probe.hold_ms) {
        if mcp_handler_reply_is_cancelled(reply) {
            probe.saw_cancel.store(true, Ordering::SeqCst);
            if probe.stops_when_cancelled {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    if probe.freed.load(Ordering::SeqCst) {
        probe.after_free.fetch_add(1, Ordering::SeqCst);
    }
    probe.done.store(true, Ordering::SeqCst);
    mcp_handler_reply_set_result(reply, c"{}".as_ptr())
}

fn wait_for(flag: &AtomicBool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !flag.load(Ordering::SeqCst) {
        assert!(Instant::now() < deadline, "timed out waiting");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A connected client whose sampling handler is `probe` (leaked: it must outlive any bug).
unsafe fn client_with(probe: &'static Probe) -> *mut mcp_client {
    let options = mcp_client_options_new();
    let status = mcp_client_options_set_request_handler(
        options,
        c"sampling/createMessage".as_ptr(),
        Some(handler),
        probe as *const Probe as *mut c_void,
    );
    assert_eq!(status, mcp_status::Ok);
    let server = CString::new(common::SERVER.as_str()).unwrap();
    let argv = [server.as_ptr(), null()];
    let client = mcp_client_new_stdio(argv.as_ptr(), options);
    mcp_client_options_free(options);
    let connected = mcp_client_connect(client);
    assert_eq!(mcp_result_status(connected), mcp_status::Ok);
    mcp_result_free(connected);
    client
}

/// Makes the server ask for sampling; with `timeout_ms`, the call gives up while the handler
/// still runs. Returns the call's status.
unsafe fn ask(client: *mut mcp_client, timeout_ms: u64) -> mcp_status {
    let options = mcp_request_options_new();
    if timeout_ms > 0 {
        mcp_request_options_set_timeout_ms(options, timeout_ms);
    }
    let args = cr#"{"method": "sampling/createMessage", "params": {}}"#;
    let result = mcp_client_call_tool(client, c"ask_client".as_ptr(), args.as_ptr(), options);
    mcp_request_options_free(options);
    let status = mcp_result_status(result);
    mcp_result_free(result);
    status
}

struct SendPtr(*mut mcp_client);
unsafe impl Send for SendPtr {}

/// Nothing runs later: checked a second after free returned.
fn nothing_runs_after_free(probe: &Probe) {
    let calls = probe.calls.load(Ordering::SeqCst);
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(
        probe.calls.load(Ordering::SeqCst),
        calls,
        "a handler started after free"
    );
    assert_eq!(
        probe.after_free.load(Ordering::SeqCst),
        0,
        "handler code ran after free returned"
    );
}

#[test]
fn close_tells_a_running_handler_and_waits_for_it_before_free() {
    let probe: &'static Probe = Box::leak(Box::new(Probe {
        hold_ms: 500,
        ..Probe::default()
    }));
    unsafe {
        let client = client_with(probe);
        let caller = {
            let client = SendPtr(client);
            std::thread::spawn(move || {
                let client = client;
                ask(client.0, 0)
            })
        };
        wait_for(&probe.started);
        let start = Instant::now();
        mcp_client_close(client);
        let closed_in = start.elapsed();
        assert_eq!(caller.join().unwrap(), mcp_status::Closed);
        mcp_client_free(client);
        probe.freed.store(true, Ordering::SeqCst);
        assert!(
            probe.done.load(Ordering::SeqCst),
            "close returned while the handler still ran"
        );
        assert!(
            probe.saw_cancel.load(Ordering::SeqCst),
            "the handler was not told"
        );
        common::report_figure(&format!(
            "close with a 500 ms handler running: returned after {:.0} ms, the handler done",
            closed_in.as_secs_f64() * 1000.0
        ));
        nothing_runs_after_free(probe);
    }
}

#[test]
fn free_waits_for_a_running_handler() {
    let probe: &'static Probe = Box::leak(Box::new(Probe {
        hold_ms: 500,
        ..Probe::default()
    }));
    unsafe {
        let client = client_with(probe);
        // The call times out; the server's request stays with the handler.
        assert_eq!(ask(client, 100), mcp_status::Timeout);
        wait_for(&probe.started);
        mcp_client_free(client);
        probe.freed.store(true, Ordering::SeqCst);
        assert!(
            probe.done.load(Ordering::SeqCst),
            "free returned while the handler still ran"
        );
        nothing_runs_after_free(probe);
    }
}

#[test]
fn a_handler_that_stops_when_told_lets_free_return_at_once() {
    let probe: &'static Probe = Box::leak(Box::new(Probe {
        hold_ms: 10_000,
        stops_when_cancelled: true,
        ..Probe::default()
    }));
    unsafe {
        let client = client_with(probe);
        assert_eq!(ask(client, 100), mcp_status::Timeout);
        wait_for(&probe.started);
        mcp_client_free(client);
        probe.freed.store(true, Ordering::SeqCst);
        assert!(probe.done.load(Ordering::SeqCst) && probe.saw_cancel.load(Ordering::SeqCst));
        nothing_runs_after_free(probe);
    }
}

#[test]
fn a_handler_that_never_returns_holds_free_for_2_s_only() {
    let probe: &'static Probe = Box::leak(Box::new(Probe {
        hold_ms: 5_000,
        ..Probe::default()
    }));
    unsafe {
        let client = client_with(probe);
        assert_eq!(ask(client, 100), mcp_status::Timeout);
        wait_for(&probe.started);
        let start = Instant::now();
        mcp_client_free(client);
        let took = start.elapsed();
        common::report_figure(&format!(
            "free with a handler that ignores its cancellation for 5 s: returned after {:.0} ms",
            took.as_secs_f64() * 1000.0
        ));
        assert!(
            took >= Duration::from_millis(1500),
            "free did not wait: {took:?}"
        );
        assert!(
            took < Duration::from_millis(4500),
            "free waited too long: {took:?}"
        );
        // The handler runs on, past the documented bound; let it end before the process does.
        wait_for(&probe.done);
    }
}

#[test]
fn a_handler_may_free_its_own_client() {
    let probe: &'static Probe = Box::leak(Box::new(Probe::default()));
    unsafe {
        let client = client_with(probe);
        probe.free_self.store(client, Ordering::SeqCst);
        assert_eq!(ask(client, 100), mcp_status::Timeout);
        // From here on only the handler uses the client.
        probe.call_returned.store(true, Ordering::SeqCst);
        wait_for(&probe.done);
    }
}
