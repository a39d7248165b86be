//! Self-healing connections (`ClientOptions::reconnect`): when the stdio server dies or the
//! HTTP server ends the session, the next request connects again by itself, the listens come
//! back, the request that was on the wire fails and is never sent again (checked in the
//! server's own log), the state callback hears each transition in order, failed attempts
//! back off and stop at the policy's maximum, and close, cancel or a timeout end a backoff
//! at once.

mod common;

use common::http_server::{header, posts_of, HttpServer};
use common::*;
use mcpc::handlers::{Callbacks, ListKind};
use mcpc::{
    CancellationToken, Client, ClientOptions, ConnectMode, ConnectionState, Listen,
    ReconnectPolicy, RequestOptions, Status,
};
use serde_json::{json, Value};
use std::path::Path;
use std::ptr::null_mut;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ConnectionState::{Closed, Connected, Connecting, Failed, Reconnecting};

/// What the callbacks heard, in order: state transitions (with when) and notices.
#[derive(Default)]
struct Heard {
    states: Mutex<Vec<(ConnectionState, Instant)>>,
    notices: Mutex<Vec<String>>,
    changed: Condvar,
}

impl Heard {
    fn states(&self) -> Vec<ConnectionState> {
        self.states.lock().unwrap().iter().map(|s| s.0).collect()
    }

    /// Waits (up to 10 s) until `count` notices start with `prefix`.
    fn wait_for(&self, prefix: &str, count: usize) {
        assert!(
            self.heard_within(prefix, count, Duration::from_secs(10)),
            "no {count} x {prefix:?} in {:?}",
            self.notices.lock().unwrap()
        );
    }

    /// Whether `count` notices start with `prefix` within `time`.
    fn heard_within(&self, prefix: &str, count: usize, time: Duration) -> bool {
        let deadline = Instant::now() + time;
        let mut notices = self.notices.lock().unwrap();
        while notices.iter().filter(|n| n.starts_with(prefix)).count() < count {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            notices = self.changed.wait_timeout(notices, left).unwrap().0;
        }
        true
    }

    /// Waits (up to 10 s) until the last state heard is `state`.
    fn wait_state(&self, state: ConnectionState) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.states().last() != Some(&state) {
            assert!(
                Instant::now() < deadline,
                "never {state:?}: {:?}",
                self.states()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn push_notice(&self, notice: String) {
        self.notices.lock().unwrap().push(notice);
        self.changed.notify_all();
    }
}

fn options(policy: ReconnectPolicy, mode: ConnectMode) -> (ClientOptions, Arc<Heard>) {
    let heard = Arc::new(Heard::default());
    let mut callbacks = Callbacks::default();
    let h = heard.clone();
    callbacks.on_list_changed = Some(Arc::new(move |kind: ListKind| {
        h.push_notice(format!("list {}", kind.name()))
    }));
    let h = heard.clone();
    callbacks.on_notification = Some(Arc::new(move |method: &str, _: Option<&Value>| {
        h.push_notice(method.to_owned())
    }));
    let h = heard.clone();
    let options = ClientOptions {
        mode,
        callbacks,
        reconnect: Some(policy),
        on_state: Some(Arc::new(move |state: ConnectionState| {
            h.states.lock().unwrap().push((state, Instant::now()))
        })),
        ..ClientOptions::default()
    };
    (options, heard)
}

fn quick_policy() -> ReconnectPolicy {
    ReconnectPolicy {
        first_delay: Duration::from_millis(50),
        max_delay: Duration::from_millis(200),
        jitter: 0.0,
        max_attempts: 3,
    }
}

const ACK: &str = "notifications/subscriptions/acknowledged";

fn start_listen(client: &Arc<Client>) -> (CancellationToken, JoinHandle<mcpc::Result<Value>>) {
    let token = CancellationToken::new();
    let opts = RequestOptions::with_cancellation(&token);
    let client = client.clone();
    let listen = Listen {
        tools_list_changed: true,
        ..Listen::default()
    };
    (
        token,
        std::thread::spawn(move || client.listen(&listen, &opts)),
    )
}

fn none() -> RequestOptions {
    RequestOptions::default()
}

fn echo(client: &Client, text: &str) -> mcpc::Result<Value> {
    client.call_tool("echo", Some(json!({ "text": text })), &none())
}

/// The stdio server's log lines that are a `tools/call` of `tool`.
fn calls_of(log: &Path, tool: &str) -> usize {
    read_log(log)
        .iter()
        .filter(|line| is_method(line, "tools/call") && line["params"]["name"] == tool)
        .count()
}

#[test]
fn a_dead_stdio_server_is_started_again_by_the_next_request_and_listens_come_back() {
    let log = log_path("self_heal_stdio");
    let (options, heard) = options(quick_policy(), ConnectMode::Auto);
    let log_arg = log.to_str().unwrap();
    let client = Arc::new(connect_with(
        config(&["--modern", "--log", log_arg]),
        options,
    ));
    let first = client.server_pid().unwrap();
    let (token, listening) = start_listen(&client);
    heard.wait_for(ACK, 1);

    let crashed = client.call_tool("crash", None, &none()).unwrap_err();
    assert_eq!(crashed.status, Status::TransportError, "{crashed}");
    let echoed = echo(&client, "healed").expect("the next request connects again");
    assert_eq!(text(&echoed), "healed");
    let second = client.server_pid().unwrap();
    assert_ne!(first, second, "a new server process");
    assert_eq!(client.state(), Connected);

    // The listen is back on the new connection and hears what it asked for.
    heard.wait_for(ACK, 2);
    client
        .request(
            "test/emit",
            Some(json!({ "events": [{"kind": "tools"}] })),
            &none(),
        )
        .unwrap();
    heard.wait_for("list tools", 1);

    // The crash reached the server once: the library never sent it again.
    assert_eq!(calls_of(&log, "crash"), 1, "{:?}", read_log(&log));
    assert_eq!(calls_of(&log, "echo"), 1);

    token.cancel(None);
    assert_eq!(
        listening.join().unwrap().unwrap_err().status,
        Status::Cancelled
    );
    client.close();
    heard.wait_state(Closed);
    assert_eq!(
        heard.states(),
        [
            Connecting,
            Connected,
            Failed,
            Reconnecting,
            Connected,
            Closed
        ]
    );
    assert!(!process_exists(second));
}

#[test]
fn an_ended_http_session_is_opened_again_by_the_next_request_and_listens_come_back() {
    let server = HttpServer::start("self_heal_http", &["--expire-session-after", "3"]);
    let (options, heard) = options(quick_policy(), ConnectMode::Legacy);
    let client = Arc::new(Client::http(server.config(), options));
    client.connect().unwrap();
    let (token, listening) = start_listen(&client);
    heard.wait_for(ACK, 1);

    // `notifications/initialized` was the session's first POST: the third call meets the end.
    echo(&client, "one").unwrap();
    echo(&client, "two").unwrap();
    let ended = echo(&client, "three").unwrap_err();
    assert_eq!(ended.status, Status::SessionExpired, "{ended}");
    let echoed = echo(&client, "four").expect("the next request opens a new session");
    assert_eq!(text(&echoed), "four");

    let requests = server.requests();
    let calls = posts_of(&requests, "tools/call");
    let texts: Vec<&Value> = calls
        .iter()
        .map(|c| &c["body"]["params"]["arguments"]["text"])
        .collect();
    assert_eq!(
        texts,
        ["one", "two", "three", "four"],
        "each call POSTed once"
    );
    assert_eq!(header(calls[3], "mcp-session-id"), Some("session-2"));

    // The listen is back: a list change sent on the new session's stream reaches it (sent
    // again until it does: the new stream may open after the first send).
    heard.wait_for(ACK, 2);
    let deadline = Instant::now() + Duration::from_secs(10);
    let notice = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
    server.broadcast(&notice);
    while !heard.heard_within("list tools", 1, Duration::from_millis(100)) {
        assert!(Instant::now() < deadline, "no standalone stream came back");
        server.broadcast(&notice);
    }

    token.cancel(None);
    assert_eq!(
        listening.join().unwrap().unwrap_err().status,
        Status::Cancelled
    );
    client.close();
    heard.wait_state(Closed);
    assert_eq!(
        heard.states(),
        [
            Connecting,
            Connected,
            Failed,
            Reconnecting,
            Connected,
            Closed
        ]
    );
}

#[cfg(unix)]
#[test]
fn a_stdio_server_that_died_while_idle_is_started_again_and_the_request_goes_there_once() {
    let log = log_path("self_heal_idle");
    let (options, heard) = options(quick_policy(), ConnectMode::Legacy);
    let client = connect_with(config(&["--log", log.to_str().unwrap()]), options);
    let first = client.server_pid().unwrap();
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &first.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    heard.wait_state(Failed);
    assert_eq!(client.state(), Failed);

    assert_eq!(text(&echo(&client, "after").unwrap()), "after");
    assert_ne!(client.server_pid(), Some(first));
    assert_eq!(calls_of(&log, "echo"), 1, "sent once, to the new server");
    client.close();
    assert_eq!(
        heard.states(),
        [
            Connecting,
            Connected,
            Failed,
            Reconnecting,
            Connected,
            Closed
        ]
    );
}

/// A client connected to a server that will refuse to start again while `gate` exists.
fn refusing(name: &str, policy: ReconnectPolicy) -> (Arc<Client>, Arc<Heard>, std::path::PathBuf) {
    let gate = log_path(name);
    let (options, heard) = options(policy, ConnectMode::Legacy);
    let client = connect_with(
        config(&["--fail-start-while", gate.to_str().unwrap()]),
        options,
    );
    std::fs::write(&gate, "").unwrap();
    let crashed = client.call_tool("crash", None, &none()).unwrap_err();
    assert_eq!(crashed.status, Status::TransportError);
    (Arc::new(client), heard, gate)
}

fn refused_starts(gate: &Path) -> usize {
    std::fs::read_to_string(gate)
        .unwrap_or_default()
        .lines()
        .count()
}

#[test]
fn failed_attempts_back_off_and_stop_at_the_maximum() {
    let policy = ReconnectPolicy {
        first_delay: Duration::from_millis(100),
        max_delay: Duration::from_millis(400),
        jitter: 0.0,
        max_attempts: 5,
    };
    let (client, heard, gate) = refusing("self_heal_backoff", policy);

    let began = Instant::now();
    let error = echo(&client, "never").unwrap_err();
    let took = began.elapsed();
    assert!(error.message.contains("after 5 attempts"), "{error}");
    assert_eq!(refused_starts(&gate), 5, "five starts, no more");
    assert_eq!(client.state(), Failed);
    heard.wait_state(Failed);

    // Each attempt is a RECONNECTING then a FAILED, its waits 100, 200, 400, 400 ms.
    let states = heard.states.lock().unwrap().clone();
    let attempts: Vec<Instant> = states
        .iter()
        .filter(|(state, _)| *state == Reconnecting)
        .map(|(_, at)| *at)
        .collect();
    assert_eq!(attempts.len(), 5, "{states:?}");
    let gaps: Vec<u128> = attempts
        .windows(2)
        .map(|w| (w[1] - w[0]).as_millis())
        .collect();
    for (gap, wait) in gaps.iter().zip([100, 200, 400, 400]) {
        assert!(*gap >= wait, "waits {gaps:?}");
    }
    assert!(gaps[2] > gaps[0], "the waits grow: {gaps:?}");
    report_figure(&format!(
        "self-healing backoff, policy 100 ms doubling to 400 ms, 5 attempts: waits {gaps:?} ms"
    ));
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let cycle: Vec<ConnectionState> = states.iter().skip(2).map(|s| s.0).collect();
    assert_eq!(
        cycle,
        [Failed, Reconnecting]
            .repeat(5)
            .into_iter()
            .chain([Failed])
            .collect::<Vec<_>>()
    );

    // The server can start again: the next request heals at once.
    std::fs::remove_file(&gate).unwrap();
    let began = Instant::now();
    assert_eq!(text(&echo(&client, "back").unwrap()), "back");
    report_figure(&format!(
        "self-healing, stdio: the call that connected again took {} ms (a new server, its \
         handshake and the call)",
        began.elapsed().as_millis()
    ));
    assert_eq!(client.state(), Connected);
}

#[test]
fn close_cancel_and_timeout_end_a_backoff_at_once() {
    let long = ReconnectPolicy {
        first_delay: Duration::from_secs(30),
        max_delay: Duration::from_secs(30),
        jitter: 0.0,
        max_attempts: 5,
    };
    let (client, heard, gate) = refusing("self_heal_close", long);

    // A timeout ends the wait with TIMEOUT.
    let began = Instant::now();
    let opts = RequestOptions::with_timeout(Duration::from_millis(300));
    let error = client.call_tool("echo", None, &opts).unwrap_err();
    assert_eq!(error.status, Status::Timeout, "{error}");
    assert!(began.elapsed() < Duration::from_secs(10));

    // A cancel from another thread ends it with CANCELLED.
    let token = CancellationToken::new();
    let waiting = {
        let (client, opts) = (client.clone(), RequestOptions::with_cancellation(&token));
        std::thread::spawn(move || client.call_tool("echo", None, &opts))
    };
    let before = refused_starts(&gate);
    wait_until(|| refused_starts(&gate) > before);
    std::thread::sleep(Duration::from_millis(100));
    let began = Instant::now();
    token.cancel(Some("enough"));
    let error = waiting.join().unwrap().unwrap_err();
    assert_eq!(error.status, Status::Cancelled, "{error}");
    assert!(began.elapsed() < Duration::from_secs(5));

    // Close ends it with CLOSED, and close itself returns at once.
    let waiting = {
        let client = client.clone();
        std::thread::spawn(move || echo(&client, "never"))
    };
    let before = refused_starts(&gate);
    wait_until(|| refused_starts(&gate) > before);
    // A started request reconnects on a thread of its own: start returns at once.
    let (done_tx, done) = std::sync::mpsc::channel();
    let began = Instant::now();
    client
        .start(mcpc::Request::Ping, &none(), move |result| {
            let _ = done_tx.send(result);
        })
        .unwrap();
    assert!(began.elapsed() < Duration::from_secs(5), "start waited");
    std::thread::sleep(Duration::from_millis(100));
    let began = Instant::now();
    client.close();
    let error = waiting.join().unwrap().unwrap_err();
    assert_eq!(error.status, Status::Closed, "{error}");
    let started = done
        .recv_timeout(Duration::from_secs(5))
        .unwrap()
        .unwrap_err();
    assert_eq!(started.status, Status::Closed, "{started}");
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
    assert_eq!(heard.states().last(), Some(&Closed));
}

fn wait_until(done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn the_c_api_sets_the_policy_and_hears_the_transitions() {
    use mcpc::ffi::*;
    use std::ffi::{c_void, CString};
    use std::ptr::null;

    unsafe extern "C" fn on_state(userdata: *mut c_void, state: mcp_connection_state) {
        let seen = &*(userdata as *const Mutex<Vec<mcp_connection_state>>);
        seen.lock().unwrap().push(state);
    }

    let seen = Arc::new(Mutex::new(Vec::<mcp_connection_state>::new()));
    let userdata = Arc::as_ptr(&seen) as *mut c_void;
    unsafe {
        let options = mcp_client_options_new();
        // Bad policies are refused with a clear status.
        for (first, max, jitter) in [
            (0, 100, 0.1),
            (200, 100, 0.1),
            (10, 100, 1.5),
            (10, 100, f64::NAN),
        ] {
            assert_eq!(
                mcp_client_options_set_reconnect_policy(options, first, max, jitter, 3),
                mcp_status::InvalidArgument
            );
        }
        assert_eq!(
            mcp_client_options_set_reconnect_policy(null_mut(), 10, 100, 0.1, 3),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            mcp_client_options_set_state_callback(null_mut(), Some(on_state), userdata),
            mcp_status::InvalidArgument
        );
        // A fresh options object: the refused values above would be reported by connect.
        mcp_client_options_free(options);
        let options = mcp_client_options_new();
        assert_eq!(
            mcp_client_options_set_reconnect_policy(options, 10, 100, 0.2, 3),
            mcp_status::Ok
        );
        assert_eq!(
            mcp_client_options_set_state_callback(options, Some(on_state), userdata),
            mcp_status::Ok
        );
        let server = CString::new(SERVER.as_str()).unwrap();
        let argv = [server.as_ptr(), null()];
        let client = mcp_client_new_stdio(argv.as_ptr(), options);
        mcp_client_options_free(options);
        assert_eq!(take_result(mcp_client_connect(client)).0, mcp_status::Ok);

        let crashed = mcp_client_call_tool(client, c"crash".as_ptr(), null(), null());
        assert_eq!(take_result(crashed).0, mcp_status::TransportError);
        let echoed = mcp_client_call_tool(
            client,
            c"echo".as_ptr(),
            cr#"{"text":"c"}"#.as_ptr(),
            null(),
        );
        assert_eq!(take_result(echoed).0, mcp_status::Ok);
        assert_eq!(
            mcp_client_connection_state(client),
            mcp_connection_state::Connected
        );
        mcp_client_free(client);
    }
    use mcp_connection_state as S;
    assert_eq!(
        *seen.lock().unwrap(),
        [
            S::Connecting,
            S::Connected,
            S::Failed,
            S::Reconnecting,
            S::Connected,
            S::Closed
        ]
    );
}

/// The state callback runs under no library lock: it may ask the client where it stands, and
/// make a request, from inside the report.
#[test]
fn the_state_callback_may_call_into_the_client() {
    // A callback run under a lock of the client would deadlock: bounded here.
    let (done_tx, done) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        state_callback_calls_into_the_client();
        let _ = done_tx.send(());
    });
    done.recv_timeout(Duration::from_secs(30))
        .expect("the state callback and the client deadlocked, or the test failed");
}

fn state_callback_calls_into_the_client() {
    let slot: Arc<std::sync::OnceLock<std::sync::Weak<Client>>> = Arc::default();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (callback_slot, callback_seen) = (slot.clone(), seen.clone());
    let options = ClientOptions {
        reconnect: Some(quick_policy()),
        on_state: Some(Arc::new(move |state: ConnectionState| {
            let Some(client) = callback_slot.get().and_then(std::sync::Weak::upgrade) else {
                return;
            };
            let now = client.state();
            let pinged = match state {
                Connected => client.ping(&RequestOptions::default()).is_ok(),
                _ => false,
            };
            callback_seen.lock().unwrap().push((state, now, pinged));
        })),
        ..ClientOptions::default()
    };
    let client = Arc::new(Client::stdio(config(&[]), options));
    slot.set(Arc::downgrade(&client)).unwrap();
    client.connect().unwrap();
    let _ = client.call_tool("crash", None, &none());
    assert_eq!(text(&echo(&client, "fine").unwrap()), "fine");
    let deadline = Instant::now() + Duration::from_secs(10);
    while seen.lock().unwrap().len() < 5 {
        assert!(Instant::now() < deadline, "{:?}", seen.lock().unwrap());
        std::thread::sleep(Duration::from_millis(5));
    }
    let seen = seen.lock().unwrap().clone();
    // The first ping may meet the crash the test makes meanwhile; the last one cannot.
    let pings: Vec<bool> = seen
        .iter()
        .filter(|s| s.0 == Connected)
        .map(|s| s.2)
        .collect();
    assert_eq!(pings.last(), Some(&true), "{seen:?}");
    client.close();
}
