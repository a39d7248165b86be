//! The tasks extension (2026-07-28) against our test server, over stdio and HTTP: a call answered
//! with a task is polled to its end and returns the task's result; status reaches the progress
//! callbacks; input is answered with `tasks/update`; a cancel or timeout returns at once and the
//! server sees exactly one `tasks/cancel`, after the task existed, and no
//! `notifications/cancelled`; hosts can drive a task themselves.

mod common;

use common::http_server::{posts_of, HttpServer};
use common::tasks::{
    call_cancelled_once_created, check_one_tasks_cancel, count, events, position, wait_for_event,
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

/// A wide bound against hangs (CI is 2 loaded cores): a cancel returns well within it.
const AT_ONCE: Duration = Duration::from_secs(2);

enum Transport {
    Stdio,
    Http,
}

/// A modern client declaring the tasks extension, and the server it talks to.
struct Setup {
    client: Client,
    /// The stdio server's log (every line it read).
    log: Option<PathBuf>,
    http: Option<HttpServer>,
}

fn options() -> ClientOptions {
    ClientOptions {
        mode: ConnectMode::Modern,
        tasks: true,
        ..ClientOptions::default()
    }
}

fn setup(name: &str, transport: Transport, options: ClientOptions) -> Setup {
    match transport {
        Transport::Stdio => {
            let log = log_path(name);
            let config: StdioConfig = config(&["--modern", "--log", log.to_str().unwrap()]);
            let client = Client::stdio(config, options);
            client.connect().expect("connect");
            Setup {
                client,
                log: Some(log),
                http: None,
            }
        }
        Transport::Http => {
            let server = HttpServer::start(name, &["--modern"]);
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

fn none() -> RequestOptions {
    RequestOptions::default()
}

/// Collects the messages of the progress a call hears.
fn progress_messages() -> (Arc<Mutex<Vec<String>>>, mcpc::handlers::ProgressHandler) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let handler = Arc::new(move |p: &Progress| {
        sink.lock()
            .unwrap()
            .push(p.message.clone().unwrap_or_default());
    });
    (seen, handler)
}

fn completes_with_result_and_status(transport: Transport, name: &str) {
    let s = setup(name, transport, options());
    let (seen, handler) = progress_messages();
    let opts = RequestOptions {
        on_progress: Some(handler),
        ..none()
    };
    let args = json!({ "steps": 3, "step_ms": 20 });
    let result = s.client.call_tool("task", Some(args), &opts).unwrap();
    assert_eq!(text(&result), "task done after 3 steps");
    assert!(
        result.get("taskId").is_none(),
        "the task's result, not the task"
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.first().map(String::as_str), Some("working: starting"));
    assert_eq!(seen.last().map(String::as_str), Some("completed: done"));
    let events = events(&s.client);
    assert_eq!(count(&events, "created"), 1, "{events:?}");
    assert_eq!(count(&events, "cancel "), 0, "{events:?}");
    if let Some(log) = &s.log {
        let log = read_log(log);
        let polls: Vec<&Value> = log.iter().filter(|l| l["method"] == "tasks/get").collect();
        assert!(!polls.is_empty(), "the call polled tasks/get");
        assert_eq!(polls[0]["params"]["taskId"], "task-1");
        assert!(
            polls[0]["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"].is_string(),
            "polls carry the modern envelope"
        );
    }
    if let Some(server) = &s.http {
        let requests = server.requests();
        let polls = posts_of(&requests, "tasks/get");
        assert!(!polls.is_empty());
        assert_eq!(
            common::http_server::header(polls[0], "Mcp-Name"),
            Some("task-1"),
            "tasks/* mirror the task id into Mcp-Name"
        );
    }
}

#[test]
fn a_task_backed_call_returns_the_final_result_and_reports_status_stdio() {
    completes_with_result_and_status(Transport::Stdio, "tasks-complete-stdio");
}

#[test]
fn a_task_backed_call_returns_the_final_result_and_reports_status_http() {
    completes_with_result_and_status(Transport::Http, "tasks-complete-http");
}

#[test]
fn without_the_option_no_extension_is_declared_and_the_tool_runs_inline() {
    let s = setup(
        "tasks-off",
        Transport::Stdio,
        ClientOptions {
            tasks: false,
            ..options()
        },
    );
    let result = s.client.call_tool("task", None, &none()).unwrap();
    assert_eq!(text(&result), "done without a task (3 steps)");
    let caps = s
        .client
        .call_tool("client_capabilities", None, &none())
        .unwrap();
    assert!(caps["structuredContent"]["capabilities"]
        .get("extensions")
        .is_none());
    // A server that needs the extension says so; the error is the server's.
    let e = s
        .client
        .call_tool("task", Some(json!({ "required": true })), &none())
        .unwrap_err();
    assert_eq!((e.status, e.code), (Status::ServerError, Some(-32021)));
}

#[test]
fn a_failed_task_is_the_calls_server_error() {
    let s = setup("tasks-fail", Transport::Stdio, options());
    let args = json!({ "steps": 1, "outcome": "fail" });
    let e = s.client.call_tool("task", Some(args), &none()).unwrap_err();
    assert_eq!(e.status, Status::ServerError);
    assert_eq!(e.code, Some(-32603));
    assert_eq!(e.message, "the task failed on purpose");
    assert_eq!(e.data, Some(json!({ "task": "task-1" })));
}

#[test]
fn a_task_the_server_cancels_ends_the_call_cancelled_without_a_tasks_cancel() {
    let s = setup("tasks-server-cancel", Transport::Stdio, options());
    let args = json!({ "steps": 1, "outcome": "server_cancel" });
    let e = s.client.call_tool("task", Some(args), &none()).unwrap_err();
    assert_eq!(e.status, Status::Cancelled);
    assert!(e.message.contains("the server gave up"), "{}", e.message);
    assert_eq!(count(&events(&s.client), "cancel "), 0);
}

fn answering_elicitation(calls: Arc<Mutex<u32>>) -> RequestHandler {
    Arc::new(move |request| {
        assert_eq!(request.method, "elicitation/create");
        *calls.lock().unwrap() += 1;
        Ok::<Value, HandlerError>(json!({ "action": "accept", "content": { "ok": true } }))
    })
}

#[test]
fn an_input_required_task_is_answered_through_the_handler_once() {
    let calls = Arc::new(Mutex::new(0));
    let mut options = options();
    options.callbacks.request_handlers.insert(
        "elicitation/create".into(),
        answering_elicitation(calls.clone()),
    );
    let s = setup("tasks-input", Transport::Stdio, options);
    // Polled every 5 ms while the server waits for the answer: the same request is listed
    // again until the update lands, and must be answered once only.
    let args = json!({ "steps": 1, "outcome": "input", "poll_ms": 5 });
    let result = s.client.call_tool("task", Some(args), &none()).unwrap();
    assert_eq!(
        text(&result),
        r#"answered: {"action":"accept","content":{"ok":true}}"#
    );
    assert_eq!(*calls.lock().unwrap(), 1);
    let events = events(&s.client);
    assert_eq!(count(&events, "update task-1"), 1, "{events:?}");
}

#[test]
fn an_input_required_task_without_a_handler_is_input_required_and_left_to_the_host() {
    let s = setup("tasks-input-nohandler", Transport::Stdio, options());
    let args = json!({ "steps": 1, "outcome": "input" });
    let e = s.client.call_tool("task", Some(args), &none()).unwrap_err();
    assert_eq!(e.status, Status::InputRequired);
    let task = e.data.expect("the task");
    assert_eq!(task["status"], "input_required");
    // The host answers by hand, then polls to the end.
    let responses = json!({ "answer-1": { "action": "decline" } });
    s.client
        .update_task("task-1", responses, &none())
        .expect("tasks/update");
    let deadline = Instant::now() + Duration::from_secs(5);
    let done = loop {
        let task = s.client.get_task("task-1", &none()).unwrap();
        if task["status"] == "completed" || Instant::now() > deadline {
            break task;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(text(&done["result"]), r#"answered: {"action":"decline"}"#);
}

/// Cancels (or times out) a call whose task never ends, once the task exists, and checks from
/// the server's side what it saw.
fn cancel_sends_one_tasks_cancel(transport: Transport, name: &str, by_timeout: bool) {
    let s = setup(name, transport, options());
    call_cancelled_once_created(&s.client, by_timeout);
    check_one_tasks_cancel(&s.client, s.log.as_deref());
    if let Some(server) = &s.http {
        let requests = server.requests();
        let cancels = posts_of(&requests, "tasks/cancel");
        assert_eq!(cancels.len(), 1);
        assert_eq!(
            common::http_server::header(cancels[0], "Mcp-Name"),
            Some("task-1")
        );
    }
}

#[test]
fn cancelling_a_task_backed_call_sends_one_tasks_cancel_after_the_task_exists_stdio() {
    cancel_sends_one_tasks_cancel(Transport::Stdio, "tasks-cancel-stdio", false);
}

#[test]
fn cancelling_a_task_backed_call_sends_one_tasks_cancel_after_the_task_exists_http() {
    cancel_sends_one_tasks_cancel(Transport::Http, "tasks-cancel-http", false);
}

#[test]
fn a_timeout_of_a_task_backed_call_sends_one_tasks_cancel_stdio() {
    cancel_sends_one_tasks_cancel(Transport::Stdio, "tasks-timeout-stdio", true);
}

#[test]
fn a_timeout_of_a_task_backed_call_sends_one_tasks_cancel_http() {
    cancel_sends_one_tasks_cancel(Transport::Http, "tasks-timeout-http", true);
}

#[test]
fn a_token_cancelled_before_the_call_sends_nothing() {
    let s = setup("tasks-precancelled", Transport::Stdio, options());
    let token = CancellationToken::new();
    token.cancel(None);
    let e = s
        .client
        .call_tool("task", None, &RequestOptions::with_cancellation(&token))
        .unwrap_err();
    assert_eq!(e.status, Status::Cancelled);
    let events = events(&s.client);
    assert!(events.is_empty(), "{events:?}");
}

#[test]
fn return_task_lets_the_host_drive_and_cancel_the_task() {
    let s = setup("tasks-by-hand", Transport::Http, options());
    let opts = RequestOptions {
        return_task: true,
        ..none()
    };
    let args = json!({ "outcome": "never", "steps": 0 });
    let task = s.client.call_tool("task", Some(args), &opts).unwrap();
    assert_eq!(task["resultType"], "task");
    let id = task["taskId"].as_str().unwrap().to_owned();
    assert_eq!(
        s.client.get_task(&id, &none()).unwrap()["status"],
        "working"
    );
    s.client.cancel_task(&id, &none()).unwrap();
    assert_eq!(
        s.client.get_task(&id, &none()).unwrap()["status"],
        "cancelled"
    );
    let e = s.client.get_task("no-such-task", &none()).unwrap_err();
    assert_eq!((e.status, e.code), (Status::ServerError, Some(-32602)));
    let e = s.client.update_task(&id, json!([1]), &none()).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
}

#[test]
fn a_task_answer_to_a_client_that_did_not_declare_the_extension_is_a_protocol_error() {
    // The server answers with a task only to a client that declared it; a host that declares
    // the capabilities itself (without the option) still gets the task but may not poll it.
    let mut options = options();
    options.tasks = false;
    options.capabilities = Some(json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } }));
    let s = setup("tasks-undeclared", Transport::Stdio, options);
    let e = s.client.call_tool("task", None, &none()).unwrap_err();
    assert_eq!(e.status, Status::ProtocolError, "{e:?}");
}

#[test]
fn a_cancel_while_a_poll_is_in_flight_drops_the_poll_without_notifications_cancelled() {
    let s = setup("tasks-cancel-mid-poll", Transport::Stdio, options());
    let log = s.log.clone().unwrap();
    let token = CancellationToken::new();
    let canceller = {
        let token = token.clone();
        std::thread::spawn(move || {
            // The server answers each tasks/get after 500 ms: cancel while one is pending.
            common::wait_for_log(&log, |lines| {
                lines.iter().any(|l| l["method"] == "tasks/get")
            });
            token.cancel(None);
            Instant::now()
        })
    };
    let args = json!({ "outcome": "never", "steps": 0, "poll_ms": 5, "get_delay_ms": 500 });
    let opts = RequestOptions::with_cancellation(&token);
    let e = s.client.call_tool("task", Some(args), &opts).unwrap_err();
    let returned = Instant::now();
    assert_eq!(e.status, Status::Cancelled);
    assert_eq!(e.request_id, None, "the poll's id is not the call's");
    assert!(returned.duration_since(canceller.join().unwrap()) < AT_ONCE);
    wait_for_event(&s.client, "cancel task-1");
    let events = events(&s.client);
    assert_eq!(count(&events, "cancel "), 1, "{events:?}");
    let log = read_log(s.log.as_ref().unwrap());
    assert!(
        !log.iter().any(|l| l["method"] == "notifications/cancelled"),
        "the pending poll is dropped, not cancelled on the wire"
    );
}

#[test]
fn closing_right_after_the_cancel_still_lets_the_tasks_cancel_reach_the_server() {
    let s = setup("tasks-cancel-close", Transport::Stdio, options());
    let token = CancellationToken::new();
    let (created_tx, created) = crossbeam_channel::bounded::<()>(1);
    let opts = RequestOptions {
        cancellation: Some(token.clone()),
        on_progress: Some(Arc::new(move |_: &Progress| {
            let _ = created_tx.try_send(());
        })),
        ..none()
    };
    let canceller = std::thread::spawn(move || {
        created.recv_timeout(Duration::from_secs(10)).unwrap();
        token.cancel(None);
    });
    let args = json!({ "outcome": "never", "steps": 0 });
    let e = s.client.call_tool("task", Some(args), &opts).unwrap_err();
    assert_eq!(e.status, Status::Cancelled);
    assert_eq!(
        e.data,
        Some(json!({ "taskId": "task-1" })),
        "the task is named"
    );
    canceller.join().unwrap();
    let started = Instant::now();
    s.client.close();
    assert!(started.elapsed() < Duration::from_secs(5));
    // Close reaps the server: its log is complete.
    let log = read_log(s.log.as_ref().unwrap());
    let cancels: Vec<&Value> = log
        .iter()
        .filter(|l| l["method"] == "tasks/cancel")
        .collect();
    assert_eq!(cancels.len(), 1, "{log:?}");
    assert_eq!(cancels[0]["params"]["taskId"], "task-1");
}

#[test]
fn status_changes_restart_the_timeout_with_reset_timeout_on_progress() {
    let s = setup("tasks-reset-timeout", Transport::Stdio, options());
    // Six steps of 100 ms, each a status change: a 300 ms timeout restarted by each one.
    let opts = RequestOptions {
        timeout: Some(Duration::from_millis(300)),
        reset_timeout_on_progress: true,
        ..none()
    };
    let args = json!({ "steps": 6, "step_ms": 100 });
    let result = s
        .client
        .call_tool("task", Some(args.clone()), &opts)
        .unwrap();
    assert_eq!(text(&result), "task done after 6 steps");
    // Never past the maximum total.
    let opts = RequestOptions {
        max_total_timeout: Some(Duration::from_millis(350)),
        ..opts
    };
    let e = s.client.call_tool("task", Some(args), &opts).unwrap_err();
    assert_eq!(e.status, Status::Timeout);
    assert_eq!(
        e.cancel_reason.as_deref(),
        Some("exceeded the maximum of 350 ms")
    );
}

/// The C API end to end: declare tasks, take the task itself, drive it by hand.
#[test]
fn the_c_api_declares_tasks_and_drives_a_task_by_hand() {
    use mcpc::ffi::*;
    use std::ffi::{CStr, CString};
    unsafe fn json_of(result: *mut mcp_result) -> Value {
        assert_eq!(mcp_result_status(result), mcp_status::Ok);
        let text = CStr::from_ptr(mcp_result_json(result)).to_str().unwrap();
        let value = serde_json::from_str(text).unwrap();
        mcp_result_free(result);
        value
    }
    unsafe {
        let server = CString::new(common::SERVER.as_str()).unwrap();
        let argv = [server.as_ptr(), c"--modern".as_ptr(), std::ptr::null()];
        let co = mcp_client_options_new();
        assert_eq!(mcp_client_options_set_mode(co, 2), mcp_status::Ok);
        assert_eq!(mcp_client_options_set_tasks(co, true), mcp_status::Ok);
        let client = mcp_client_new_stdio(argv.as_ptr(), co);
        mcp_client_options_free(co);
        json_of(mcp_client_connect(client));

        // Polled to the end, as a plain call.
        let args = cr#"{"steps":1}"#;
        let done = json_of(mcp_client_call_tool(
            client,
            c"task".as_ptr(),
            args.as_ptr(),
            std::ptr::null(),
        ));
        assert_eq!(text(&done), "task done after 1 steps");

        let ro = mcp_request_options_new();
        assert_eq!(
            mcp_request_options_set_return_task(ro, true),
            mcp_status::Ok
        );
        let args = cr#"{"outcome":"input","steps":0}"#;
        let task = json_of(mcp_client_call_tool(
            client,
            c"task".as_ptr(),
            args.as_ptr(),
            ro,
        ));
        mcp_request_options_free(ro);
        assert_eq!(task["resultType"], "task");
        let id = CString::new(task["taskId"].as_str().unwrap()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while json_of(mcp_client_get_task(client, id.as_ptr(), std::ptr::null()))["status"]
            != "input_required"
        {
            assert!(Instant::now() < deadline, "the task never asked");
            std::thread::sleep(Duration::from_millis(10));
        }
        let answers = cr#"{"answer-1":{"action":"accept","content":{"ok":true}}}"#;
        json_of(mcp_client_update_task(
            client,
            id.as_ptr(),
            answers.as_ptr(),
            std::ptr::null(),
        ));
        json_of(mcp_client_cancel_task(
            client,
            id.as_ptr(),
            std::ptr::null(),
        ));
        mcp_client_free(client);
    }
}

#[test]
fn polls_honour_the_tasks_poll_interval() {
    let s = setup("tasks-poll-interval", Transport::Stdio, options());
    // 300 ms of work, polled every 50 ms: about 6 polls, whatever the speed of the machine
    // (a slow one polls less often, never more).
    let args = json!({ "steps": 3, "step_ms": 100, "poll_ms": 50 });
    let started = Instant::now();
    s.client.call_tool("task", Some(args), &none()).unwrap();
    let elapsed = started.elapsed();
    let log = read_log(s.log.as_ref().unwrap());
    let polls = log.iter().filter(|l| l["method"] == "tasks/get").count();
    let most = (elapsed.as_millis() / 50) as usize + 1;
    assert!(
        (2..=most).contains(&polls),
        "{polls} polls in {elapsed:?} at one per 50 ms"
    );
}

#[test]
fn without_a_poll_interval_polls_back_off() {
    let s = setup("tasks-backoff", Transport::Stdio, options());
    // 600 ms of work in one step: from 50 ms, half again each unchanged poll (50, 75, 112,
    // 168, 253...), about 5 polls; a fixed 50 ms would make 12.
    let args = json!({ "steps": 1, "step_ms": 600, "no_poll_interval": true });
    s.client.call_tool("task", Some(args), &none()).unwrap();
    let log = read_log(s.log.as_ref().unwrap());
    let polls = log.iter().filter(|l| l["method"] == "tasks/get").count();
    assert!((2..=8).contains(&polls), "{polls} polls");
}

/// A task-backed call started without blocking (`Client::start`): its poll loop runs off the
/// completion thread, so another started call completes while the task is still working, and
/// the task's result is the completion.
#[test]
fn a_started_task_backed_call_completes_with_the_result_and_holds_no_other_completion() {
    let s = setup("tasks-started", Transport::Stdio, options());
    let (tx, rx) = crossbeam_channel::unbounded::<(&str, mcpc::Result<Value>)>();
    let request = mcpc::Request::CallTool {
        name: "task".into(),
        arguments: Some(json!({ "steps": 3, "step_ms": 100 }).into()),
    };
    let task_tx = tx.clone();
    s.client
        .start(request, &none(), move |outcome| {
            let _ = task_tx.send(("task", outcome));
        })
        .unwrap();
    let echo = mcpc::Request::CallTool {
        name: "echo".into(),
        arguments: Some(json!({ "text": "meanwhile" }).into()),
    };
    s.client
        .start(echo, &none(), move |outcome| {
            let _ = tx.send(("echo", outcome));
        })
        .unwrap();
    let (first, outcome) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(first, "echo", "the task's polls held up another completion");
    assert_eq!(text(&outcome.unwrap()), "meanwhile");
    let (second, outcome) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(second, "task");
    assert_eq!(text(&outcome.unwrap()), "task done after 3 steps");
}

/// The cancel of a started task-backed call: CANCELLED delivered at once, and the server sees
/// one `tasks/cancel`, after the task existed.
#[test]
fn cancelling_a_started_task_backed_call_sends_one_tasks_cancel() {
    let s = setup("tasks-started-cancel", Transport::Stdio, options());
    let token = CancellationToken::new();
    let (created_tx, created) = crossbeam_channel::bounded::<()>(1);
    let opts = RequestOptions {
        cancellation: Some(token.clone()),
        on_progress: Some(Arc::new(move |_: &Progress| {
            let _ = created_tx.try_send(());
        })),
        ..none()
    };
    let (tx, rx) = crossbeam_channel::bounded(1);
    let request = mcpc::Request::CallTool {
        name: "task".into(),
        arguments: Some(json!({ "outcome": "never", "steps": 0, "poll_ms": 20 }).into()),
    };
    s.client
        .start(request, &opts, move |outcome| {
            let _ = tx.send((outcome, Instant::now()));
        })
        .unwrap();
    created.recv_timeout(Duration::from_secs(10)).unwrap();
    let cancelled_at = Instant::now();
    token.cancel(Some("enough"));
    let (outcome, delivered_at) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    let e = outcome.unwrap_err();
    assert_eq!(e.status, Status::Cancelled, "{e:?}");
    assert!(delivered_at.duration_since(cancelled_at) < AT_ONCE);
    let first = wait_for_event(&s.client, "cancel task-1");
    assert!(count(&first, "cancel task-1") >= 1, "{first:?}");
    // A barrier: the server answered a later request, so a second cancel would be recorded.
    s.client
        .call_tool("echo", Some(json!({"text": "x"})), &none())
        .unwrap();
    let events = events(&s.client);
    assert_eq!(count(&events, "cancel "), 1, "{events:?}");
    assert!(position(&events, "created task-1") < position(&events, "cancel task-1"));
}

/// A server that asks for a poll interval of 0 does not set the client's pace: one task is
/// polled at most 50 times a second (`mcpc::limits::MIN_TASK_POLL_INTERVAL` apart), whatever
/// the server asks. Counted from the server's side, over the task's 1 s of work.
#[test]
fn a_zero_poll_interval_is_held_to_at_most_50_polls_a_second() {
    let s = setup("tasks-zero-interval", Transport::Stdio, options());
    let args = json!({ "steps": 1, "step_ms": 1000, "poll_ms": 0 });
    let started = Instant::now();
    s.client.call_tool("task", Some(args), &none()).unwrap();
    let window = started.elapsed();
    let log = read_log(s.log.as_ref().unwrap());
    let polls = log.iter().filter(|l| l["method"] == "tasks/get").count();
    // 50 a second, and one more for where the window starts.
    let most = (window.as_secs_f64() * 50.0) as usize + 1;
    common::report_figure(&format!(
        "a task whose server asks pollIntervalMs 0: {polls} tasks/get in {} ms (at most 50 a second)",
        window.as_millis()
    ));
    assert!(polls >= 2, "{polls} polls in {window:?}");
    assert!(polls <= most, "{polls} polls in {window:?}, at most {most}");
}
