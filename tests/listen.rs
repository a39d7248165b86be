//! `Client::listen` against the test server: what a listen hears (and does not), how it ends
//! (the host's cancel, seen by the server; the server's end; a stdio teardown), the handshake
//! era's mapping onto resources/subscribe and logging/setLevel, and the reconnect contract. Also
//! the client's own notifications.

mod common;

use common::http_server::HttpServer;
use common::*;
use mcpc::handlers::{Callbacks, ListKind};
use mcpc::{
    CancellationToken, Client, ClientOptions, ConnectMode, ConnectionState, Listen, RequestOptions,
    Status,
};
use serde_json::{json, Value};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What the callbacks heard, in order, as short strings: `ack {...}`, `list tools`,
/// `updated URI`, `message LEVEL`, `notice METHOD`.
#[derive(Default)]
struct Heard {
    events: Mutex<Vec<String>>,
    changed: Condvar,
}

impl Heard {
    fn push(&self, event: String) {
        self.events.lock().unwrap().push(event);
        self.changed.notify_all();
    }

    /// Waits (up to 10 s) until `count` events start with `prefix`; returns them all.
    fn wait_for(&self, prefix: &str, count: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut events = self.events.lock().unwrap();
        loop {
            if events.iter().filter(|e| e.starts_with(prefix)).count() >= count {
                return events.clone();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "no {count} x {prefix:?} in {events:?}");
            events = self.changed.wait_timeout(events, left).unwrap().0;
        }
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.events.lock().unwrap())
    }
}

fn options(heard: &Arc<Heard>) -> ClientOptions {
    let mut callbacks = Callbacks::default();
    let h = heard.clone();
    callbacks.on_list_changed = Some(Arc::new(move |kind: ListKind| {
        h.push(format!("list {}", kind.name()))
    }));
    let h = heard.clone();
    callbacks.on_resource_updated =
        Some(Arc::new(move |uri: &str| h.push(format!("updated {uri}"))));
    let h = heard.clone();
    callbacks.on_message = Some(Arc::new(move |m: &mcpc::handlers::LogMessage| {
        h.push(format!("message {} {}", m.level, m.data))
    }));
    let h = heard.clone();
    callbacks.on_notification =
        Some(Arc::new(
            move |method: &str, params: Option<&Value>| match method {
                "notifications/subscriptions/acknowledged" => {
                    h.push(format!("ack {}", params.unwrap()["notifications"]))
                }
                other => h.push(format!("notice {other}")),
            },
        ));
    ClientOptions {
        callbacks,
        ..ClientOptions::default()
    }
}

fn wanted() -> Listen {
    Listen {
        tools_list_changed: true,
        resource_uris: vec!["test://hello".into()],
        log_level: Some("warning".into()),
        ..Listen::default()
    }
}

/// Starts a listen on a thread of its own; the token ends it.
fn start_listen(
    client: &Arc<Client>,
    listen: Listen,
) -> (CancellationToken, JoinHandle<mcpc::Result<Value>>) {
    let token = CancellationToken::new();
    let opts = RequestOptions::with_cancellation(&token);
    let client = client.clone();
    let thread = std::thread::spawn(move || client.listen(&listen, &opts));
    (token, thread)
}

fn emit(client: &Client, events: Value) -> Value {
    client
        .request(
            "test/emit",
            Some(json!({ "events": events })),
            &RequestOptions::default(),
        )
        .unwrap()
}

/// Waits until the server has no listen open.
fn wait_no_listeners(client: &Client) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let count = client
            .request("test/listeners", None, &RequestOptions::default())
            .unwrap()["count"]
            .as_u64();
        if count == Some(0) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the server still has a listen open"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Emits what the listen wants and what it does not, and checks it heard only the former.
/// The last event (tools again) is the barrier: the server sends a listen's notices in order.
fn hears_only_what_it_asked(client: &Client, heard: &Heard) {
    let sent = emit(
        client,
        json!([
            {"kind": "prompts"},
            {"kind": "updated", "uri": "test://other"},
            {"kind": "log", "level": "info", "data": "too low"},
            {"kind": "tools"},
            {"kind": "updated", "uri": "test://hello"},
            {"kind": "log", "level": "error", "data": "boom"},
            {"kind": "tools"},
        ]),
    );
    assert_eq!(sent["sent"], 4, "{sent}");
    heard.wait_for("list tools", 2);
    assert_eq!(
        heard.take(),
        [
            "list tools",
            "updated test://hello",
            "message error \"boom\"",
            "list tools"
        ]
    );
}

#[test]
fn modern_stdio_listen_hears_what_it_asked_and_the_cancel_reaches_the_server() {
    let log = log_path("listen_modern_stdio");
    let heard = Arc::new(Heard::default());
    let client = Arc::new(connect_with(
        config(&["--modern", "--log", log.to_str().unwrap()]),
        options(&heard),
    ));
    assert!(client.is_modern());
    let (token, listening) = start_listen(&client, wanted());
    let events = heard.wait_for("ack", 1);
    assert_eq!(
        events[0],
        r#"ack {"resourceSubscriptions":["test://hello"],"toolsListChanged":true}"#
    );
    heard.take();
    hears_only_what_it_asked(&client, &heard);

    // The listen request itself: the filter, and the log level in `_meta`.
    let lines = read_log(&log);
    let request = lines
        .iter()
        .find(|l| is_method(l, "subscriptions/listen"))
        .unwrap();
    assert_eq!(
        request["params"]["_meta"]["io.modelcontextprotocol/logLevel"],
        "warning"
    );
    let id = request["id"].as_i64().unwrap();

    let cancelled_at = Instant::now();
    token.cancel(Some("enough"));
    let error = listening.join().unwrap().unwrap_err();
    assert!(cancelled_at.elapsed() < Duration::from_secs(2));
    assert_eq!(error.status, Status::Cancelled);
    assert_eq!(error.request_id, Some(id));
    let lines = wait_for_log(&log, |lines| !cancels(lines).is_empty());
    let notices = cancels(&lines);
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0]["params"]["requestId"], id);
    wait_no_listeners(&client);
}

#[test]
fn modern_http_listen_hears_what_it_asked_and_the_cancel_closes_its_stream() {
    let server = HttpServer::start("listen_modern_http", &["--modern"]);
    let heard = Arc::new(Heard::default());
    let client = Arc::new(Client::http(
        server.config(),
        ClientOptions {
            mode: ConnectMode::Modern,
            ..options(&heard)
        },
    ));
    client.connect().unwrap();
    let (token, listening) = start_listen(&client, wanted());
    heard.wait_for("ack", 1);
    heard.take();
    hears_only_what_it_asked(&client, &heard);
    token.cancel(None);
    assert_eq!(
        listening.join().unwrap().unwrap_err().status,
        Status::Cancelled
    );
    // The server saw the stream close and took it as the listen's cancel.
    server.wait_for(|lines| {
        lines
            .iter()
            .any(|l| l.get("handler_done").is_some() && l["cancelled"] == true)
    });
    wait_no_listeners(&client);
}

#[test]
fn a_modern_http_listen_whose_stream_breaks_is_opened_again() {
    let server = HttpServer::start("listen_http_drop", &["--modern"]);
    let heard = Arc::new(Heard::default());
    let client = Arc::new(Client::http(
        server.config(),
        ClientOptions {
            mode: ConnectMode::Modern,
            ..options(&heard)
        },
    ));
    client.connect().unwrap();
    let (token, listening) = start_listen(&client, wanted());
    heard.wait_for("ack", 1);
    emit(&client, json!([{"kind": "drop"}]));
    // The stream ended without the server's end: the library listens again by itself.
    heard.wait_for("ack", 2);
    heard.take();
    emit(&client, json!([{"kind": "tools"}]));
    assert_eq!(heard.wait_for("list tools", 1), ["list tools"]);
    let listens = server
        .requests()
        .iter()
        .filter(|r| r.to_string().contains("subscriptions/listen"))
        .count();
    assert_eq!(listens, 2, "{:?}", server.requests());
    token.cancel(None);
    assert_eq!(
        listening.join().unwrap().unwrap_err().status,
        Status::Cancelled
    );
}

#[test]
fn the_server_ends_a_listen_with_its_result_or_a_stdio_teardown() {
    let heard = Arc::new(Heard::default());
    let client = Arc::new(connect_with(config(&["--modern"]), options(&heard)));
    let listen = Listen {
        prompts_list_changed: true,
        ..Listen::default()
    };
    let (_token, listening) = start_listen(&client, listen.clone());
    heard.wait_for("ack", 1);
    emit(&client, json!([{"kind": "end"}]));
    let result = listening.join().unwrap().unwrap();
    assert_eq!(result["resultType"], "complete");
    assert!(result["_meta"]["io.modelcontextprotocol/subscriptionId"].is_i64());

    let (_token, listening) = start_listen(&client, listen);
    heard.wait_for("ack", 2);
    emit(&client, json!([{"kind": "teardown"}]));
    let result = listening.join().unwrap().unwrap();
    assert_eq!(result["resultType"], "complete");
}

#[test]
fn a_listen_timeout_ends_it_but_the_client_timeout_does_not() {
    let heard = Arc::new(Heard::default());
    let client = Arc::new(connect_with(
        config(&["--modern"]),
        ClientOptions {
            timeout: Some(Duration::from_millis(50)),
            ..options(&heard)
        },
    ));
    let (token, listening) = start_listen(&client, wanted());
    heard.wait_for("ack", 1);
    // Well past the client's 50 ms, the listen still hears.
    std::thread::sleep(Duration::from_millis(300));
    emit(&client, json!([{"kind": "tools"}]));
    heard.wait_for("list tools", 1);
    token.cancel(None);
    assert_eq!(
        listening.join().unwrap().unwrap_err().status,
        Status::Cancelled
    );

    let opts = RequestOptions::with_timeout(Duration::from_millis(200));
    let error = client.listen(&wanted(), &opts).unwrap_err();
    assert_eq!(error.status, Status::Timeout);
}

#[test]
fn legacy_listen_maps_onto_subscribe_and_set_level_and_unsubscribes_at_the_end() {
    let log = log_path("listen_legacy");
    let heard = Arc::new(Heard::default());
    let client = Arc::new(connect_with(
        config(&["--log", log.to_str().unwrap()]),
        options(&heard),
    ));
    assert!(!client.is_modern());
    let (token, listening) = start_listen(&client, wanted());
    // The library's own acknowledgement: what the server's capabilities honour.
    let events = heard.wait_for("ack", 1);
    assert_eq!(
        events[0],
        r#"ack {"resourceSubscriptions":["test://hello"],"toolsListChanged":true}"#
    );
    let lines = read_log(&log);
    let subscribe = lines
        .iter()
        .find(|l| is_method(l, "resources/subscribe"))
        .unwrap();
    assert_eq!(subscribe["params"]["uri"], "test://hello");
    let set_level = lines
        .iter()
        .find(|l| is_method(l, "logging/setLevel"))
        .unwrap();
    assert_eq!(set_level["params"]["level"], "warning");
    heard.take();
    // The handshake era sends every list change (prompts too), so only what the server
    // filters is left out here.
    emit(
        &client,
        json!([
            {"kind": "updated", "uri": "test://other"},
            {"kind": "log", "level": "info", "data": "too low"},
            {"kind": "tools"},
            {"kind": "updated", "uri": "test://hello"},
            {"kind": "log", "level": "error", "data": "boom"},
        ]),
    );
    heard.wait_for("message", 1);
    assert_eq!(
        heard.take(),
        [
            "list tools",
            "updated test://hello",
            "message error \"boom\""
        ]
    );

    let cancelled_at = Instant::now();
    token.cancel(None);
    assert_eq!(
        listening.join().unwrap().unwrap_err().status,
        Status::Cancelled
    );
    assert!(cancelled_at.elapsed() < Duration::from_secs(2));
    let lines = wait_for_log(&log, |lines| {
        lines.iter().any(|l| is_method(l, "resources/unsubscribe"))
    });
    let unsubscribe = lines
        .iter()
        .find(|l| is_method(l, "resources/unsubscribe"))
        .expect("the listen's URIs are unsubscribed when it ends");
    assert_eq!(unsubscribe["params"]["uri"], "test://hello");
}

#[test]
fn a_listen_is_established_again_after_connect_makes_a_new_connection() {
    let heard = Arc::new(Heard::default());
    let client = Arc::new(connect_with(config(&["--modern"]), options(&heard)));
    let first_pid = client.server_pid().unwrap();
    let (token, listening) = start_listen(&client, wanted());
    heard.wait_for("ack", 1);
    let _ = client.call_tool("crash", None, &RequestOptions::default());
    let deadline = Instant::now() + Duration::from_secs(10);
    while client.state() != ConnectionState::Failed {
        assert!(Instant::now() < deadline, "the connection never failed");
        std::thread::sleep(Duration::from_millis(10));
    }
    client.connect().unwrap();
    assert_ne!(client.server_pid(), Some(first_pid));
    heard.wait_for("ack", 2);
    heard.take();
    emit(&client, json!([{"kind": "tools"}]));
    assert_eq!(heard.wait_for("list tools", 1), ["list tools"]);
    token.cancel(None);
    assert_eq!(
        listening.join().unwrap().unwrap_err().status,
        Status::Cancelled
    );

    // With end_on_failure, the failure ends the listen instead.
    let listen = Listen {
        end_on_failure: true,
        ..wanted()
    };
    let (_token, listening) = start_listen(&client, listen);
    heard.wait_for("ack", 1);
    let _ = client.call_tool("crash", None, &RequestOptions::default());
    let error = listening.join().unwrap().unwrap_err();
    assert_eq!(error.status, Status::TransportError, "{error:?}");
}

#[test]
fn close_ends_a_listen_in_either_era() {
    for args in [&["--modern"][..], &[][..]] {
        let heard = Arc::new(Heard::default());
        let client = Arc::new(connect_with(config(args), options(&heard)));
        let (_token, listening) = start_listen(&client, wanted());
        heard.wait_for("ack", 1);
        client.close();
        assert_eq!(
            listening.join().unwrap().unwrap_err().status,
            Status::Closed
        );
    }
}

#[test]
fn a_bad_listen_is_refused_before_anything_is_sent() {
    let client = connect(&["--modern"]);
    let listen = Listen {
        log_level: Some("loud".into()),
        ..Listen::default()
    };
    let error = client
        .listen(&listen, &RequestOptions::default())
        .unwrap_err();
    assert_eq!(error.status, Status::InvalidArgument);
    let token = CancellationToken::new();
    token.cancel(None);
    let error = client
        .listen(&wanted(), &RequestOptions::with_cancellation(&token))
        .unwrap_err();
    assert_eq!(error.status, Status::Cancelled);
    assert_eq!(error.request_id, None);
}

#[test]
fn the_client_sends_notifications_and_roots_list_changed() {
    let log = log_path("listen_notify");
    let client = connect_logged(&log, &[]);
    client
        .notify("notifications/custom", Some(json!({"a": 1})))
        .unwrap();
    assert_eq!(
        client.notify_roots_list_changed().unwrap_err().status,
        Status::InvalidArgument,
        "no roots handler, no roots capability"
    );
    assert_eq!(
        client.notify("x", Some(json!([1]))).unwrap_err().status,
        Status::InvalidArgument
    );
    let lines = log_after_ping(&client, &log);
    let custom = lines
        .iter()
        .find(|l| is_method(l, "notifications/custom"))
        .unwrap();
    assert_eq!(custom["params"], json!({"a": 1}));
    assert!(custom.get("id").is_none());

    let log = log_path("listen_notify_roots");
    let mut callbacks = Callbacks::default();
    callbacks.request_handlers.insert(
        "roots/list".into(),
        Arc::new(|_: &mcpc::handlers::ServerRequest| Ok(json!({"roots": []}))),
    );
    let client = connect_with(
        config(&["--log", log.to_str().unwrap()]),
        ClientOptions {
            callbacks,
            ..ClientOptions::default()
        },
    );
    client.notify_roots_list_changed().unwrap();
    let lines = log_after_ping(&client, &log);
    let init = lines.iter().find(|l| is_method(l, "initialize")).unwrap();
    assert_eq!(init["params"]["capabilities"]["roots"]["listChanged"], true);
    assert!(lines
        .iter()
        .any(|l| is_method(l, "notifications/roots/list_changed")));

    let modern = connect(&["--modern"]);
    assert_eq!(
        modern.notify_roots_list_changed().unwrap_err().status,
        Status::NotSupported
    );
}

/// The C API: an `mcp_listen` with its setters, `mcp_client_listen` on another thread, notices
/// on the C callbacks, the token's cancel ends it; also the trace and client notifications.
#[test]
fn the_c_api_listens_and_cancels() {
    use mcpc::ffi::*;
    use std::ffi::{c_char, c_void, CStr, CString};
    use std::ptr::null;

    unsafe extern "C" fn on_notification(
        userdata: *mut c_void,
        method: *const c_char,
        _params: *const c_char,
    ) {
        let heard = &*(userdata as *const Heard);
        heard.push(format!(
            "notice {}",
            CStr::from_ptr(method).to_string_lossy()
        ));
    }
    unsafe extern "C" fn on_list_changed(userdata: *mut c_void, kind: *const c_char) {
        let heard = &*(userdata as *const Heard);
        heard.push(format!("list {}", CStr::from_ptr(kind).to_string_lossy()));
    }
    unsafe extern "C" fn on_trace(
        userdata: *mut c_void,
        direction: mcp_trace_direction,
        transport: *const c_char,
        json: *const c_char,
    ) {
        let heard = &*(userdata as *const Heard);
        let json = CStr::from_ptr(json).to_string_lossy();
        if direction == mcp_trace_direction::Out && json.contains("subscriptions/listen") {
            let transport = CStr::from_ptr(transport).to_string_lossy();
            heard.push(format!("trace {transport}"));
        }
    }
    struct Sendable<T>(T);
    unsafe impl<T> Send for Sendable<T> {}

    let heard = Arc::new(Heard::default());
    let userdata = Arc::as_ptr(&heard) as *mut c_void;
    unsafe {
        let options = mcp_client_options_new();
        mcp_client_options_set_notification_callback(options, Some(on_notification), userdata);
        mcp_client_options_set_list_changed_callback(options, Some(on_list_changed), userdata);
        mcp_client_options_set_trace_callback(options, Some(on_trace), userdata);
        let server = CString::new(SERVER.as_str()).unwrap();
        let argv = [server.as_ptr(), c"--modern".as_ptr(), null()];
        let client = mcp_client_new_stdio(argv.as_ptr(), options);
        mcp_client_options_free(options);
        assert_eq!(take_result(mcp_client_connect(client)).0, mcp_status::Ok);

        let listen = mcp_listen_new();
        assert_eq!(
            mcp_listen_set_tools_list_changed(listen, true),
            mcp_status::Ok
        );
        let token = mcp_cancellation_new();
        let ropts = mcp_request_options_new();
        mcp_request_options_set_cancellation(ropts, token);
        let call = Sendable((client, listen, ropts));
        let listening = std::thread::spawn(move || {
            let call = call;
            let (client, listen, ropts) = call.0;
            Sendable(mcp_client_listen(client, listen, ropts))
        });
        heard.wait_for("notice notifications/subscriptions/acknowledged", 1);
        let emitted = mcp_client_request(
            client,
            c"test/emit".as_ptr(),
            cr#"{"events":[{"kind":"tools"}]}"#.as_ptr(),
            null(),
        );
        assert_eq!(take_result(emitted).0, mcp_status::Ok);
        heard.wait_for("list tools", 1);
        heard.wait_for("trace stdio", 1);
        assert!(mcp_cancellation_cancel(token, c"done".as_ptr()));
        let result = listening.join().unwrap().0;
        assert_eq!(mcp_result_status(result), mcp_status::Cancelled);
        assert_eq!(
            CStr::from_ptr(mcp_result_cancel_reason(result))
                .to_str()
                .unwrap(),
            "done"
        );
        mcp_result_free(result);
        let (status, message) = take_result(mcp_client_notify_roots_list_changed(client));
        assert_eq!(status, mcp_status::NotSupported, "{message}");
        let sent = mcp_client_notify(client, c"notifications/x".as_ptr(), c"{}".as_ptr());
        assert_eq!(take_result(sent).0, mcp_status::Ok);
        mcp_listen_free(listen);
        mcp_request_options_free(ropts);
        mcp_cancellation_free(token);
        mcp_client_free(client);
    }
}

/// Client notifications over Streamable HTTP. Handshake era: any notification (a POST the
/// server answers 202) and `notifications/roots/list_changed`, declared by the roots handler.
/// Modern era: no session and no envelope, the version header only (the 2026-07-28 revision
/// defines no client notification over HTTP, and our server takes one with a 202);
/// roots/list_changed does not exist there.
#[test]
fn over_http_the_client_sends_notifications_and_roots_list_changed() {
    use common::http_server::{http_requests, posts_of};
    let server = HttpServer::start("listen_notify_http_legacy", &[]);
    let mut callbacks = Callbacks::default();
    callbacks.request_handlers.insert(
        "roots/list".into(),
        Arc::new(|_: &mcpc::handlers::ServerRequest| Ok(json!({"roots": []}))),
    );
    let client = Client::http(
        server.config(),
        ClientOptions {
            mode: ConnectMode::Legacy,
            callbacks,
            ..ClientOptions::default()
        },
    );
    client.connect().unwrap();
    client
        .notify("notifications/custom", Some(json!({"a": 1})))
        .unwrap();
    client.notify_roots_list_changed().unwrap();
    let lines = server.wait_for(|lines| {
        !posts_of(&http_requests(lines), "notifications/roots/list_changed").is_empty()
    });
    let requests = http_requests(&lines);
    let custom = posts_of(&requests, "notifications/custom");
    assert_eq!(custom.len(), 1);
    assert_eq!(custom[0]["body"]["params"], json!({"a": 1}));
    assert!(custom[0]["body"].get("id").is_none());
    assert_eq!(
        posts_of(&requests, "notifications/roots/list_changed").len(),
        1
    );
    let init = posts_of(&requests, "initialize");
    assert_eq!(
        init[0]["body"]["params"]["capabilities"]["roots"]["listChanged"],
        true
    );

    let server = HttpServer::start("listen_notify_http_modern", &["--modern"]);
    let client = server.connect(ConnectMode::Modern);
    client
        .notify("notifications/custom", Some(json!({"b": 2})))
        .unwrap();
    let requests = server.requests();
    let custom = posts_of(&requests, "notifications/custom");
    assert_eq!(custom.len(), 1, "the notification went out");
    assert_eq!(custom[0]["body"]["params"], json!({"b": 2}), "no envelope");
    assert_eq!(
        common::http_server::header(custom[0], "mcp-protocol-version"),
        Some("2026-07-28")
    );
    assert_eq!(
        common::http_server::header(custom[0], "mcp-session-id"),
        None
    );
    assert_eq!(
        client.notify_roots_list_changed().unwrap_err().status,
        Status::NotSupported
    );
}

/// A `subscriptions/listen` made by hand and started (the completion API: `Request::Other`,
/// C's `mcp_request_other`), so that no thread waits on it, hears its notices as
/// `Client::listen` does, in both transports; its cancel ends it. (Its notices were dropped:
/// only `Client::listen` told the router the request was a listen.)
#[test]
fn a_listen_started_by_hand_hears_its_notices() {
    let server = HttpServer::start("listen_started_by_hand", &["--modern"]);
    let heard = Arc::new(Heard::default());
    let modern = |heard: &Arc<Heard>| ClientOptions {
        mode: ConnectMode::Modern,
        ..options(heard)
    };
    let clients = [
        Client::http(server.config(), modern(&heard)),
        Client::stdio(config(&["--modern"]), modern(&heard)),
    ];
    for client in &clients {
        client.connect().unwrap();
        heard.take();
        let token = CancellationToken::new();
        let (outcome_tx, outcome) = std::sync::mpsc::channel();
        let listen = mcpc::Request::Other {
            method: "subscriptions/listen".into(),
            params: Some(json!({ "notifications": { "toolsListChanged": true } })),
        };
        client
            .start(
                listen,
                &RequestOptions::with_cancellation(&token),
                move |result| {
                    let _ = outcome_tx.send(result);
                },
            )
            .unwrap();
        heard.wait_for("ack", 1);
        emit(client, json!([{"kind": "tools"}, {"kind": "tools"}]));
        let events = heard.wait_for("list tools", 2);
        assert_eq!(
            events,
            [
                "ack {\"toolsListChanged\":true}",
                "list tools",
                "list tools"
            ],
            "what the listen heard"
        );
        token.cancel(None);
        let result = outcome.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(result.unwrap_err().status, Status::Cancelled);
        wait_no_listeners(client);
        client.close();
    }
}
