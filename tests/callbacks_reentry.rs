//! Every kind of host callback may call back into its own client: make a request, cancel
//! another call, close the client, connect it. None of them runs on a thread that holds the read slot or a
//! library lock, so none of these deadlocks (issue 13, item 3).

mod common;

use common::*;
use mcpc::handlers::{Callbacks, HandlerError, RequestHandler, ServerRequest};
use mcpc::{CancellationToken, Client, ClientOptions, RequestOptions, Status, StderrMode};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

/// Wide: a deadlock never ends, a working callback takes milliseconds.
const BOUND: Duration = Duration::from_secs(15);

#[derive(Clone, Copy, Debug)]
enum Kind {
    ClientProgress,
    OwnProgress,
    Message,
    ListChanged,
    ResourceUpdated,
    Notification,
    Log,
    Stderr,
    Handler(&'static str),
    /// A modern-era `input_required` round's handler (on the caller's thread).
    InputHandler,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Action {
    Ping,
    Cancel,
    Close,
    Connect,
}

/// What the callback does, once, and where it reports.
struct Reentry {
    client: OnceLock<Weak<Client>>,
    action: Action,
    /// The token of another call in flight, for `Action::Cancel`.
    other: CancellationToken,
    /// Set once the client is connected and the trigger is about to go (the log and stderr
    /// callbacks also hear about the handshake).
    armed: AtomicBool,
    fired: AtomicBool,
    report: crossbeam_channel::Sender<String>,
}

impl Reentry {
    fn act(&self) {
        if !self.armed.load(Ordering::SeqCst) || self.fired.swap(true, Ordering::SeqCst) {
            return;
        }
        let Some(client) = self.client.get().and_then(Weak::upgrade) else {
            let _ = self.report.send("no client".into());
            return;
        };
        let outcome = match self.action {
            Action::Ping => match a_request(&client) {
                Ok(_) => "ok".to_owned(),
                Err(e) => format!("the request failed: {e}"),
            },
            Action::Cancel => match self.other.cancel(Some("from a callback")) {
                true => "ok".to_owned(),
                false => "already cancelled".to_owned(),
            },
            Action::Close => {
                client.close();
                "ok".to_owned()
            }
            Action::Connect => match client.connect() {
                Ok(_) => "ok".to_owned(),
                Err(e) => format!("connect failed: {e}"),
            },
        };
        let _ = self.report.send(outcome);
    }
}

fn options(kind: Kind, reentry: &Arc<Reentry>) -> (ClientOptions, RequestOptions) {
    let r = reentry.clone();
    let mut callbacks = Callbacks::default();
    let mut request = RequestOptions::default();
    match kind {
        Kind::ClientProgress => {
            callbacks.on_progress = Some(Arc::new(move |_| r.act()));
            request.progress_token = Some(json!("p1"));
        }
        Kind::OwnProgress => request.on_progress = Some(Arc::new(move |_| r.act())),
        Kind::Message => callbacks.on_message = Some(Arc::new(move |_| r.act())),
        Kind::ListChanged => callbacks.on_list_changed = Some(Arc::new(move |_| r.act())),
        Kind::ResourceUpdated => callbacks.on_resource_updated = Some(Arc::new(move |_| r.act())),
        Kind::Notification => callbacks.on_notification = Some(Arc::new(move |_, _| r.act())),
        Kind::Log => callbacks.on_log = Some(Arc::new(move |_, _| r.act())),
        Kind::Stderr => {}
        Kind::Handler(_) | Kind::InputHandler => {
            let method = match kind {
                Kind::Handler(method) => method,
                _ => "elicitation/create",
            };
            let handler: RequestHandler =
                Arc::new(move |_: &ServerRequest| -> Result<Value, HandlerError> {
                    r.act();
                    Ok(json!({"roots": [], "action": "accept", "content": {}}))
                });
            callbacks
                .request_handlers
                .insert(method.to_owned(), handler);
        }
    }
    let options = ClientOptions {
        callbacks,
        ..ClientOptions::default()
    };
    (options, request)
}

/// The call that makes the server trigger the callback.
fn trigger(kind: Kind) -> (&'static str, Value) {
    let notify =
        |method: &str, params: Value| json!({"kind": "notify", "method": method, "params": params});
    match kind {
        Kind::ClientProgress | Kind::OwnProgress => ("progress", json!({"steps": 1})),
        Kind::Message => (
            "fault",
            notify("notifications/message", json!({"level": "info", "data": 1})),
        ),
        Kind::ListChanged => (
            "fault",
            notify("notifications/tools/list_changed", json!({})),
        ),
        Kind::ResourceUpdated => (
            "fault",
            notify(
                "notifications/resources/updated",
                json!({"uri": "test://a"}),
            ),
        ),
        Kind::Notification => ("fault", notify("notifications/custom", json!({"n": 1}))),
        // A line that is not JSON: the library logs it.
        Kind::Log => ("noise", json!({})),
        Kind::Stderr => ("echo", json!({"text": "hi"})),
        Kind::Handler(method) => ("ask_client", json!({"method": method, "params": {}})),
        Kind::InputHandler => ("confirm", json!({})),
    }
}

fn exercise(kind: Kind, action: Action) {
    let (report, reported) = crossbeam_channel::unbounded();
    let reentry = Arc::new(Reentry {
        client: OnceLock::new(),
        action,
        other: CancellationToken::new(),
        armed: AtomicBool::new(false),
        fired: AtomicBool::new(false),
        report,
    });
    let (options, request) = options(kind, &reentry);
    let name: String = format!("reentry-{kind:?}-{action:?}")
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    let log = log_path(&name);
    let mut args = vec!["--log", log.to_str().unwrap(), "--stderr-every-request"];
    if let Kind::InputHandler = kind {
        args.push("--modern");
    }
    let mut config = config(&args);
    if let Kind::Stderr = kind {
        let r = reentry.clone();
        config.stderr = StderrMode::Callback(Arc::new(move |_| r.act()));
    }
    let client = Arc::new(Client::stdio(config, options));
    let _ = reentry.client.set(Arc::downgrade(&client));
    client.connect().unwrap();

    // Another call in flight, for the callback to cancel.
    let other = (action == Action::Cancel).then(|| {
        let (client, token) = (client.clone(), reentry.other.clone());
        let other = std::thread::spawn(move || {
            let opts = RequestOptions::with_cancellation(&token);
            client.call_tool("never", None, &opts)
        });
        wait_for_log(&log, |lines| {
            lines
                .iter()
                .any(|l| is_method(l, "tools/call") && l["params"]["name"] == "never")
        });
        other
    });

    // On a thread of its own: on a broken library, the call that triggers the callback is the
    // one that deadlocks.
    reentry.armed.store(true, Ordering::SeqCst);
    let start = Instant::now();
    let (tool, args) = trigger(kind);
    let caller = {
        let client = client.clone();
        std::thread::spawn(move || client.call_tool(tool, Some(args), &request))
    };
    let what = format!("{kind:?} callback, {action:?}");
    let outcome = reported.recv_timeout(BOUND).unwrap_or_else(|_| {
        panic!("{what}: the callback's own call into the client never returned")
    });
    assert_eq!(outcome, "ok", "{what}");
    let triggered = join_within(caller, &what);
    match action {
        Action::Ping | Action::Cancel | Action::Connect => {
            triggered.unwrap_or_else(|e| panic!("{what}: the triggering call failed: {e}"));
            a_request(&client)
                .unwrap_or_else(|e| panic!("{what}: the client is unusable after: {e}"));
        }
        Action::Close => {
            if let Err(e) = triggered {
                assert_eq!(e.status, Status::Closed, "{what}: {e}");
            }
            let after = a_request(&client).unwrap_err();
            assert_eq!(after.status, Status::Closed, "{what}");
        }
    }
    if let Some(other) = other {
        let cancelled = join_within(other, &what).unwrap_err();
        assert_eq!(cancelled.status, Status::Cancelled, "{what}: {cancelled}");
    }
    assert!(start.elapsed() < BOUND, "{what}: {:?}", start.elapsed());
    client.close();
}

/// A request both eras answer (a modern server has no `ping`).
fn a_request(client: &Client) -> mcpc::Result<Value> {
    let args = json!({"text": "again"});
    client.call_tool("echo", Some(args), &RequestOptions::default())
}

fn join_within<T: Send + 'static>(thread: std::thread::JoinHandle<T>, what: &str) -> T {
    let deadline = Instant::now() + BOUND;
    while !thread.is_finished() {
        assert!(Instant::now() < deadline, "{what}: a call never returned");
        std::thread::sleep(Duration::from_millis(5));
    }
    thread.join().unwrap()
}

fn every_action(kind: Kind) {
    for action in [Action::Ping, Action::Cancel, Action::Close, Action::Connect] {
        exercise(kind, action);
    }
}

#[test]
fn the_library_log_callback_may_call_the_client() {
    every_action(Kind::Log);
}

#[test]
fn progress_callbacks_may_call_the_client() {
    every_action(Kind::ClientProgress);
    every_action(Kind::OwnProgress);
}

#[test]
fn notification_callbacks_may_call_the_client() {
    every_action(Kind::Message);
    every_action(Kind::ListChanged);
    every_action(Kind::ResourceUpdated);
    every_action(Kind::Notification);
}

#[test]
fn the_stderr_callback_may_call_the_client() {
    every_action(Kind::Stderr);
}

#[test]
fn input_required_handlers_may_call_the_client() {
    every_action(Kind::InputHandler);
}

#[test]
fn request_handlers_may_call_the_client() {
    every_action(Kind::Handler("sampling/createMessage"));
    every_action(Kind::Handler("elicitation/create"));
    every_action(Kind::Handler("roots/list"));
}
