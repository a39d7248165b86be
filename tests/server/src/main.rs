//! `mcpc-test-server`: a small MCP server on stdio, used by mcpc's tests.
//!
//! It speaks JSON-RPC 2.0 as newline-delimited compact JSON on stdin/stdout
//! (MCP 2025-11-25, plus the 2026-07-28 era behind `--modern`). The main
//! thread reads, logs and routes every incoming line; each request then runs
//! on its own thread, so slow requests, cancellation and server-to-client
//! requests can all be exercised at once. Flags (see `args.rs`) switch on the
//! misbehaviours a client has to survive.

mod args;
mod cancel;
mod client_features;
mod faults;
mod flood;
mod http;
mod http_wire;
mod listen;
mod methods;
mod modern;
mod oauth;
mod platform;
mod rounds;
mod tasks;
mod tools;

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, Write};
use std::path::Path;
use std::process;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use crossbeam_channel::Sender;
use serde_json::{json, Value};

use args::Args;
use cancel::Cancel;

fn main() {
    let args = match Args::parse(std::env::args().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => {
            println!("{}", args::USAGE);
            return;
        }
        Err(message) => {
            eprintln!("mcpc-test-server: {message}\n{}", args::USAGE);
            process::exit(2);
        }
    };
    if let Some(mib) = args.hold_memory_mib {
        tools::hold_memory(mib);
    }
    if let Some(path) = &args.fail_start_while {
        fail_start_while(path);
    }
    if args.slow_start_ms > 0 {
        thread::sleep(std::time::Duration::from_millis(args.slow_start_ms));
    }
    if args.ignore_sigterm {
        platform::ignore_sigterm();
    }
    if args.stderr_lines > 0 {
        // On its own thread: if the client does not drain stderr, only this
        // thread blocks, and stdin keeps being served.
        let count = args.stderr_lines;
        thread::spawn(move || {
            let mut stderr = io::stderr();
            for k in 1..=count {
                if writeln!(stderr, "stderr line {k}").is_err() {
                    break;
                }
            }
        });
    }
    if let Some(port) = args.http {
        http::serve(Arc::new(Server::new(args)), port);
    }
    let mut log = args.log.as_deref().map(open_log);
    let ignore_stdin_eof = args.ignore_stdin_eof;
    let stall_while = args.stall_reading_while.clone();
    let mut initialized = false;
    let pause_reading = args.pause_reading;
    let mut requests_read = 0u64;
    let server = Arc::new(Server::new(args));

    let mut input = io::stdin().lock();
    let mut line = Vec::new();
    loop {
        if let (true, Some(path)) = (initialized, &stall_while) {
            while path.exists() {
                thread::sleep(Duration::from_millis(5));
            }
        }
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        // Logged before handling: tests read the log to check arrival order.
        if let Some(log) = &mut log {
            log.write_all(&[line.as_slice(), b"\n"].concat())
                .expect("cannot write the log file");
        }
        server.handle_line(&line);
        initialized = initialized || is_initialized(&line);
        if let Some((every, ms)) = pause_reading {
            if is_request(&line) {
                requests_read += 1;
                if requests_read % every == 0 {
                    // A server that stops reading for a while: the client's writes back up.
                    thread::sleep(Duration::from_millis(ms));
                }
            }
        }
    }

    if ignore_stdin_eof {
        // Lets the client's tests see it escalate to SIGTERM (and SIGKILL).
        loop {
            thread::sleep(Duration::from_secs(3600));
        }
    }
    // Exit at once, abandoning requests still running, as a closed stdin asks.
    process::exit(0);
}

/// Whether a line is the `notifications/initialized` that ends the handshake.
fn is_initialized(line: &[u8]) -> bool {
    serde_json::from_slice::<Value>(line)
        .is_ok_and(|frame| frame["method"] == "notifications/initialized")
}

/// Whether a line is a request (has both a method and an id), cheaply.
fn is_request(line: &[u8]) -> bool {
    serde_json::from_slice::<Value>(line)
        .is_ok_and(|m| m.get("method").is_some() && m.get("id").is_some())
}

/// `--fail-start-while`: a start that fails, counted in the file itself.
fn fail_start_while(path: &Path) {
    if path.exists() {
        let _ = writeln!(open_log(path), "start refused");
        eprintln!(
            "mcpc-test-server: {} exists: refusing to start",
            path.display()
        );
        process::exit(1);
    }
}

fn open_log(path: &Path) -> File {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap_or_else(|err| {
            eprintln!(
                "mcpc-test-server: cannot open log {}: {err}",
                path.display()
            );
            process::exit(2);
        })
}

/// A JSON-RPC error, sent back instead of a result.
#[derive(Debug)]
pub struct RpcError {
    code: i64,
    message: String,
    data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(-32602, message)
    }

    /// What a handler returns once it sees it was cancelled. It is never
    /// sent, because replies to cancelled requests are dropped.
    pub fn cancelled() -> Self {
        Self::new(-32800, "Request cancelled")
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    fn to_json(&self) -> Value {
        let mut error = json!({ "code": self.code, "message": self.message });
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }
}

/// What a method handler produces: the `result`, or an `error`.
pub type Reply = Result<Value, RpcError>;

/// A request from the client, handled on its own thread.
pub struct Request {
    id: Value,
    pub method: String,
    /// `Null` when the client sent no params.
    pub params: Value,
    cancelled: Arc<Cancel>,
    /// Refused by `--reject-first`, whatever it says.
    pub rejected: bool,
}

impl Request {
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.is_set()
    }

    /// The request's cancel, to wait on.
    pub fn cancel(&self) -> &Cancel {
        &self.cancelled
    }

    pub fn id(&self) -> &Value {
        &self.id
    }

    pub fn progress_token(&self) -> Option<&Value> {
        self.params.pointer("/_meta/progressToken")
    }
}

/// State shared by the reading thread and all request threads.
pub struct Server {
    pub args: Args,
    /// One lock for all output, so concurrent messages never interleave.
    stdout: Mutex<io::Stdout>,
    /// Cancel flags of the requests in flight, keyed by the id's JSON text.
    in_flight: Mutex<HashMap<String, Arc<Cancel>>>,
    /// Handlers waiting for the client to answer a server-to-client request,
    /// keyed by the id's JSON text.
    awaiting_reply: Mutex<HashMap<String, Sender<Value>>>,
    next_outgoing_id: AtomicU64,
    /// How many more modern requests `--reject-first` refuses.
    pub rejections_left: AtomicUsize,
    /// A `--flood-secs` flood is running: nothing from the client is read meanwhile.
    pub flooding: AtomicBool,
}

impl Server {
    fn new(args: Args) -> Self {
        Server {
            stdout: Mutex::new(io::stdout()),
            in_flight: Mutex::default(),
            awaiting_reply: Mutex::default(),
            next_outgoing_id: AtomicU64::new(1),
            rejections_left: AtomicUsize::new(args.reject_first),
            flooding: AtomicBool::new(false),
            args,
        }
    }

    /// Routes one line from stdin. Runs on the reading thread, so it must not block.
    fn handle_line(self: &Arc<Self>, line: &[u8]) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return; // blank lines carry no message
        }
        let Ok(message) = serde_json::from_slice::<Value>(line) else {
            return self.send_error(&Value::Null, &RpcError::new(-32700, "Parse error"));
        };
        let method = message.get("method").and_then(Value::as_str);
        let id = message.get("id");
        let is_response = message.get("result").is_some() || message.get("error").is_some();
        match (method, id) {
            (Some(method), Some(id)) => {
                let params = message.get("params").cloned().unwrap_or_default();
                self.start_request(id.clone(), method.to_owned(), params);
            }
            (Some("notifications/initialized"), None) => flood::start_on_stdout(self),
            (Some("notifications/cancelled"), None) => {
                self.cancel(&message["params"]["requestId"]);
            }
            (Some(_), None) => {} // other notifications need no action
            (None, Some(id)) if is_response => self.deliver_reply(id, message.clone()),
            _ => self.send_error(
                id.unwrap_or(&Value::Null),
                &RpcError::new(-32600, "Invalid Request"),
            ),
        }
    }

    fn start_request(self: &Arc<Self>, id: Value, method: String, params: Value) {
        let cancelled = Arc::new(Cancel::new());
        // Registered before the thread starts, so that a cancellation on the
        // very next line already finds the request.
        let key = id.to_string();
        self.in_flight
            .lock()
            .unwrap()
            .insert(key, cancelled.clone());
        let rejected = modern::take_rejection(self, &params);
        let request = Request {
            id,
            method,
            params,
            cancelled,
            rejected,
        };
        let server = Arc::clone(self);
        thread::spawn(move || server.run_request(request));
    }

    fn run_request(&self, request: Request) {
        if self.args.stderr_every_request {
            let _ = writeln!(io::stderr(), "request {}", request.method);
        }
        let reply = methods::handle(self, &request);

        let key = request.id.to_string();
        let mut in_flight = self.in_flight.lock().unwrap();
        // A later request may have reused the id; leave its entry alone.
        if in_flight
            .get(&key)
            .is_some_and(|flag| Arc::ptr_eq(flag, &request.cancelled))
        {
            in_flight.remove(&key);
        }
        drop(in_flight);

        // A cancelled request gets no response at all, whatever the handler produced.
        if request.is_cancelled() {
            return;
        }
        match reply {
            Ok(result) => {
                self.send(&json!({ "jsonrpc": "2.0", "id": request.id, "result": result }))
            }
            // The handler stopped (or answered by hand): there is nothing to send.
            Err(error) if error.code == RpcError::cancelled().code => {}
            Err(error) => self.send_error(&request.id, &error),
        }
    }

    /// Unknown ids are ignored: the request may have finished already.
    fn cancel(&self, request_id: &Value) {
        if let Some(flag) = self.in_flight.lock().unwrap().get(&request_id.to_string()) {
            flag.set();
        }
    }

    /// Hands the client's response to the handler waiting for it, if any.
    fn deliver_reply(&self, id: &Value, response: Value) {
        let waiter = self.awaiting_reply.lock().unwrap().remove(&id.to_string());
        if let Some(waiter) = waiter {
            let _ = waiter.send(response);
        }
    }

    /// Sends a request to the client and waits for its whole response object.
    pub fn ask_client(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
    ) -> Option<Value> {
        self.ask_client_cancelling(method, params, timeout, None)
    }

    /// Like `ask_client`; with `cancel_after`, gives up after that long and sends
    /// `notifications/cancelled` for the request, then listens a while longer for a reply
    /// the client should no longer send.
    pub fn ask_client_cancelling(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
        cancel_after: Option<Duration>,
    ) -> Option<Value> {
        let n = self.next_outgoing_id.fetch_add(1, Ordering::SeqCst);
        let id = json!(format!("srv-{n}"));
        let (sender, receiver) = crossbeam_channel::bounded(1);
        // Registered before sending, so that even an instant reply finds us.
        self.awaiting_reply
            .lock()
            .unwrap()
            .insert(id.to_string(), sender);

        let mut request = json!({ "jsonrpc": "2.0", "id": id, "method": method });
        if let Some(params) = params {
            request["params"] = params;
        }
        self.send(&request);

        let mut response = receiver.recv_timeout(cancel_after.unwrap_or(timeout)).ok();
        if response.is_none() && cancel_after.is_some() {
            let cancel = json!({ "requestId": id, "reason": "the server gave up" });
            self.notify("notifications/cancelled", Some(cancel));
            response = receiver.recv_timeout(timeout).ok();
        }
        self.awaiting_reply.lock().unwrap().remove(&id.to_string());
        response
    }

    pub fn notify(&self, method: &str, params: Option<Value>) {
        let mut notification = json!({ "jsonrpc": "2.0", "method": method });
        if let Some(params) = params {
            notification["params"] = params;
        }
        self.send(&notification);
    }

    fn send_error(&self, id: &Value, error: &RpcError) {
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "error": error.to_json() }));
    }

    pub fn send(&self, message: &Value) {
        // Over HTTP, what a request's handler sends goes on that request's stream.
        if http::send_on_current_stream(message) {
            return;
        }
        let mut line = message.to_string();
        line.push('\n');
        self.write_raw(line.as_bytes());
    }

    /// Writes bytes as they are, for the tools that emit broken output on purpose.
    pub fn write_raw(&self, bytes: &[u8]) {
        let mut stdout = self.stdout.lock().unwrap();
        // A vanished client shows up as EOF on stdin, so write errors are ignored.
        let _ = stdout.write_all(bytes).and_then(|()| stdout.flush());
    }

    /// Dies like a crashing server, optionally halfway through a message.
    pub fn crash(&self, partial: bool) -> ! {
        // Holding the lock until exit keeps other threads from finishing the line.
        let mut stdout = self.stdout.lock().unwrap();
        if partial {
            let _ = stdout
                .write_all(br#"{"jsonrpc":"2.0","id":"#)
                .and_then(|()| stdout.flush());
        }
        process::exit(3);
    }
}
