//! The 2025-11-25 experimental tasks, against our test server (`--legacy-tasks`) over stdio and
//! HTTP: a tool listed with `execution.taskSupport` optional is called with a `task` member when
//! the host allows tasks, the answer `{task: {...}}` is polled with `tasks/get`, and the call
//! returns what `tasks/result` gives (input asked for meanwhile is answered by the host's
//! handler); a cancel or timeout returns at once and the server sees exactly one
//! `tasks/cancel`, after the task existed, and no `notifications/cancelled`.

mod common;

use common::http_server::{posts_of, HttpServer};
use common::tasks::{
    call_cancelled_once_created, check_one_tasks_cancel, count, events, position, wait_for_event,
    AT_ONCE,
};
use common::{config, log_path, read_log, text};
use mcpc::handlers::{HandlerError, Progress, RequestHandler};
use mcpc::{
    CancellationToken, Client, ClientOptions, ConnectMode, RequestOptions, Status, StdioConfig,
};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Clone, Copy)]
enum Transport {
    Stdio,
    Http,
}

struct Setup {
    client: Client,
    /// The stdio server's log (every line it read).
    log: Option<PathBuf>,
    http: Option<HttpServer>,
}

fn options() -> ClientOptions {
    ClientOptions {
        mode: ConnectMode::Legacy,
        tasks: true,
        ..ClientOptions::default()
    }
}

fn setup(name: &str, transport: Transport, options: ClientOptions, flags: &[&str]) -> Setup {
    match transport {
        Transport::Stdio => {
            let log = log_path(name);
            let mut args = vec!["--log", log.to_str().unwrap()];
            args.extend_from_slice(flags);
            let config: StdioConfig = config(&args);
            let client = Client::stdio(config, options);
            client.connect().expect("connect");
            Setup {
                client,
                log: Some(log),
                http: None,
            }
        }
        Transport::Http => {
            let server = HttpServer::start(name, flags);
            let client = Client::http(server.config(), options);
            client.connect().expect("connect");
            Setup {
                client,
                log: None,
                http: Some(server),
            }
        }
    }
}

/// A client of a server that offers tasks, which has listed the tools (so it knows `task` may
/// run as one).
fn listed(name: &str, transport: Transport, options: ClientOptions) -> Setup {
    let s = setup(name, transport, options, &["--legacy-tasks"]);
    let tools = s.client.list_tools(None, &none()).expect("tools/list");
    let task = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "task");
    assert_eq!(task.unwrap()["execution"]["taskSupport"], "optional");
    s
}

fn none() -> RequestOptions {
    RequestOptions::default()
}

/// The `tools/call` requests the server received.
fn calls_received(s: &Setup) -> Vec<Value> {
    match (&s.log, &s.http) {
        (Some(log), _) => read_log(log)
            .into_iter()
            .filter(|l| l["method"] == "tools/call")
            .collect(),
        (None, Some(server)) => posts_of(&server.requests(), "tools/call")
            .into_iter()
            .map(|r| r["body"].clone())
            .collect(),
        _ => unreachable!(),
    }
}

fn runs_as_a_task_and_returns_the_result(transport: Transport, name: &str) {
    let s = listed(name, transport, options());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let opts = RequestOptions {
        on_progress: Some(Arc::new(move |p: &Progress| {
            sink.lock()
                .unwrap()
                .push(p.message.clone().unwrap_or_default());
        })),
        ..none()
    };
    let args = json!({ "steps": 3, "step_ms": 20 });
    let result = s.client.call_tool("task", Some(args), &opts).unwrap();
    assert_eq!(text(&result), "task done after 3 steps", "{result}");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], "task-1",
        "the result came from tasks/result: {result}"
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.first().map(String::as_str), Some("working: starting"));
    assert_eq!(seen.last().map(String::as_str), Some("completed: done"));
    let calls = calls_received(&s);
    let call = calls
        .iter()
        .find(|c| c["params"]["name"] == "task")
        .unwrap();
    assert_eq!(call["params"]["task"], json!({}), "task-augmented: {call}");
    let events = events(&s.client);
    assert_eq!(count(&events, "created"), 1, "{events:?}");
    assert_eq!(count(&events, "result task-1"), 1, "{events:?}");
    assert_eq!(count(&events, "cancel "), 0, "{events:?}");
    if let Some(log) = &s.log {
        let polls = read_log(log)
            .into_iter()
            .filter(|l| l["method"] == "tasks/get")
            .count();
        assert!(polls >= 1, "the call polled tasks/get");
    }
}

#[test]
fn a_listed_task_tool_runs_as_a_task_and_returns_its_result_stdio() {
    runs_as_a_task_and_returns_the_result(Transport::Stdio, "legacy-tasks-result-stdio");
}

#[test]
fn a_listed_task_tool_runs_as_a_task_and_returns_its_result_http() {
    runs_as_a_task_and_returns_the_result(Transport::Http, "legacy-tasks-result-http");
}

#[test]
fn a_call_is_task_augmented_only_when_allowed_offered_and_listed() {
    let plain = "done without a task (3 steps)";
    // Not listed yet: the tool's taskSupport is unknown, so the spec's default (forbidden).
    let s = setup(
        "legacy-tasks-unlisted",
        Transport::Stdio,
        options(),
        &["--legacy-tasks"],
    );
    let result = s.client.call_tool("task", None, &none()).unwrap();
    assert_eq!(text(&result), plain);
    // The host did not allow tasks.
    let no_tasks = ClientOptions {
        tasks: false,
        ..options()
    };
    let s = listed("legacy-tasks-not-allowed", Transport::Stdio, no_tasks);
    assert_eq!(
        text(&s.client.call_tool("task", None, &none()).unwrap()),
        plain
    );
    // The server does not declare tasks (its tools/list has no `task` either).
    let s = setup("legacy-tasks-not-offered", Transport::Stdio, options(), &[]);
    s.client.list_tools(None, &none()).unwrap();
    assert_eq!(
        text(&s.client.call_tool("task", None, &none()).unwrap()),
        plain
    );
    let calls = calls_received(&s);
    assert!(calls.iter().all(|c| c["params"].get("task").is_none()));
}

fn cancel_sends_one_tasks_cancel(transport: Transport, name: &str, by_timeout: bool) {
    let s = listed(name, transport, options());
    call_cancelled_once_created(&s.client, by_timeout);
    check_one_tasks_cancel(&s.client, s.log.as_deref());
}

#[test]
fn cancelling_a_legacy_task_sends_one_tasks_cancel_after_the_task_exists_stdio() {
    cancel_sends_one_tasks_cancel(Transport::Stdio, "legacy-tasks-cancel-stdio", false);
}

#[test]
fn cancelling_a_legacy_task_sends_one_tasks_cancel_after_the_task_exists_http() {
    cancel_sends_one_tasks_cancel(Transport::Http, "legacy-tasks-cancel-http", false);
}

#[test]
fn a_timeout_of_a_legacy_task_sends_one_tasks_cancel() {
    cancel_sends_one_tasks_cancel(Transport::Stdio, "legacy-tasks-timeout", true);
}

fn answering_elicitation(calls: Arc<Mutex<Vec<Value>>>) -> RequestHandler {
    Arc::new(move |request| {
        calls.lock().unwrap().push(request.params.clone());
        Ok::<Value, HandlerError>(json!({ "action": "accept", "content": { "ok": true } }))
    })
}

fn input_is_answered_while_tasks_result_waits(transport: Transport, name: &str) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let mut options = options();
    options.callbacks.request_handlers.insert(
        "elicitation/create".into(),
        answering_elicitation(asked.clone()),
    );
    let s = listed(name, transport, options);
    let args = json!({ "steps": 1, "outcome": "input", "poll_ms": 5 });
    let result = s.client.call_tool("task", Some(args), &none()).unwrap();
    assert_eq!(
        text(&result),
        r#"answered: {"action":"accept","content":{"ok":true}}"#
    );
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(
        asked[0]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        "task-1"
    );
}

/// A cancel that arrives while `tasks/result` is pending (the server waits there for the
/// host's answer to its question, and the host's handler holds on): the call returns at once,
/// the server gets one `tasks/cancel` after it got `tasks/result`, and no
/// `notifications/cancelled` goes out for the pending `tasks/result`.
fn cancel_while_tasks_result_waits(transport: Transport, name: &str) {
    let (entered_tx, entered) = crossbeam_channel::bounded::<()>(1);
    let (release_tx, release) = crossbeam_channel::bounded::<()>(1);
    let mut options = options();
    options.callbacks.request_handlers.insert(
        "elicitation/create".into(),
        Arc::new(move |_: &mcpc::handlers::ServerRequest| {
            let _ = entered_tx.try_send(());
            let _ = release.recv_timeout(Duration::from_secs(10));
            Ok::<Value, HandlerError>(json!({ "action": "decline" }))
        }),
    );
    let s = listed(name, transport, options);
    let token = CancellationToken::new();
    let canceller = {
        let token = token.clone();
        std::thread::spawn(move || {
            entered.recv_timeout(Duration::from_secs(10)).unwrap();
            token.cancel(Some("enough"));
            Instant::now()
        })
    };
    let args = json!({ "steps": 1, "outcome": "input", "poll_ms": 5 });
    let opts = RequestOptions::with_cancellation(&token);
    let error = s.client.call_tool("task", Some(args), &opts).unwrap_err();
    let returned = Instant::now();
    let cancelled_at = canceller.join().unwrap();
    assert_eq!(error.status, Status::Cancelled, "{error:?}");
    assert!(returned.duration_since(cancelled_at) < AT_ONCE);
    // The handler answers only once the server has the tasks/cancel: an answer that came
    // first could let the task complete before the cancel reached it (the server decides).
    wait_for_event(&s.client, "cancel task-1");
    let _ = release_tx.send(());
    check_one_tasks_cancel(&s.client, s.log.as_deref());
    let events = events(&s.client);
    assert!(
        position(&events, "result task-1") < position(&events, "cancel task-1"),
        "the cancel came while tasks/result was pending: {events:?}"
    );
}

#[test]
fn a_cancel_while_tasks_result_waits_sends_one_tasks_cancel_stdio() {
    cancel_while_tasks_result_waits(Transport::Stdio, "legacy-tasks-cancel-result-stdio");
}

#[test]
fn a_cancel_while_tasks_result_waits_sends_one_tasks_cancel_http() {
    cancel_while_tasks_result_waits(Transport::Http, "legacy-tasks-cancel-result-http");
}

#[test]
fn input_is_answered_by_the_handler_while_tasks_result_waits_stdio() {
    input_is_answered_while_tasks_result_waits(Transport::Stdio, "legacy-tasks-input-stdio");
}

#[test]
fn input_is_answered_by_the_handler_while_tasks_result_waits_http() {
    input_is_answered_while_tasks_result_waits(Transport::Http, "legacy-tasks-input-http");
}

#[test]
fn a_failed_or_server_cancelled_legacy_task_ends_the_call_so() {
    let s = listed("legacy-tasks-ends", Transport::Stdio, options());
    let args = json!({ "steps": 1, "outcome": "fail" });
    let e = s.client.call_tool("task", Some(args), &none()).unwrap_err();
    assert_eq!(
        (e.status, e.code),
        (Status::ServerError, Some(-32603)),
        "{e:?}"
    );
    assert!(e.message.contains("the task failed on purpose"), "{e:?}");
    let args = json!({ "steps": 1, "outcome": "server_cancel" });
    let e = s.client.call_tool("task", Some(args), &none()).unwrap_err();
    assert_eq!(e.status, Status::Cancelled, "{e:?}");
    assert!(
        e.message.contains("the server cancelled task task-2"),
        "{e:?}"
    );
    let events = events(&s.client);
    assert_eq!(
        count(&events, "cancel "),
        0,
        "the client cancelled nothing: {events:?}"
    );
}
