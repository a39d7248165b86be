//! The in-flight table: routes each response to the call waiting for it, by id; hands
//! notifications and progress to the host's callbacks (on the callback thread); answers what
//! the server asks of us. One router per connection; transports feed it through `Inbound`.

use super::answers::Answers;
use super::call::{Call, Outbound, Outcome};
use super::callback_queue::CallbackQueue;
use super::limits::{MAX_SERVER_REQUEST_HANDLERS, MAX_SERVER_REQUEST_HANDLER_BYTES};
use super::own_progress::OwnProgress;
use crate::cancellation::CancellationToken;
use crate::error::Error;
use crate::handlers::{
    Callbacks, HandlerError, ListKind, LogLevel, LogMessage, Progress, ServerRequest,
};
use crate::protocol::json_text;
use crate::protocol::jsonrpc::{self, Incoming};
use crate::sync::{lock, spawn};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

pub struct Router {
    table: Mutex<Table>,
    outbound: Outbound,
    answers: Answers,
    callback_queue: Arc<CallbackQueue>,
    callbacks: Arc<Callbacks>,
    counters: Counters,
}

#[derive(Default)]
struct Table {
    calls: IdMap<Arc<Call>>,
    /// Progress tokens of calls in flight (keyed by the token's JSON text).
    progress: HashMap<String, Watcher>,
    /// Server requests being handled, so the server can cancel them (keyed by id JSON text).
    server_requests: HashMap<String, CancellationToken>,
    /// Handler threads running (not `server_requests.len()`: a server may reuse an id).
    handlers: usize,
    /// What the requests of the running handlers carry, in bytes (their params as JSON text).
    handler_bytes: usize,
    /// Set once the connection is gone; every later call fails with it.
    terminal: Option<Error>,
    /// Run once when the connection is gone (a listen waiting for a reconnect hears of it).
    on_terminal: Vec<Box<dyn FnOnce() + Send>>,
    /// `subscriptions/listen` calls in flight, by request id (= subscription id).
    listens: IdMap<Arc<ListenWatch>>,
    last_bad_frame: Option<String>,
}

type IdMap<V> = crate::id_map::IdMap<i64, V>;

/// The key of a progress token in `Table::progress`: its JSON text. Made twice per call that
/// asks for progress and once per progress notification, so the fast writer is used.
fn progress_key(token: &Value) -> String {
    json_text::to_string(token)
}

/// Who hears a call's progress.
struct Watcher {
    call: Arc<Call>,
    own: Option<OwnProgress>,
}

/// What the router learns about one `subscriptions/listen` call.
#[derive(Default)]
pub struct ListenWatch {
    /// The server sent `notifications/subscriptions/acknowledged` for it.
    pub acknowledged: std::sync::atomic::AtomicBool,
}

/// The `_meta` key that ties a notification to its listen (its request id).
const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";

/// What the router has dropped, for diagnostics and tests.
#[derive(Default)]
struct Counters {
    unmatched_responses: AtomicU64,
    bad_frames: AtomicU64,
    stray_progress: AtomicU64,
    dropped_answers: AtomicU64,
    refused_requests: AtomicU64,
}

/// A snapshot of the router's counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RouterStats {
    /// Responses that matched no waiting call (late answers to cancelled or timed-out calls,
    /// duplicates, ids never sent). They are dropped, never given to another call.
    pub unmatched_responses: u64,
    /// Frames skipped because they were not JSON-RPC, not JSON, or too long.
    pub bad_frames: u64,
    /// Progress for a token no call in flight has (a finished or cancelled call's).
    pub stray_progress: u64,
    /// Callbacks dropped because too many were already waiting to run (see
    /// [`super::callback_queue::QUEUE_LIMIT`]).
    pub dropped_callbacks: u64,
    /// Server requests left unanswered because the answer queue was full (see `limits`).
    pub dropped_answers: u64,
    /// Server requests answered -32603 because `MAX_SERVER_REQUEST_HANDLERS` were running.
    pub refused_requests: u64,
    pub last_bad_frame: Option<String>,
}

impl Router {
    pub fn new(
        outbound: Outbound,
        answers: Answers,
        callback_queue: Arc<CallbackQueue>,
        callbacks: Arc<Callbacks>,
    ) -> Self {
        Router {
            table: Mutex::default(),
            outbound,
            answers,
            callback_queue,
            callbacks,
            counters: Counters::default(),
        }
    }

    pub fn outbound(&self) -> Outbound {
        self.outbound.clone()
    }

    /// Adds a call to the table, unless the connection is already gone. With a progress token,
    /// the call's progress goes to its own callback (and the client's progress callback).
    pub fn register(
        &self,
        call: Arc<Call>,
        progress: Option<(&Value, Option<OwnProgress>)>,
    ) -> Result<(), Error> {
        let mut table = self.lock();
        if let Some(error) = &table.terminal {
            return Err(error.clone());
        }
        if let Some((token, own)) = progress {
            let watcher = Watcher {
                call: call.clone(),
                own,
            };
            table.progress.insert(progress_key(token), watcher);
        }
        table.calls.insert(call.id, call);
        Ok(())
    }

    /// How many calls are in flight (registered and not yet unregistered).
    pub fn in_flight(&self) -> usize {
        self.lock().calls.len()
    }

    pub fn unregister(&self, id: i64, progress_token: Option<&Value>) {
        let mut table = self.lock();
        table.calls.remove(&id);
        table.listens.remove(&id);
        if let Some(token) = progress_token {
            table.progress.remove(&progress_key(token));
        }
    }

    /// Marks call `id` (registered, not yet sent) as a listen: its acknowledgement is noted in
    /// `watch`, its notifications are told apart from those of ended listens, and a server's
    /// `notifications/cancelled` for it ends it as the server's graceful end would.
    pub fn watch_listen(&self, id: i64, watch: Arc<ListenWatch>) {
        self.lock().listens.insert(id, watch);
    }

    /// Runs `hook` once the connection is gone (at once if it is already).
    pub fn on_terminal(&self, hook: impl FnOnce() + Send + 'static) {
        let mut table = self.lock();
        if table.terminal.is_none() {
            table.on_terminal.push(Box::new(hook));
            return;
        }
        drop(table);
        hook();
    }

    /// Why the connection is gone, once it is (every later call fails with this).
    pub fn terminal(&self) -> Option<Error> {
        self.lock().terminal.clone()
    }

    /// Ends every pending call with `error`; with `terminal`, every later call too.
    pub fn fail_all(&self, error: Error, terminal: bool) {
        let (calls, handlers, hooks): (Vec<Arc<Call>>, Vec<CancellationToken>, Vec<_>) = {
            let mut table = self.lock();
            if table.terminal.is_some() {
                return;
            }
            let mut hooks = Vec::new();
            if terminal {
                table.terminal = Some(error.clone());
                hooks = std::mem::take(&mut table.on_terminal);
            }
            let handlers = match terminal {
                true => table
                    .server_requests
                    .drain()
                    .map(|(_, token)| token)
                    .collect(),
                false => Vec::new(),
            };
            (table.calls.values().cloned().collect(), handlers, hooks)
        };
        // Finish outside the table lock: waking a caller must not wait on the table.
        for call in calls {
            call.finish(Outcome::Failed(error.clone()));
        }
        for token in handlers {
            token.cancel(Some("the connection closed"));
        }
        for hook in hooks {
            hook();
        }
    }

    pub fn stats(&self) -> RouterStats {
        RouterStats {
            unmatched_responses: self.counters.unmatched_responses.load(Ordering::Relaxed),
            bad_frames: self.counters.bad_frames.load(Ordering::Relaxed),
            stray_progress: self.counters.stray_progress.load(Ordering::Relaxed),
            dropped_callbacks: self.callback_queue.dropped(),
            dropped_answers: self.counters.dropped_answers.load(Ordering::Relaxed),
            refused_requests: self.counters.refused_requests.load(Ordering::Relaxed),
            last_bad_frame: self.lock().last_bad_frame.clone(),
        }
    }

    fn route_response(&self, id: Value, frame: Value) {
        // Our ids are integers: any other id matches no call.
        self.route(id.as_i64(), Outcome::Response(frame));
    }

    /// Hands `outcome` to the call with `id`, or counts it as unmatched.
    fn route(&self, id: Option<i64>, outcome: Outcome) {
        let call = id.and_then(|id| self.lock().calls.get(&id).cloned());
        let delivered = call.is_some_and(|call| call.finish(outcome));
        if !delivered {
            self.counters
                .unmatched_responses
                .fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The library's own log, on the callback thread: the thread that noticed may hold the
    /// read slot or a lock, and a log callback that makes a request must get its answer.
    pub fn log(&self, level: LogLevel, message: &str) {
        if let Some(log) = self.callbacks.on_log.clone() {
            let message = message.to_owned();
            let bytes = message.len();
            self.deliver(bytes, move || log(level, &message));
        }
    }

    /// Runs `event`, which holds `bytes` of the server's data, on the callback thread, after
    /// those before it (or drops it when the queue is full).
    fn deliver(&self, bytes: usize, event: impl FnOnce() + Send + 'static) {
        // Err: the callback thread cannot start, or the client is closing; the event is lost
        // either way, and the calls themselves are unaffected.
        let _ = self.callback_queue.send(Box::new(event), bytes);
    }

    fn notification(&self, method: &str, params: Option<Value>) {
        if !self.listen_notice(method, params.as_ref()) {
            return;
        }
        let callbacks = &self.callbacks;
        match method {
            "notifications/progress" => return self.progress(params),
            "notifications/cancelled" => return self.server_cancelled(params),
            "notifications/message" if callbacks.on_message.is_some() => {
                let params = params.unwrap_or_default();
                let message = LogMessage {
                    level: params
                        .get("level")
                        .and_then(Value::as_str)
                        .unwrap_or("info")
                        .to_owned(),
                    logger: params
                        .get("logger")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    data: params.get("data").cloned().unwrap_or(Value::Null),
                };
                let handler = callbacks.on_message.clone().expect("checked");
                let bytes = json_text::estimated_len(&message.data) + message.level.len();
                return self.deliver(bytes, move || handler(&message));
            }
            "notifications/tools/list_changed"
            | "notifications/prompts/list_changed"
            | "notifications/resources/list_changed"
                if callbacks.on_list_changed.is_some() =>
            {
                let kind = match method {
                    "notifications/tools/list_changed" => ListKind::Tools,
                    "notifications/prompts/list_changed" => ListKind::Prompts,
                    _ => ListKind::Resources,
                };
                let handler = callbacks.on_list_changed.clone().expect("checked");
                return self.deliver(0, move || handler(kind));
            }
            "notifications/resources/updated" if callbacks.on_resource_updated.is_some() => {
                let uri = params
                    .as_ref()
                    .and_then(|p| p.get("uri"))
                    .and_then(Value::as_str);
                let uri = uri.unwrap_or_default().to_owned();
                let handler = callbacks.on_resource_updated.clone().expect("checked");
                return self.deliver(uri.len(), move || handler(&uri));
            }
            _ => {}
        }
        if let Some(handler) = callbacks.on_notification.clone() {
            let method = method.to_owned();
            let bytes = method.len() + params.as_ref().map_or(0, json_text::estimated_len);
            self.deliver(bytes, move || handler(&method, params.as_ref()));
        }
    }

    /// Notes a listen's acknowledgement. False for a notice of a listen that has ended (the
    /// server must send nothing after a cancel, but may have sent it before reading ours):
    /// it is dropped. Notices without a subscription id are not a listen's.
    fn listen_notice(&self, method: &str, params: Option<&Value>) -> bool {
        let Some(id) = params
            .and_then(|p| p.get("_meta"))
            .and_then(|meta| meta.get(SUBSCRIPTION_ID_KEY))
        else {
            return true;
        };
        let watch = id
            .as_i64()
            .and_then(|id| self.lock().listens.get(&id).cloned());
        match watch {
            Some(watch) => {
                if method == "notifications/subscriptions/acknowledged" {
                    watch.acknowledged.store(true, Ordering::Release);
                }
                true
            }
            None => false,
        }
    }

    /// Progress goes to the call's own callback, then the client's; progress for a token no
    /// call in flight has is dropped.
    fn progress(&self, params: Option<Value>) {
        let params = params.unwrap_or_default();
        let token = params.get("progressToken").cloned().unwrap_or(Value::Null);
        let per_call = {
            let table = self.lock();
            match table.progress.get(&progress_key(&token)) {
                Some(watcher) => {
                    watcher.call.saw_progress();
                    watcher.own.as_ref().map(OwnProgress::ticket)
                }
                None => {
                    self.counters.stray_progress.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            }
        };
        let client = self.callbacks.on_progress.clone();
        if per_call.is_none() && client.is_none() {
            return;
        }
        let progress = Progress {
            token,
            progress: params
                .get("progress")
                .and_then(Value::as_f64)
                .unwrap_or(0.0),
            total: params.get("total").and_then(Value::as_f64),
            message: params
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned),
        };
        // The call's own callback is skipped if the call has ended by the time this runs.
        let bytes = json_text::estimated_len(&progress.token)
            + progress.message.as_ref().map_or(0, String::len);
        self.deliver(bytes, move || {
            if let Some(ticket) = per_call {
                ticket.run(&progress);
            }
            if let Some(handler) = client {
                handler(&progress);
            }
        });
    }

    /// The server cancels one of its own requests: its handler's token is cancelled.
    fn server_cancelled(&self, params: Option<Value>) {
        let params = params.unwrap_or_default();
        let id = params.get("requestId").cloned().unwrap_or(Value::Null);
        // The modern era's server ends a listen on stdio this way: as its graceful end.
        let listen = id.as_i64().and_then(|n| {
            let table = self.lock();
            table.listens.get(&n).and(table.calls.get(&n).cloned())
        });
        if let Some(call) = listen {
            let frame = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {
                "resultType": "complete", "_meta": { SUBSCRIPTION_ID_KEY: id }
            }});
            call.finish(Outcome::Response(frame));
            return;
        }
        let token = self.lock().server_requests.get(&id.to_string()).cloned();
        if let Some(token) = token {
            token.cancel(params.get("reason").and_then(Value::as_str));
        }
    }

    /// Server-to-client requests are answered: `ping` by us, others by the host's handler on a
    /// thread of their own, or with -32601 when there is none, or -32603 when
    /// `MAX_SERVER_REQUEST_HANDLERS` are running already. Answers go through the bounded answer
    /// queue so no reader thread ever blocks on a write; one that finds it full is dropped.
    fn server_request(self: &Arc<Self>, id: Value, method: String, params: Option<Value>) {
        if method == crate::protocol::methods::PING {
            return self.answer(&id, Ok(Value::Object(Default::default())));
        }
        let Some(handler) = self.callbacks.request_handlers.get(&method).cloned() else {
            let message = format!("Method not found: {method}");
            return self.answer(
                &id,
                Err(HandlerError {
                    code: jsonrpc::METHOD_NOT_FOUND,
                    message,
                }),
            );
        };
        let token = CancellationToken::new();
        let key = id.to_string();
        let bytes = method.len() + params.as_ref().map_or(0, json_text::estimated_len);
        {
            let mut table = self.lock();
            if table.terminal.is_some() {
                // The client is closing: nobody would hear the handler's answer.
                return;
            }
            // One request of any size runs when no handler does.
            let over_bytes = table.handlers > 0
                && table.handler_bytes.saturating_add(bytes) > MAX_SERVER_REQUEST_HANDLER_BYTES;
            if table.handlers >= MAX_SERVER_REQUEST_HANDLERS || over_bytes {
                drop(table);
                let count = self
                    .counters
                    .refused_requests
                    .fetch_add(1, Ordering::Relaxed)
                    + 1;
                self.log_sometimes(count, "server requests refused: too many being handled");
                let message = format!(
                    "too many requests in progress (at most {MAX_SERVER_REQUEST_HANDLERS}, \
                     or {} MiB of them)",
                    MAX_SERVER_REQUEST_HANDLER_BYTES / (1024 * 1024)
                );
                let error = HandlerError {
                    code: jsonrpc::INTERNAL_ERROR,
                    message,
                };
                return self.answer(&id, Err(error));
            }
            table.server_requests.insert(key.clone(), token.clone());
            table.handlers += 1;
            table.handler_bytes += bytes;
        }
        let (router, request_id) = (self.clone(), id.clone());
        // A bug past the handler must still give its place back.
        let on_panic = {
            let (router, key) = (self.clone(), key.clone());
            move |_| {
                let mut table = router.lock();
                table.server_requests.remove(&key);
                table.handlers -= 1;
                table.handler_bytes -= bytes;
            }
        };
        let spawned = spawn(
            "mcpc-handler",
            move || {
                let params = params.unwrap_or(Value::Null);
                let request = ServerRequest {
                    method: &method,
                    params: &params,
                    cancellation: &token,
                };
                // Through the gate: a client closing does not start the handler, and waits
                // (bounded) for one that runs.
                let run = || router.callback_queue.run_here(|| handler(&request));
                let answer = crate::panic_guard::catch(run).unwrap_or_else(|_| {
                    Some(Err(HandlerError {
                        code: jsonrpc::INTERNAL_ERROR,
                        message: "the handler panicked".into(),
                    }))
                });
                // A request the server cancelled, or one left by a closing client, gets no
                // answer. The handler keeps its place among the running ones until its answer
                // is queued, so a server that reads no answers cannot make us run more handlers.
                if let (Some(answer), false) = (answer, token.is_cancelled()) {
                    let frame = answer_frame(&request_id, answer);
                    router.answers.send_waiting(frame, &token);
                }
                let mut table = router.lock();
                table.server_requests.remove(&key);
                table.handlers -= 1;
                table.handler_bytes -= bytes;
            },
            on_panic,
        );
        if spawned.is_err() {
            let mut table = self.lock();
            table.server_requests.remove(&id.to_string());
            table.handlers -= 1;
            table.handler_bytes -= bytes;
            drop(table);
            let error = HandlerError {
                code: jsonrpc::INTERNAL_ERROR,
                message: "cannot start a handler thread".into(),
            };
            self.answer(&id, Err(error));
        }
    }

    /// Queues an answer made on the reader's thread, which must never wait: with the queue
    /// full, the answer is dropped, counted and logged.
    fn answer(&self, id: &Value, answer: Result<Value, HandlerError>) {
        if !self.answers.offer(answer_frame(id, answer)) {
            let count = self
                .counters
                .dropped_answers
                .fetch_add(1, Ordering::Relaxed)
                + 1;
            self.log_sometimes(
                count,
                "server requests left unanswered: the server sends them faster than it reads our answers",
            );
        }
    }

    /// Logs a flood's `count`-th drop when `count` is a power of two, so a flood of drops
    /// makes a few log lines, not a flood of them. On the callback thread (`log`): the reader
    /// thread that noticed holds the stdout reader, which a log callback's own call needs.
    fn log_sometimes(&self, count: u64, what: &str) {
        if count.is_power_of_two() {
            self.log(LogLevel::Warning, &format!("{what} ({count} so far)"));
        }
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        lock(&self.table)
    }
}

fn answer_frame(id: &Value, answer: Result<Value, HandlerError>) -> String {
    match answer {
        Ok(result) => format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#),
        Err(e) => jsonrpc::encode_error_response(id, e.code, &e.message),
    }
}

/// The transports' entry point. A newtype over `Arc<Router>` because answering a server
/// request hands a clone of the router to the handler's thread.
pub struct RouterInbound(pub Arc<Router>);

impl crate::transport::Inbound for RouterInbound {
    fn message(&self, message: Incoming) {
        let router = &self.0;
        match message {
            Incoming::Response { id, frame } => router.route_response(id, frame),
            Incoming::Answer { id, reply } => router.route(Some(id), Outcome::Answer(reply)),
            Incoming::Request { id, method, params } => router.server_request(id, method, params),
            Incoming::Notification { method, params } => router.notification(&method, params),
            Incoming::Invalid(why) => {
                self.bad_frame(Error::protocol(format!("skipped frame: {why}")), false)
            }
        }
    }

    fn bad_frame(&self, error: Error, fatal_for_pending: bool) {
        let router = &self.0;
        router.counters.bad_frames.fetch_add(1, Ordering::Relaxed);
        router.log(LogLevel::Warning, &error.message);
        router.lock().last_bad_frame = Some(error.message.clone());
        if fatal_for_pending {
            router.fail_all(error, false);
        }
    }

    fn request_failed(&self, id: i64, error: Error) {
        let call = self.0.lock().calls.get(&id).cloned();
        if let Some(call) = call {
            call.finish(Outcome::Failed(error));
        }
    }

    fn closed(&self, error: Error) {
        self.0.fail_all(error, true);
    }
}
