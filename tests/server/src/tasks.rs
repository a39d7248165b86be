//! The tasks extension (`io.modelcontextprotocol/tasks`, 2026-07-28). The
//! unlisted tool `task` answers with a task when the request's envelope
//! declares the extension (and runs to its end inline otherwise); a thread of
//! its own then works through `steps` steps of `step_ms`, and the task ends as
//! `outcome` says: `complete`, `fail` (a JSON-RPC error), `input` (asks the
//! client a question through `inputRequests` and waits for `tasks/update`),
//! `server_cancel` or `never` (works until cancelled). `tasks/get`,
//! `tasks/update` and `tasks/cancel` serve them, and every task event is
//! recorded in order; the unlisted tool `task_events` returns that record, so
//! tests check from the server's side what the client did, and when.
//!
//! With `--legacy-tasks`, the 2025-11-25 experimental tasks too: the tool is
//! listed (taskSupport optional), a call carrying `task` is answered with
//! `{task: {...}}` (`pollInterval`, `ttl`), `tasks/get` shows the task without
//! its result, and `tasks/result` waits for the end and gives the result (or
//! the error); for `input`, it asks the client `elicitation/create` (with the
//! related-task `_meta`) while it waits, and the answer finishes the task.

use std::collections::{HashMap, HashSet};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::tools::text_result;
use crate::{Reply, Request, RpcError, Server};

const EXTENSION: &str = "io.modelcontextprotocol/tasks";
const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
const MISSING_CAPABILITY: i64 = -32021;
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
/// What `never` waits for at most, so no test leaves a thread behind for long.
const NEVER_LIMIT: Duration = Duration::from_secs(60);

#[derive(Default)]
struct Store {
    next_id: u64,
    tasks: HashMap<String, Value>,
    /// Input responses the client sent, by task.
    responses: HashMap<String, Value>,
    /// How long `tasks/get` takes to answer, by task (`get_delay_ms`).
    get_delays: HashMap<String, u64>,
    /// The 2025-11-25 tasks.
    legacy: HashSet<String>,
    events: Vec<String>,
}

struct Shared {
    store: Mutex<Store>,
    /// Signalled on every cancel and update.
    changed: Condvar,
}

fn shared() -> &'static Shared {
    static SHARED: OnceLock<Shared> = OnceLock::new();
    SHARED.get_or_init(|| Shared {
        store: Mutex::default(),
        changed: Condvar::new(),
    })
}

fn lock_store() -> MutexGuard<'static, Store> {
    shared().store.lock().unwrap()
}

/// Whether this request's envelope declares the tasks extension.
fn declared(request: &Request) -> bool {
    request.params["_meta"][CLIENT_CAPABILITIES_KEY]["extensions"]
        .get(EXTENSION)
        .is_some()
}

/// The tool `task`, as `tools/list` shows it with `--legacy-tasks`.
pub fn legacy_definition() -> Value {
    json!({
        "name": "task",
        "description": "Runs as a task when asked to (steps, step_ms, poll_ms, outcome)",
        "inputSchema": { "type": "object" },
        "execution": { "taskSupport": "optional" },
    })
}

/// The tool `task`.
pub fn call(server: &Server, request: &Request, args: &Value) -> Reply {
    let plan = Plan::from(args);
    let legacy = server.args.legacy_tasks && request.params["task"].is_object();
    if !declared(request) && !legacy {
        if args["required"].as_bool() == Some(true) {
            return Err(
                RpcError::new(MISSING_CAPABILITY, "Missing required client capability").with_data(
                    json!({ "requiredCapabilities": { "extensions": { EXTENSION: {} } } }),
                ),
            );
        }
        return Ok(text_result(format!(
            "done without a task ({} steps)",
            plan.steps
        )));
    }
    let task = {
        let mut store = lock_store();
        store.next_id += 1;
        let id = format!("task-{}", store.next_id);
        let (ttl, poll_interval) = match legacy {
            true => ("ttl", "pollInterval"),
            false => ("ttlMs", "pollIntervalMs"),
        };
        let mut task = json!({
            "taskId": id,
            "status": "working",
            "statusMessage": "starting",
            "createdAt": "2026-07-28T00:00:00Z",
            "lastUpdatedAt": "2026-07-28T00:00:00Z",
            ttl: 60000,
            poll_interval: plan.poll_ms,
        });
        if args["no_poll_interval"].as_bool() == Some(true) {
            task.as_object_mut().map(|t| t.remove(poll_interval));
        }
        if legacy {
            store.legacy.insert(id.clone());
        }
        store.tasks.insert(id.clone(), task.clone());
        if let Some(ms) = args["get_delay_ms"].as_u64() {
            store.get_delays.insert(id.clone(), ms);
        }
        store.events.push(format!("created {id}"));
        task
    };
    let id = task["taskId"].as_str().unwrap_or_default().to_owned();
    thread::spawn(move || plan.run(&id));
    if legacy {
        return Ok(json!({ "task": task }));
    }
    let mut result = task;
    result["resultType"] = "task".into();
    Ok(result)
}

/// The tool `task_events`: what happened to tasks so far, in order.
pub fn events() -> Reply {
    let events = lock_store().events.clone();
    Ok(json!({
        "content": [{ "type": "text", "text": Value::from(events.clone()).to_string() }],
        "structuredContent": { "events": events },
    }))
}

/// `tasks/get`, `tasks/update` and `tasks/cancel`.
pub fn handle(request: &Request) -> Reply {
    let id = request.params["taskId"].as_str().unwrap_or_default();
    let legacy = lock_store().legacy.contains(id);
    if !declared(request) && !legacy {
        return Err(
            RpcError::new(MISSING_CAPABILITY, "Missing required client capability")
                .with_data(json!({ "requiredCapabilities": { "extensions": { EXTENSION: {} } } })),
        );
    }
    let mut store = lock_store();
    let method = request.method.as_str();
    let Some(task) = store.tasks.get(id).cloned() else {
        store.events.push(format!("{method} unknown {id}"));
        return Err(RpcError::invalid_params(format!(
            "Failed to retrieve task: Task not found: {id}"
        )));
    };
    match method {
        "tasks/get" => {
            let task = match store.get_delays.get(id).copied() {
                Some(ms) => {
                    drop(store);
                    thread::sleep(Duration::from_millis(ms));
                    lock_store().tasks[id].clone()
                }
                None => task,
            };
            Ok(match legacy {
                true => without_outcome(task),
                false => task,
            })
        }
        "tasks/update" => {
            let responses = request.params["inputResponses"].clone();
            let keys: Vec<&String> = responses
                .as_object()
                .map(|r| r.keys().collect())
                .unwrap_or_default();
            store.events.push(format!("update {id} {keys:?}"));
            store.responses.insert(id.to_owned(), responses);
            shared().changed.notify_all();
            Ok(json!({}))
        }
        "tasks/cancel" => {
            store.events.push(format!("cancel {id}"));
            let status = task["status"].as_str().unwrap_or_default();
            if !matches!(status, "completed" | "failed" | "cancelled") {
                set(
                    &mut store,
                    id,
                    "cancelled",
                    Some("cancelled by the client"),
                    &[],
                );
            }
            shared().changed.notify_all();
            Ok(json!({}))
        }
        other => Err(RpcError::new(-32601, format!("Method not found: {other}"))),
    }
}

/// A 2025-11-25 task as `tasks/get` shows it: its result, error and questions
/// come only through `tasks/result`.
fn without_outcome(mut task: Value) -> Value {
    if let Some(fields) = task.as_object_mut() {
        for key in ["result", "error", "inputRequests"] {
            fields.remove(key);
        }
    }
    task
}

/// `tasks/result` (2025-11-25): waits until the task ends and answers as the
/// call would have; while it needs input, asks the client on its behalf.
pub fn result(server: &Server, request: &Request) -> Reply {
    let id = request.params["taskId"].as_str().unwrap_or_default();
    let deadline = Instant::now() + NEVER_LIMIT;
    let mut store = lock_store();
    if !store.legacy.contains(id) {
        store.events.push(format!("tasks/result unknown {id}"));
        return Err(RpcError::invalid_params(format!("Task not found: {id}")));
    }
    store.events.push(format!("result {id}"));
    let mut asked = false;
    loop {
        let task = store.tasks[id].clone();
        let related = json!({ RELATED_TASK: { "taskId": id } });
        match task["status"].as_str().unwrap_or_default() {
            "completed" => {
                let mut result = task["result"].clone();
                result["_meta"] = related;
                return Ok(result);
            }
            "failed" => {
                let error = &task["error"];
                let code = error["code"].as_i64().unwrap_or(-32603);
                let message = error["message"].as_str().unwrap_or("failed");
                return Err(RpcError::new(code, message).with_data(error["data"].clone()));
            }
            "cancelled" => {
                return Err(RpcError::new(-32000, "Task cancelled").with_data(related));
            }
            "input_required" if !asked => {
                asked = true;
                let question = task["inputRequests"]["answer-1"]["params"].clone();
                let mut params = question;
                params["_meta"] = related;
                drop(store);
                let response = server.ask_client("elicitation/create", Some(params), NEVER_LIMIT);
                store = lock_store();
                if let Some(answer) = response.and_then(|r| r.get("result").cloned()) {
                    store
                        .responses
                        .insert(id.to_owned(), json!({ "answer-1": answer }));
                    shared().changed.notify_all();
                }
                continue;
            }
            _ => {}
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(RpcError::new(-32603, "the task did not end in time"));
        }
        store = shared()
            .changed
            .wait_timeout(store, deadline - now)
            .unwrap()
            .0;
    }
}

/// How one task runs, from the tool's arguments.
struct Plan {
    steps: u64,
    step_ms: u64,
    poll_ms: u64,
    outcome: String,
}

impl Plan {
    fn from(args: &Value) -> Plan {
        Plan {
            steps: args["steps"].as_u64().unwrap_or(3),
            step_ms: args["step_ms"].as_u64().unwrap_or(20),
            poll_ms: args["poll_ms"].as_u64().unwrap_or(10),
            outcome: args["outcome"].as_str().unwrap_or("complete").to_owned(),
        }
    }

    fn run(&self, id: &str) {
        for step in 1..=self.steps {
            if !self.wait_while_working(id, Duration::from_millis(self.step_ms)) {
                return;
            }
            let message = format!("step {step}/{}", self.steps);
            if !update_working(id, &message) {
                return;
            }
        }
        let mut store = lock_store();
        match self.outcome.as_str() {
            "fail" => set(
                &mut store,
                id,
                "failed",
                Some("failed on purpose"),
                &[(
                    "error",
                    json!({ "code": -32603, "message": "the task failed on purpose", "data": { "task": id } }),
                )],
            ),
            "server_cancel" => set(&mut store, id, "cancelled", Some("the server gave up"), &[]),
            "input" => {
                let question = json!({ "answer-1": {
                    "method": "elicitation/create",
                    "params": {
                        "message": "Proceed with the task?",
                        "requestedSchema": { "type": "object", "properties": { "ok": { "type": "boolean" } } },
                    },
                }});
                set(
                    &mut store,
                    id,
                    "input_required",
                    Some("waiting for an answer"),
                    &[("inputRequests", question)],
                );
                drop(store);
                let Some(answer) = wait_for_answer(id) else {
                    return;
                };
                let mut store = lock_store();
                let text = format!("answered: {answer}");
                set(
                    &mut store,
                    id,
                    "completed",
                    Some("done"),
                    &[("result", text_result(text))],
                );
            }
            "never" => {
                drop(store);
                self.wait_while_working(id, NEVER_LIMIT);
            }
            _ => {
                let text = format!("task done after {} steps", self.steps);
                set(
                    &mut store,
                    id,
                    "completed",
                    Some("done"),
                    &[("result", text_result(text))],
                );
            }
        }
    }

    /// Waits `duration` unless the task is cancelled first; false if it was.
    fn wait_while_working(&self, id: &str, duration: Duration) -> bool {
        let deadline = Instant::now() + duration;
        let mut store = lock_store();
        loop {
            if store.tasks[id]["status"] == "cancelled" {
                return false;
            }
            let now = Instant::now();
            if now >= deadline {
                return true;
            }
            store = shared()
                .changed
                .wait_timeout(store, deadline - now)
                .unwrap()
                .0;
        }
    }
}

/// Moves a working task to its next step; false once it was cancelled.
fn update_working(id: &str, message: &str) -> bool {
    let mut store = lock_store();
    if store.tasks[id]["status"] == "cancelled" {
        return false;
    }
    set(&mut store, id, "working", Some(message), &[]);
    true
}

/// Waits for the client's `tasks/update` with `answer-1` (or a cancel: `None`).
fn wait_for_answer(id: &str) -> Option<Value> {
    let deadline = Instant::now() + NEVER_LIMIT;
    let mut store = lock_store();
    loop {
        if store.tasks[id]["status"] == "cancelled" {
            return None;
        }
        if let Some(answer) = store.responses.get(id).and_then(|r| r.get("answer-1")) {
            return Some(answer.clone());
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        store = shared()
            .changed
            .wait_timeout(store, deadline - now)
            .unwrap()
            .0;
    }
}

/// Sets a task's status (and the fields that go with it), recording the change.
fn set(store: &mut Store, id: &str, status: &str, message: Option<&str>, fields: &[(&str, Value)]) {
    let Some(task) = store.tasks.get_mut(id) else {
        return;
    };
    task["status"] = status.into();
    task["statusMessage"] = message.map_or(Value::Null, Value::from);
    if status != "input_required" {
        if let Some(task) = task.as_object_mut() {
            task.remove("inputRequests");
        }
    }
    for (key, value) in fields {
        task[*key] = value.clone();
    }
    store.events.push(format!("{status} {id}"));
    shared().changed.notify_all();
}
