//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663, 2026-07-28 era). A client
//! that declares it may get a task (`resultType: "task"`) instead of the result of a
//! `tools/call`. The call then polls `tasks/get` on the caller's thread until the task ends and
//! returns the task's result as if the call had been plain; an `input_required` task is answered
//! through the host's handlers (as multi round-trip input is) with `tasks/update`.
//!
//! A cancel or timeout of such a call ends it at once, and one `tasks/cancel` for the task goes
//! out afterwards on a thread of its own (the request the server answered with the task is over,
//! so it gets no `notifications/cancelled`; the polls in flight are dropped without one either).
//! This file is the whole task leg of the call path: `settle_task` is where a call meets it.
//!
//! The 2025-11-25 era has experimental tasks of its own, driven the same way where a server
//! offers them: a `tools/call` goes out with a `task` member when the host allows tasks, the
//! server declared `tasks.requests.tools.call` and the tool was listed with
//! `execution.taskSupport` optional or required (the spec's default is forbidden). The answer is
//! `{task: {...}}`; `tasks/get` is polled (`pollInterval`), and once the task ends or needs
//! input, `tasks/result` gives the call's result (the server sends its questions as requests
//! while that is pending, answered by the host's handlers). A cancel sends `tasks/cancel`.

use super::changes::PauseEnd;
use super::input_required::input_required;
use super::lazy::Route;
use super::{closed_error, Client, ClientCore, RequestOptions};
use crate::cancellation::CancellationToken;
use crate::engine::reported_progress::ReportedProgress;
use crate::engine::{cancelled_error, timeout_error, CallOptions, Connection, RequestBody};
use crate::error::{Error, Result, Status};
use crate::handlers::{LogLevel, Progress};
use crate::protocol::methods;
use crate::protocol::params::Params;
use crate::sync::{lock, spawn, wait_until};
use serde_json::{json, Map, Value};
use std::cell::Cell;
use std::collections::HashSet;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Without a `pollIntervalMs`, polls back off from 50 ms by half again each time the task has
/// not changed, up to 1 s; a change starts again at 50 ms.
const FIRST_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(1);
/// A server's `pollIntervalMs` is honoured within these bounds: the floor keeps a server from
/// setting the client's pace (0 would be a busy loop), the cap keeps an hour from stranding the
/// call.
const MIN_POLL: Duration = crate::engine::limits::MIN_TASK_POLL_INTERVAL;
const MAX_POLL: Duration = Duration::from_secs(60);
/// How long the `tasks/cancel` sent after a cancelled call waits for its acknowledgement.
const CANCEL_ACK_TIMEOUT: Duration = Duration::from_secs(10);

/// The `tasks/cancel` requests still under way, so that closing the client lets them reach
/// the server (as it lets queued `notifications/cancelled` be written) instead of ending them.
#[derive(Default)]
pub(super) struct CancelsInFlight {
    count: Mutex<usize>,
    done: Condvar,
}

impl CancelsInFlight {
    fn start(self: &Arc<Self>) -> CancelInFlight {
        *lock(&self.count) += 1;
        CancelInFlight(self.clone())
    }

    /// Waits until none is under way, or until `deadline`.
    pub(super) fn wait_until(&self, deadline: Instant) {
        let mut count = lock(&self.count);
        while *count > 0 {
            match wait_until(&self.done, count, Some(deadline)) {
                Some(next) => count = next,
                None => return,
            }
        }
    }
}

/// One `tasks/cancel` under way; dropped when it has its answer (or failed).
struct CancelInFlight(Arc<CancelsInFlight>);

impl Drop for CancelInFlight {
    fn drop(&mut self) {
        *lock(&self.0.count) -= 1;
        self.0.done.notify_all();
    }
}

/// Which leg of a call a request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Leg {
    /// The call's own request (or an input round of it).
    Call,
    /// `tasks/get` or `tasks/update` for the call's task.
    TaskPoll,
}

/// Where a task stands, read from a task object.
enum State<'a> {
    Working,
    InputRequired(&'a Map<String, Value>),
    Completed(&'a Value),
    Failed(Error),
    Cancelled,
}

impl ClientCore {
    /// Whether a `task` result is acceptable for `method`: the client declared the extension,
    /// and the extension covers the method (`tools/call` only, for now).
    pub(super) fn accepts_task(&self, method: &str) -> bool {
        self.options.tasks && self.is_modern() && method == methods::TOOLS_CALL
    }

    /// 2025-11-25: whether a `tools/call` of `tool` goes out task-augmented: the host allows
    /// tasks, the connection speaks the handshake era, the server declared
    /// `tasks.requests.tools.call`, and a `tools/list` page said the tool may run as a task.
    pub(super) fn legacy_task_tool(&self, tool: &str) -> bool {
        let Some(session) = self.session_ref().filter(|_| self.options.tasks) else {
            return false;
        };
        session.envelope.is_none()
            && (session.server_info)
                .pointer("/capabilities/tasks/requests/tools/call")
                .is_some()
            && lock(&session.task_tools).contains(tool)
    }

    /// 2025-11-25: notes which listed tools may run as tasks (see `legacy_task_tool`).
    pub(super) fn note_task_tools(&self, tools: &[Value]) {
        let Some(session) = self.session_ref().filter(|_| self.options.tasks) else {
            return;
        };
        if session.envelope.is_some() {
            return;
        }
        let mut known = lock(&session.task_tools);
        for tool in tools {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            match tool
                .pointer("/execution/taskSupport")
                .and_then(Value::as_str)
            {
                Some("optional" | "required") => known.insert(name.to_owned()),
                _ => known.remove(name),
            };
        }
    }

    /// Where a call answered with a task meets the task leg (`step_for` decides it is one, and
    /// that the host did not ask for the task itself): `task` is polled to its end.
    pub(super) fn settle_task(
        self: &Arc<Self>,
        method: &str,
        task: Value,
        opts: &RequestOptions,
        started: Instant,
    ) -> Result<Value> {
        TaskCall::new(self, method, opts, started)?.run(task)
    }
}

impl Client {
    /// `tasks/get`: the task as the server has it now (`status`, `statusMessage`, and `result`,
    /// `error` or `inputRequests` by status).
    pub fn get_task(&self, task_id: &str, opts: &RequestOptions) -> Result<Value> {
        self.request(methods::TASKS_GET, Some(json!({ "taskId": task_id })), opts)
    }

    /// `tasks/update`: answers the task's `inputRequests`; `input_responses` is an object
    /// keyed as they are.
    pub fn update_task(
        &self,
        task_id: &str,
        input_responses: Value,
        opts: &RequestOptions,
    ) -> Result<Value> {
        if !input_responses.is_object() {
            return Err(Error::invalid("input responses must be a JSON object"));
        }
        let params = json!({ "taskId": task_id, "inputResponses": input_responses });
        self.request(methods::TASKS_UPDATE, Some(params), opts)
    }

    /// `tasks/cancel`: asks the server to cancel the task (cooperative: it may still end
    /// otherwise). Blocks for the acknowledgement.
    pub fn cancel_task(&self, task_id: &str, opts: &RequestOptions) -> Result<Value> {
        self.request(
            methods::TASKS_CANCEL,
            Some(json!({ "taskId": task_id })),
            opts,
        )
    }
}

/// One call's task, polled to its end.
struct TaskCall<'a> {
    client: &'a Arc<ClientCore>,
    method: &'a str,
    opts: &'a RequestOptions,
    connection: Arc<Connection>,
    /// Stamps the modern envelope on the `tasks/cancel` sent from another thread.
    envelope: Option<crate::protocol::envelope::Envelope>,
    progress: ReportedProgress,
    /// A 2025-11-25 experimental task: its result comes from `tasks/result`.
    legacy: bool,
    /// When the call times out: from its start, or from the task's last change with
    /// `reset_timeout_on_progress`, never past `hard_deadline`.
    deadline: Cell<Option<Instant>>,
    hard_deadline: Option<Instant>,
    /// The server is not idle while the task runs, polls and pauses included.
    _busy: Option<super::idle::Busy>,
}

/// How a poll ended without a final result.
enum Stop {
    /// Cancelled or timed out: the task gets its `tasks/cancel`.
    Abandoned(Error),
    /// Anything else (the connection failed, the server refused the poll...).
    Failed(Error),
}

impl<'a> TaskCall<'a> {
    fn new(
        client: &'a Arc<ClientCore>,
        method: &'a str,
        opts: &'a RequestOptions,
        started: Instant,
    ) -> Result<Self> {
        let (session, busy) = match client.route()? {
            Route::Session(session, busy) => (session, busy),
            Route::ConnectFirst => return Err(Error::new(Status::NotConnected, "not connected")),
        };
        let own = opts.on_progress.clone();
        let progress = session
            .connection
            .progress_reporter(own, client.options.callbacks.on_progress.clone());
        let timeout = match opts.timeout.or(client.options.timeout) {
            Some(Duration::ZERO) => None,
            other => other,
        };
        let hard_deadline = opts.max_total_timeout.and_then(|t| started.checked_add(t));
        let deadline = earliest(timeout.and_then(|t| started.checked_add(t)), hard_deadline);
        Ok(TaskCall {
            client,
            method,
            opts,
            connection: session.connection.clone(),
            envelope: session.envelope.clone(),
            progress,
            legacy: session.envelope.is_none(),
            deadline: Cell::new(deadline),
            hard_deadline,
            _busy: busy,
        })
    }

    fn run(self, created: Value) -> Result<Value> {
        let task_id = match created.get("taskId") {
            Some(Value::String(id)) if !id.is_empty() => id.clone(),
            _ => {
                return Err(Error::protocol(format!(
                    "{}: the task result has no taskId",
                    self.method
                )))
            }
        };
        let outcome = self.drive(&task_id, created);
        let ended_by_itself = match &outcome {
            Ok(_) => true,
            Err(Stop::Failed(e)) => e.status != Status::Closed,
            Err(Stop::Abandoned(_)) => false,
        };
        self.progress.finish(ended_by_itself);
        match outcome {
            Ok(result) => Ok(result),
            Err(Stop::Failed(error)) => Err(error),
            Err(Stop::Abandoned(error)) => {
                // The caller returns now; the server hears of it afterwards.
                self.send_cancel(&task_id, error.cancel_reason.as_deref());
                Err(Error {
                    data: Some(json!({ "taskId": task_id })),
                    ..error
                })
            }
        }
    }

    /// Polls until the task ends. The task object in hand is looked at first: a server may
    /// answer the call with a task that has already ended.
    fn drive(&self, task_id: &str, mut task: Value) -> std::result::Result<Value, Stop> {
        let mut this = TaskState::default();
        let mut backoff = FIRST_BACKOFF;
        loop {
            let changed = self.saw(&task, &mut this);
            if self.legacy {
                if let Some(result) = self.legacy_end(task_id, &task)? {
                    return Ok(result);
                }
            } else {
                match state(&task, self.method).map_err(Stop::Failed)? {
                    State::Completed(result) => return Ok(result.clone()),
                    State::Failed(error) => return Err(Stop::Failed(error)),
                    State::Cancelled => {
                        let message = task.get("statusMessage").and_then(Value::as_str);
                        return Err(Stop::Failed(server_cancelled(task_id, message)));
                    }
                    State::InputRequired(requests) => {
                        if self.answer(task_id, &task, requests, &mut this)? {
                            // Answers given: look again at once.
                            task = self.poll(task_id)?;
                            continue;
                        }
                    }
                    State::Working => {}
                }
            }
            if changed {
                backoff = FIRST_BACKOFF;
            }
            let interval_key = if self.legacy {
                "pollInterval"
            } else {
                "pollIntervalMs"
            };
            let interval = match task.get(interval_key).and_then(Value::as_u64) {
                Some(ms) => Duration::from_millis(ms).clamp(MIN_POLL, MAX_POLL),
                None => {
                    let wait = backoff;
                    backoff = (backoff * 3 / 2).min(MAX_BACKOFF);
                    wait
                }
            };
            self.pause(interval)?;
            task = self.poll(task_id)?;
        }
    }

    /// 2025-11-25: a task that ended or needs input gives the call's result through
    /// `tasks/result` (the server asks its questions as requests while that is pending, and
    /// the host's handlers answer them); `None` while it works.
    fn legacy_end(&self, task_id: &str, task: &Value) -> std::result::Result<Option<Value>, Stop> {
        match task.get("status").and_then(Value::as_str) {
            Some("working") => Ok(None),
            Some("completed" | "failed" | "input_required") => {
                let params = json!({ "taskId": task_id });
                self.leg(methods::TASKS_RESULT, params).map(Some)
            }
            Some("cancelled") => {
                let message = task.get("statusMessage").and_then(Value::as_str);
                Err(Stop::Failed(server_cancelled(task_id, message)))
            }
            other => Err(Stop::Failed(Error::protocol(format!(
                "{}: the task's status {other:?} is not one the tasks spec defines",
                self.method
            )))),
        }
    }

    /// Notes what the task says; status changes go to the progress callbacks and, with
    /// `reset_timeout_on_progress`, restart the timeout. Returns whether it changed.
    fn saw(&self, task: &Value, this: &mut TaskState) -> bool {
        let status = task.get("status").and_then(Value::as_str).unwrap_or("?");
        let message = task
            .get("statusMessage")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let seen = (status.to_owned(), message);
        if this.last_seen.as_ref() == Some(&seen) {
            return false;
        }
        this.reports += 1;
        if let (true, Some(timeout)) = (self.opts.reset_timeout_on_progress, self.timeout()) {
            let restarted = Instant::now().checked_add(timeout);
            self.deadline.set(earliest(restarted, self.hard_deadline));
        }
        let text = match &seen.1 {
            Some(message) => format!("{}: {message}", seen.0),
            None => seen.0.clone(),
        };
        self.progress.report(Progress {
            token: self.opts.progress_token.clone().unwrap_or(Value::Null),
            progress: f64::from(this.reports),
            total: None,
            message: Some(text),
        });
        this.last_seen = Some(seen);
        true
    }

    /// Answers the input requests not answered before, through the host's handlers, with one
    /// `tasks/update`. Returns whether it sent one.
    fn answer(
        &self,
        task_id: &str,
        task: &Value,
        requests: &Map<String, Value>,
        this: &mut TaskState,
    ) -> std::result::Result<bool, Stop> {
        let fresh: Map<String, Value> = requests
            .iter()
            .filter(|(key, _)| !this.answered.contains(*key))
            .map(|(key, request)| (key.clone(), request.clone()))
            .collect();
        if fresh.is_empty() {
            return Ok(false);
        }
        if this.updates >= self.client.options.input_required_max_rounds {
            let message = format!(
                "{}: task {task_id} still needs input after {} updates",
                self.method, this.updates
            );
            return Err(Stop::Failed(input_required(task.clone(), message)));
        }
        let responses = match self.client.answer_inputs(self.method, &fresh, self.opts) {
            Ok(responses) => responses,
            Err(_) if self.cancelled() => return Err(Stop::Abandoned(self.cancelled_now())),
            Err(_) if self.client.changes.is_closed() => return Err(Stop::Failed(closed_error())),
            // The task stays: the host may answer it by hand (`update_task`).
            Err(message) => return Err(Stop::Failed(input_required(task.clone(), message))),
        };
        this.updates += 1;
        this.answered.extend(fresh.keys().cloned());
        let params = json!({ "taskId": task_id, "inputResponses": Value::Object(responses) });
        self.leg(methods::TASKS_UPDATE, params)?;
        Ok(true)
    }

    fn poll(&self, task_id: &str) -> std::result::Result<Value, Stop> {
        self.leg(methods::TASKS_GET, json!({ "taskId": task_id }))
    }

    /// One `tasks/get`, `tasks/update` or `tasks/result`, under the call's token and what is
    /// left of its time; a cancel drops it without `notifications/cancelled`.
    fn leg(&self, method: &'static str, params: Value) -> std::result::Result<Value, Stop> {
        let timeout = match self.deadline() {
            None => Some(Duration::ZERO),
            Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => Some(left),
                _ => return Err(Stop::Abandoned(self.timed_out())),
            },
        };
        let opts = RequestOptions {
            cancellation: self.opts.cancellation.clone(),
            timeout,
            ..RequestOptions::default()
        };
        match super::operation::drive(self.client.send_raw(
            method.into(),
            Some(Arc::new(params.into())),
            &opts,
            Leg::TaskPoll,
            None,
        )) {
            Ok(result) => Ok(result.into_value()),
            // The poll's id is not the call's; its timeout is what was left of the call's.
            Err(e) if e.status == Status::Cancelled => Err(Stop::Abandoned(Error {
                request_id: None,
                ..e
            })),
            Err(e) if e.status == Status::Timeout => Err(Stop::Abandoned(self.timed_out())),
            // What these requests carry that a transport may refuse to send (HTTP mirrors it
            // into `Mcp-Name`) is the server's taskId: its fault, not the host's.
            Err(e) if e.status == Status::InvalidArgument => {
                Err(Stop::Failed(Error::protocol(format!(
                    "{method} for {}: the server's taskId cannot be sent back: {}",
                    self.method, e.message
                ))))
            }
            Err(e) => Err(Stop::Failed(
                e.context(&format!("{method} for {}", self.method)),
            )),
        }
    }

    /// Waits between polls; a cancel or the client's close ends the wait (and the call) at once.
    fn pause(&self, interval: Duration) -> std::result::Result<(), Stop> {
        let wake_at = Instant::now() + interval;
        let until = match self.deadline() {
            Some(deadline) if deadline < wake_at => deadline,
            _ => wake_at,
        };
        match self
            .client
            .changes
            .pause(until, self.opts.cancellation.as_ref())
        {
            PauseEnd::Cancelled => Err(Stop::Abandoned(self.cancelled_now())),
            // As when close meets a poll in flight: no `tasks/cancel` (the connection is gone).
            PauseEnd::Closed => Err(Stop::Failed(closed_error())),
            PauseEnd::Elapsed if until < wake_at => Err(Stop::Abandoned(self.timed_out())),
            PauseEnd::Elapsed => Ok(()),
        }
    }

    fn deadline(&self) -> Option<Instant> {
        self.deadline.get()
    }

    fn cancelled(&self) -> bool {
        self.opts
            .cancellation
            .as_ref()
            .is_some_and(CancellationToken::is_cancelled)
    }

    fn cancelled_now(&self) -> Error {
        let reason = self.opts.cancellation.as_ref().and_then(|t| t.reason());
        cancelled_error(None, reason)
    }

    fn timed_out(&self) -> Error {
        let hard = self
            .hard_deadline
            .is_some_and(|hard| Instant::now() >= hard);
        let reason = match (hard, self.opts.max_total_timeout, self.timeout()) {
            (true, Some(max), _) => format!("exceeded the maximum of {} ms", max.as_millis()),
            (_, _, Some(timeout)) => format!("timed out after {} ms", timeout.as_millis()),
            _ => "timed out".to_owned(),
        };
        timeout_error(None, Some(reason))
    }

    fn timeout(&self) -> Option<Duration> {
        self.opts.timeout.or(self.client.options.timeout)
    }

    /// Sends one `tasks/cancel` for the task from a thread of its own, so the caller returns
    /// at once; its answer (or failure) only reaches the library log.
    fn send_cancel(&self, task_id: &str, reason: Option<&str>) {
        let params = Params::from(json!({ "taskId": task_id }));
        let envelope = self.envelope.clone();
        let connection = self.connection.clone();
        let log = self.client.options.callbacks.on_log.clone();
        let gate = self.client.gate.clone();
        let what = format!(
            "tasks/cancel for task {task_id} ({})",
            reason.unwrap_or("cancelled")
        );
        let in_flight = self.client.task_cancels.start();
        let body = move || {
            let _in_flight = in_flight;
            let opts = CallOptions {
                timeout: Some(CANCEL_ACK_TIMEOUT),
                cancel_on_wire: false,
                ..CallOptions::default()
            };
            let outcome = connection.call(
                RequestBody::new(methods::TASKS_CANCEL, Some(&params)).stamped(envelope.as_ref()),
                &opts,
            );
            if let (Err(error), Some(log)) = (outcome, log) {
                let message = format!("{what} failed: {}", error.message);
                gate.run(|| log(LogLevel::Warning, &message));
            }
        };
        if let Err(error) = spawn("mcpc-task-cancel", body, |_| ()) {
            self.client.log(
                LogLevel::Warning,
                &format!("could not send tasks/cancel: {}", error.message),
            );
        }
    }
}

/// What one drive has seen of its task.
#[derive(Default)]
struct TaskState {
    /// Status reports so far, and what the last one said.
    reports: u32,
    last_seen: Option<(String, Option<String>)>,
    /// Input request keys already answered (the server lists them until it has taken them).
    answered: HashSet<String>,
    updates: u32,
}

/// Reads a task object's status and what goes with it.
fn state<'v>(task: &'v Value, method: &str) -> Result<State<'v>> {
    let status = task.get("status").and_then(Value::as_str);
    match status {
        Some("working") => Ok(State::Working),
        Some("input_required") => match task.get("inputRequests") {
            Some(Value::Object(requests)) => Ok(State::InputRequired(requests)),
            None | Some(Value::Null) => Ok(State::Working),
            Some(_) => Err(Error::protocol(format!(
                "{method}: the task's inputRequests is not an object"
            ))),
        },
        Some("completed") => match task.get("result") {
            Some(result @ Value::Object(_)) => Ok(State::Completed(result)),
            _ => Err(Error::protocol(format!(
                "{method}: the completed task has no result object"
            ))),
        },
        Some("failed") => Ok(State::Failed(failure(task, method))),
        Some("cancelled") => Ok(State::Cancelled),
        other => Err(Error::protocol(format!(
            "{method}: the task's status {other:?} is not one the tasks extension defines"
        ))),
    }
}

/// A failed task's JSON-RPC error, as if the call itself had failed with it.
fn failure(task: &Value, method: &str) -> Error {
    let Some(error) = task.get("error").filter(|e| e.is_object()) else {
        return Error::protocol(format!("{method}: the failed task has no error object"));
    };
    let code = error.get("code").and_then(Value::as_i64);
    let message = error.get("message").and_then(Value::as_str);
    match (code, message) {
        (Some(code), Some(message)) => {
            Error::server(code, message.to_owned(), error.get("data").cloned())
        }
        _ => Error::protocol(format!(
            "{method}: the failed task's error has no code and message"
        )),
    }
}

/// The server cancelled the task itself (the host did not: its cancel never gets here).
fn server_cancelled(task_id: &str, message: Option<&str>) -> Error {
    let message = match message {
        Some(message) => format!("the server cancelled task {task_id}: {message}"),
        None => format!("the server cancelled task {task_id}"),
    };
    Error {
        cancel_reason: Some(message.clone()),
        ..Error::new(Status::Cancelled, message)
    }
}

fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
