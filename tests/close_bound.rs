//! Close and connect are bounded whatever host callbacks do: close returns within
//! `limits::CLOSE_BOUND` though a stderr callback never returns, and a log or stderr callback
//! may call `connect` while a reconnect is under way without deadlocking it.

mod common;

use common::*;
use crossbeam_channel::{bounded, Receiver, Sender};
use mcpc::handlers::{Callbacks, LogHandler};
use mcpc::{limits, Client, ClientOptions, RequestOptions, Status, StderrMode};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

/// Wide: a deadlock or an unbounded wait never ends.
const HANG: Duration = Duration::from_secs(20);

fn none() -> RequestOptions {
    RequestOptions::default()
}

/// The client, for callbacks made before it exists.
type Slot = Arc<OnceLock<Weak<Client>>>;

fn from_slot(slot: &Slot) -> Option<Arc<Client>> {
    slot.get().and_then(Weak::upgrade)
}

/// Runs `body` on a thread of its own; `None` if it has not returned within `limit`.
fn within<T: Send + 'static>(
    limit: Duration,
    body: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let (done, result) = bounded(1);
    std::thread::spawn(move || {
        let _ = done.send(body());
    });
    result.recv_timeout(limit).ok()
}

/// Crashes the server under the client, so the next connect is a reconnect.
fn crash(client: &Client) {
    let error = client
        .call_tool("crash", None, &none())
        .expect_err("the server exits");
    assert_eq!(error.status, Status::TransportError, "{error:?}");
}

#[test]
fn close_returns_within_its_bound_while_a_stderr_callback_never_returns() {
    let armed = Arc::new(AtomicBool::new(false));
    let (entered_tx, entered) = bounded::<()>(1);
    // Never sent to: the callback waits until the test ends and drops it.
    let (release, released): (Sender<()>, Receiver<()>) = bounded(0);
    let callback = {
        let armed = armed.clone();
        Arc::new(move |_line: &str| {
            if armed.swap(false, Ordering::SeqCst) {
                let _ = entered_tx.send(());
                let _ = released.recv();
            }
        })
    };
    let mut config = config(&["--stderr-every-request"]);
    config.stderr = StderrMode::Callback(callback);
    let client = connect_with(config, ClientOptions::default());
    armed.store(true, Ordering::SeqCst);
    client.ping(&none()).unwrap();
    entered.recv_timeout(HANG).expect("the stderr callback ran");
    let closed = within(HANG, move || {
        let start = Instant::now();
        client.close();
        let took = start.elapsed();
        drop(client);
        (took, start.elapsed())
    });
    let (close_took, free_took) =
        closed.expect("close returned (it waited for the stderr callback)");
    assert!(
        free_took < limits::CLOSE_BOUND,
        "close took {close_took:?}, close and drop {free_took:?}: over the bound of {:?}",
        limits::CLOSE_BOUND
    );
    report_figure(&format!(
        "close_bound: close with a stderr callback that never returns took {close_took:?} (bound {:?})",
        limits::CLOSE_BOUND
    ));
    drop(release);
}

/// Options whose log callback runs `on_reconnect` once, when the library says it connects
/// again.
fn log_on_reconnect(on_reconnect: impl Fn() + Send + Sync + 'static) -> ClientOptions {
    let fired = AtomicBool::new(false);
    let log: LogHandler = Arc::new(move |_, message: &str| {
        if message.contains("connecting again") && !fired.swap(true, Ordering::SeqCst) {
            on_reconnect();
        }
    });
    ClientOptions {
        callbacks: Callbacks {
            on_log: Some(log),
            ..Callbacks::default()
        },
        ..ClientOptions::default()
    }
}

#[test]
fn a_log_callback_may_call_connect_during_a_reconnect() {
    let slot: Slot = Arc::default();
    let (report, reported) = bounded::<Result<Value, Status>>(1);
    let options = {
        let slot = slot.clone();
        log_on_reconnect(move || {
            let outcome = match from_slot(&slot) {
                Some(client) => client.connect().map_err(|e| e.status),
                None => Err(Status::InternalError),
            };
            let _ = report.send(outcome);
        })
    };
    let client = Arc::new(connect_with(config(&[]), options));
    let _ = slot.set(Arc::downgrade(&client));
    let first_pid = client.server_pid().unwrap();
    crash(&client);
    let reconnected = {
        let client = client.clone();
        within(HANG, move || client.connect().map_err(|e| e.status))
    };
    let reconnected =
        reconnected.expect("connect returned (the log callback's connect deadlocked it)");
    assert!(reconnected.is_ok(), "{reconnected:?}");
    let from_callback = reported.recv_timeout(HANG).expect("the log callback ran");
    assert!(
        from_callback.is_ok(),
        "the callback's connect: {from_callback:?}"
    );
    assert_ne!(client.server_pid(), Some(first_pid), "a new server");
    client.ping(&none()).unwrap();
}

#[test]
fn a_stderr_callback_may_call_connect_during_a_reconnect() {
    let slot: Slot = Arc::default();
    let armed = Arc::new(AtomicBool::new(false));
    let (entered_tx, entered) = bounded::<()>(1);
    let (reconnecting_tx, reconnecting) = bounded::<()>(1);
    let (report, reported) = bounded::<Result<Value, Status>>(1);
    // On the crash's stderr line, the callback waits for the reconnect to begin, then connects
    // itself: the reconnect ends the old connection meanwhile, which waits for this thread.
    let callback = {
        let (slot, armed) = (slot.clone(), armed.clone());
        Arc::new(move |_line: &str| {
            if !armed.swap(false, Ordering::SeqCst) {
                return;
            }
            let _ = entered_tx.send(());
            let _ = reconnecting.recv_timeout(HANG);
            let outcome = match from_slot(&slot) {
                Some(client) => client.connect().map_err(|e| e.status),
                None => Err(Status::InternalError),
            };
            let _ = report.send(outcome);
        })
    };
    let options = log_on_reconnect(move || {
        let _ = reconnecting_tx.send(());
    });
    let mut config = config(&["--stderr-every-request"]);
    config.stderr = StderrMode::Callback(callback);
    let client = Arc::new(connect_with(config, options));
    let _ = slot.set(Arc::downgrade(&client));
    armed.store(true, Ordering::SeqCst);
    crash(&client);
    entered
        .recv_timeout(HANG)
        .expect("the stderr callback heard the crash's line");
    let reconnected = {
        let client = client.clone();
        within(HANG, move || client.connect().map_err(|e| e.status))
    };
    let reconnected =
        reconnected.expect("connect returned (the stderr callback's connect deadlocked it)");
    assert!(reconnected.is_ok(), "{reconnected:?}");
    let from_callback = reported
        .recv_timeout(HANG)
        .expect("the stderr callback connected");
    assert!(
        from_callback.is_ok(),
        "the callback's connect: {from_callback:?}"
    );
    client.ping(&none()).unwrap();
}

/// A legacy-era HTTP server on a listener whose accept queue the test can fill: it answers
/// `initialize` and notifications, holds `tools/call` unanswered, and closes every other
/// connection after its answer, so the client's next POST needs a new TCP connection.
struct QueueServer {
    port: u16,
    accepting: Arc<AtomicBool>,
    held: Arc<std::sync::Mutex<Vec<std::net::TcpStream>>>,
    /// Connections of the test's own that fill the accept queue.
    fillers: Vec<std::net::TcpStream>,
}

impl QueueServer {
    fn start() -> QueueServer {
        use std::os::fd::AsRawFd;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        // The shortest accept queue, so that a few connections fill it.
        assert_eq!(unsafe { libc::listen(listener.as_raw_fd(), 0) }, 0);
        let port = listener.local_addr().unwrap().port();
        let accepting = Arc::new(AtomicBool::new(true));
        let held: Arc<std::sync::Mutex<Vec<std::net::TcpStream>>> = Arc::default();
        let (still, keep) = (accepting.clone(), held.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                if !still.load(Ordering::SeqCst) {
                    // Stop accepting, and keep the listener (and its full queue) open.
                    keep.lock().unwrap().push(stream);
                    loop {
                        std::thread::park();
                    }
                }
                let keep = keep.clone();
                std::thread::spawn(move || Self::serve(stream, &keep));
            }
        });
        QueueServer {
            port,
            accepting,
            held,
            fillers: Vec::new(),
        }
    }

    fn serve(mut stream: std::net::TcpStream, held: &std::sync::Mutex<Vec<std::net::TcpStream>>) {
        use std::io::{BufRead, BufReader, Read, Write};
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut head = String::new();
        let mut length = 0;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = value.trim().parse().unwrap_or(0);
            }
            head.push_str(&line);
            if line == "\r\n" {
                break;
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let answer = match message["method"].as_str() {
            _ if head.starts_with("GET") || head.starts_with("DELETE") => {
                "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .to_owned()
            }
            Some("initialize") => {
                let result = serde_json::json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                    "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                    "serverInfo": {"name": "queue", "version": "1"}}})
                .to_string();
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{result}",
                    result.len()
                )
            }
            Some("tools/call") => {
                held.lock().unwrap().push(stream);
                return;
            }
            _ => {
                "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_owned()
            }
        };
        let _ = stream.write_all(answer.as_bytes());
    }

    /// Stops accepting and fills the accept queue: a new connection then hangs in its TCP
    /// connect (the SYN is dropped) until it times out.
    fn stop_accepting_and_fill(&mut self) {
        self.accepting.store(false, Ordering::SeqCst);
        let address = std::net::SocketAddr::from(([127, 0, 0, 1], self.port));
        for _ in 0..16 {
            match std::net::TcpStream::connect_timeout(&address, Duration::from_millis(300)) {
                Ok(stream) => self.fillers.push(stream),
                Err(_) => return,
            }
        }
        panic!("the accept queue never filled");
    }
}

#[test]
fn a_cancel_notice_stuck_in_a_tcp_connect_does_not_hold_close() {
    let mut server = QueueServer::start();
    let mut config = mcpc::HttpConfig::new(format!("http://127.0.0.1:{}/mcp", server.port));
    config.listen = false;
    // Longer than any bound of close: only letting the write go ends close in time.
    config.connect_timeout = Duration::from_secs(60);
    let options = ClientOptions {
        mode: mcpc::ConnectMode::Legacy,
        ..ClientOptions::default()
    };
    let client = Arc::new(Client::http(config, options));
    client.connect().expect("connect to the queue server");
    let token = mcpc::CancellationToken::new();
    let caller = {
        let (client, opts) = (client.clone(), RequestOptions::with_cancellation(&token));
        std::thread::spawn(move || client.call_tool("echo", None, &opts))
    };
    while server.held.lock().unwrap().is_empty() {
        std::thread::sleep(Duration::from_millis(5));
    }
    server.stop_accepting_and_fill();
    // The cancel notice is a POST on a new connection, whose TCP connect hangs.
    token.cancel(Some("stuck"));
    let error = caller.join().unwrap().expect_err("cancelled");
    assert_eq!(error.status, Status::Cancelled);
    std::thread::sleep(Duration::from_millis(200)); // the dispatcher is in its connect
    let closed = within(Duration::from_secs(90), move || {
        let start = Instant::now();
        client.close();
        start.elapsed()
    });
    let took = closed.expect("close returned");
    assert!(
        took < limits::CLOSE_BOUND,
        "close took {took:?}: over the bound of {:?}",
        limits::CLOSE_BOUND
    );
    report_figure(&format!(
        "close_bound: close with a cancel notice stuck in a TCP connect took {took:?} (bound {:?})",
        limits::CLOSE_BOUND
    ));
}

/// A modern-era `input_required` handler is a host callback like the others: close waits for it
/// (within its bound), so the host may free what it uses once close returns.
#[test]
fn close_waits_for_a_running_input_required_handler() {
    let (entered_tx, entered) = bounded::<()>(1);
    let returned = Arc::new(AtomicBool::new(false));
    let handler: mcpc::handlers::RequestHandler = {
        let returned = returned.clone();
        Arc::new(move |_: &mcpc::handlers::ServerRequest| {
            let _ = entered_tx.send(());
            std::thread::sleep(Duration::from_millis(500));
            returned.store(true, Ordering::SeqCst);
            Ok(serde_json::json!({"action": "accept", "content": {"ok": true}}))
        })
    };
    let mut callbacks = Callbacks::default();
    callbacks
        .request_handlers
        .insert("elicitation/create".into(), handler);
    let options = ClientOptions {
        callbacks,
        ..ClientOptions::default()
    };
    let client = Arc::new(connect_with(config(&["--modern"]), options));
    assert!(client.is_modern());
    let caller = {
        let client = client.clone();
        std::thread::spawn(move || client.call_tool("confirm", None, &none()))
    };
    entered.recv_timeout(HANG).expect("the handler ran");
    client.close();
    assert!(
        returned.load(Ordering::SeqCst),
        "close returned while the input_required handler was still running"
    );
    let outcome = caller.join().unwrap();
    assert_eq!(outcome.unwrap_err().status, Status::Closed);
}

/// A host transport whose round trip ignores close and never returns: close lets it go.
struct StuckTransport {
    entered: Sender<()>,
    released: Receiver<()>,
}

impl mcpc::BlockingTransport for StuckTransport {
    fn round_trip(&self, request: &str, on_sent: &mut dyn FnMut()) -> mcpc::Result<String> {
        on_sent();
        let message: Value = serde_json::from_str(request).unwrap();
        if message["method"] == "initialize" {
            let result = serde_json::json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "serverInfo": {"name": "stuck", "version": "1"}}});
            return Ok(result.to_string());
        }
        let _ = self.entered.send(());
        let _ = self.released.recv();
        Err(mcpc::Error::new(Status::TransportError, "released"))
    }

    fn notify(&self, _frame: &str) -> mcpc::Result<()> {
        Ok(())
    }

    fn close(&self) {}
}

#[test]
fn close_returns_within_its_bound_while_a_custom_round_trip_never_returns() {
    let (entered_tx, entered) = bounded(1);
    let (release, released) = bounded::<()>(0);
    let transport = StuckTransport {
        entered: entered_tx,
        released,
    };
    let options = ClientOptions {
        mode: mcpc::ConnectMode::Legacy,
        ..ClientOptions::default()
    };
    let client = Arc::new(Client::custom(transport, options));
    client.connect().expect("connect to the stuck transport");
    let caller = {
        let client = client.clone();
        std::thread::spawn(move || client.call_tool("echo", None, &none()))
    };
    entered.recv_timeout(HANG).expect("the round trip started");
    let closed = {
        let client = client.clone();
        within(HANG, move || {
            let start = Instant::now();
            client.close();
            start.elapsed()
        })
    };
    let took = closed.expect("close returned (it waited for the round trip)");
    assert!(took < limits::CLOSE_BOUND, "close took {took:?}");
    assert_eq!(caller.join().unwrap().unwrap_err().status, Status::Closed);
    report_figure(&format!(
        "close_bound: close with a custom transport's round trip that never returns took {took:?} (bound {:?})",
        limits::CLOSE_BOUND
    ));
    drop(release);
}
