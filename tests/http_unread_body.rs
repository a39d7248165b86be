//! A Streamable HTTP server that stops reading in the middle of a request's body: the client's
//! write blocks on a full socket, and a cancel, a timeout or close must still free the caller at
//! once, in both eras (a cancel shuts the socket down in full while a write may be blocked; only
//! a thread blocked reading is woken by shutting the reading side alone).
//!
//! The server, on a real socket, answers the handshake (`initialize` and its notification, or
//! `server/discover`) and pings by itself. For a `tools/call` it reads the head and the first
//! 64 KiB of the body, then nothing more: the call's 16 MiB of arguments fill the socket's
//! buffers and the client's write blocks. Once the call has ended, the server reads again and
//! records whether the stream ended before the body was whole: the client closed it.
#![cfg(unix)]

use mcpc::{CancellationToken, Client, ClientOptions, ConnectMode, HttpConfig, RequestOptions};
use mcpc::{Error, Status};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Against hangs only: every call here must end far sooner.
const BOUND: Duration = Duration::from_secs(10);
const ARGUMENT_BYTES: usize = 16 * 1024 * 1024;

struct Stalling {
    url: String,
    /// `tools/call` bodies the server stopped reading.
    stalled: Arc<AtomicUsize>,
    /// Stalled connections whose stream ended before the body was whole (the client closed
    /// them), seen once the server reads again.
    closed: Arc<AtomicUsize>,
    /// The server reads stalled bodies again.
    resume: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
}

impl Stalling {
    fn start() -> Stalling {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let stalled = Arc::new(AtomicUsize::new(0));
        let closed = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let resume = Arc::new(AtomicBool::new(false));
        let flags = (
            stalled.clone(),
            closed.clone(),
            resume.clone(),
            stop.clone(),
        );
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (s, c, r, st) = flags.clone();
                std::thread::spawn(move || serve(stream, &s, &c, &r, &st));
            }
        });
        Stalling {
            url,
            stalled,
            closed,
            resume,
            stop,
        }
    }

    fn client(&self, mode: ConnectMode) -> Client {
        let mut config = HttpConfig::new(&self.url);
        config.listen = false;
        let options = ClientOptions {
            mode,
            ..ClientOptions::default()
        };
        let client = Client::http(config, options);
        client.connect().expect("connect to the stalling server");
        client
    }

    /// Lets the server read stalled bodies again, and waits (within BOUND) until `count`
    /// stalled connections were seen closed by the client.
    fn wait_closed(&self, count: usize) -> bool {
        self.resume.store(true, Ordering::SeqCst);
        let deadline = Instant::now() + BOUND;
        while self.closed.load(Ordering::SeqCst) < count && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.closed.load(Ordering::SeqCst) >= count
    }

    /// Waits (within BOUND) until the server has stopped reading `count` call bodies.
    fn wait_stalled(&self, count: usize) {
        let deadline = Instant::now() + BOUND;
        while self.stalled.load(Ordering::SeqCst) < count {
            assert!(
                Instant::now() < deadline,
                "the call never reached the server"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Stalling {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// One connection: requests answered in turn, until a `tools/call` stalls it.
fn serve(
    mut stream: TcpStream,
    stalled: &AtomicUsize,
    closed: &AtomicUsize,
    resume: &AtomicBool,
    stop: &AtomicBool,
) {
    let mut buffer = Vec::new();
    loop {
        let Some((head, body_start)) = read_head(&mut stream, &mut buffer) else {
            return;
        };
        let length = content_length(&head);
        if head.starts_with("GET") || head.starts_with("DELETE") {
            buffer.drain(..body_start);
            let _ =
                stream.write_all(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n");
            continue;
        }
        // Enough of the body to see the method: a tools/call's name comes before its arguments.
        let peek_end = (body_start + length).min(body_start + 64 * 1024);
        while buffer.len() < peek_end {
            if !fill(&mut stream, &mut buffer) {
                return;
            }
        }
        let peeked = String::from_utf8_lossy(&buffer[body_start..peek_end]).into_owned();
        if peeked.contains(r#""method":"tools/call""#) {
            stalled.fetch_add(1, Ordering::SeqCst);
            // Reads nothing more until the call has ended; then reads on: the stream must end
            // (the client closed it) before the body is whole.
            while !stop.load(Ordering::SeqCst) && !resume.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(5));
            }
            stream.set_read_timeout(Some(BOUND)).unwrap();
            let mut received = buffer.len() - body_start;
            let mut chunk = vec![0u8; 256 * 1024];
            let ended_early = loop {
                match stream.read(&mut chunk) {
                    Ok(0) => break received < length,
                    Ok(n) => received += n,
                    Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break true,
                    Err(_) => break false,
                }
            };
            if ended_early {
                closed.fetch_add(1, Ordering::SeqCst);
            }
            return;
        }
        while buffer.len() < body_start + length {
            if !fill(&mut stream, &mut buffer) {
                return;
            }
        }
        let body: Value = serde_json::from_slice(&buffer[body_start..body_start + length]).unwrap();
        buffer.drain(..body_start + length);
        let answer = match body["method"].as_str() {
            Some("initialize") => json!({"protocolVersion": "2025-11-25", "capabilities": {},
                "serverInfo": {"name": "stalling", "version": "0"}}),
            Some("server/discover") => json!({"supportedVersions": ["2026-07-28"],
                "capabilities": {}, "serverInfo": {"name": "stalling", "version": "0"}}),
            Some("ping") => json!({}),
            _ => {
                let _ = stream.write_all(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n");
                continue;
            }
        };
        let frame = json!({"jsonrpc": "2.0", "id": body["id"], "result": answer}).to_string();
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{frame}",
            frame.len()
        );
        if stream.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

fn read_head(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<(String, usize)> {
    loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
            return Some((head, end + 4));
        }
        if !fill(stream, buffer) {
            return None;
        }
    }
}

fn fill(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 16 * 1024];
    match stream.read(&mut chunk) {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            buffer.extend_from_slice(&chunk[..n]);
            true
        }
    }
}

fn content_length(head: &str) -> usize {
    head.lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0)
}

fn big_arguments() -> Value {
    json!({ "text": "x".repeat(ARGUMENT_BYTES) })
}

/// A call whose body the server stops reading, ended by `end` from another thread once the
/// server has stalled: it must return at once with `status`, and the client must close the
/// stalled connection (the server's signal, and no connection left blocked).
fn stalled_call_ends(mode: ConnectMode, status: Status, end: fn(&Client, &CancellationToken)) {
    let server = Stalling::start();
    let client = Arc::new(server.client(mode));
    client.ping(&RequestOptions::default()).unwrap();
    let token = CancellationToken::new();
    let (done_tx, done) = std::sync::mpsc::channel();
    {
        let (client, token) = (client.clone(), token.clone());
        std::thread::spawn(move || {
            let mut opts = RequestOptions::with_cancellation(&token);
            if status == Status::Timeout {
                opts.timeout = Some(Duration::from_millis(600));
            }
            let result = client.call_tool("echo", Some(big_arguments()), &opts);
            let _ = done_tx.send((result, Instant::now()));
        });
    }
    server.wait_stalled(1);
    // The rest of the body fills the buffers and the write blocks.
    std::thread::sleep(Duration::from_millis(200));
    let ended_at = Instant::now();
    end(&client, &token);
    let (result, returned_at) = done
        .recv_timeout(BOUND)
        .unwrap_or_else(|_| panic!("{mode:?}: the call was still blocked {BOUND:?} after the end"));
    let error: Error = result.expect_err("a stalled call cannot succeed");
    assert_eq!(error.status, status, "{mode:?}: {error}");
    let took = returned_at.saturating_duration_since(ended_at);
    assert!(
        took < Duration::from_secs(3),
        "{mode:?}: returned {took:?} after the end"
    );
    assert!(
        server.wait_closed(1),
        "{mode:?}: the client never closed the stalled connection"
    );
}

#[test]
fn a_cancel_frees_a_caller_whose_body_the_server_stopped_reading() {
    for mode in [ConnectMode::Legacy, ConnectMode::Modern] {
        stalled_call_ends(mode, Status::Cancelled, |_, token| {
            assert!(token.cancel(Some("user pressed cancel")));
        });
    }
}

#[test]
fn a_timeout_frees_a_caller_whose_body_the_server_stopped_reading() {
    for mode in [ConnectMode::Legacy, ConnectMode::Modern] {
        // The timeout (600 ms) fires while the write is blocked; `end` does nothing.
        stalled_call_ends(mode, Status::Timeout, |_, _| {});
    }
}

#[test]
fn close_frees_a_caller_whose_body_the_server_stopped_reading() {
    for mode in [ConnectMode::Legacy, ConnectMode::Modern] {
        stalled_call_ends(mode, Status::Closed, |client, _| client.close());
    }
}
