//! The handshake era's standalone GET stream against a hostile server written here, on a real
//! socket: an event dribbled a byte at a time across chunk boundaries, a stream cut mid-chunk
//! (opened again after the server's retry delay), a flood of events, and close while the stream
//! waits parked on the reactor (holding no thread) or while a worker is reading half an event;
//! and over direct https, where the TLS layer holds decrypted bytes the socket no longer shows.
//! Time bounds are wide margins against hangs. The tests take turns (`SERIAL`): one counts the
//! library's threads.

mod common;
#[path = "common/net.rs"]
#[allow(dead_code)] // only the CA and the TLS relay
mod net;

use common::hostile_sse::{chunk, notice, read_request, SSE_HEAD};
use common::thread_names::threads_named_any;
use mcpc::handlers::{Callbacks, LogMessage};
use mcpc::{Client, ClientOptions, ConnectMode, HttpConfig};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

/// Anything that must happen must happen within this; a hang would not.
const BOUND: Duration = Duration::from_secs(10);
/// Long enough for the client to have read all there was and parked the stream.
const IDLE: Duration = Duration::from_millis(300);

/// What the server does with the n-th GET (from 1): writes to the stream, then returns (the
/// connection is closed).
type GetScript = Arc<dyn Fn(&mut TcpStream, usize) + Send + Sync>;

/// A server that answers `initialize`, notifications and requests at once, and the standalone
/// GETs with its script. Returns its URL and the count of GETs.
fn start(script: GetScript) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let gets = Arc::new(AtomicUsize::new(0));
    let counted = gets.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let (script, gets) = (script.clone(), counted.clone());
            std::thread::spawn(move || serve(stream, &script, &gets));
        }
    });
    (url, gets)
}

fn serve(mut stream: TcpStream, script: &GetScript, gets: &AtomicUsize) {
    let mut buffer = Vec::new();
    while let Some((method, body)) = read_request(&mut stream, &mut buffer) {
        let answer = match method.as_str() {
            "GET" => {
                let n = gets.fetch_add(1, Ordering::SeqCst) + 1;
                script(&mut stream, n);
                return;
            }
            "POST" if body["method"] == "initialize" => json_answer(
                &body,
                json!({
                    "protocolVersion": body["params"]["protocolVersion"],
                    "capabilities": {"logging": {}},
                    "serverInfo": {"name": "hostile-stream", "version": "1"}
                }),
            ),
            "POST" if body.get("id").is_some() && body.get("method").is_some() => {
                json_answer(&body, json!({}))
            }
            "POST" => "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n".to_owned(),
            _ => "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".to_owned(),
        };
        if stream.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

fn json_answer(request: &Value, result: Value) -> String {
    let body = json!({"jsonrpc": "2.0", "id": request["id"], "result": result}).to_string();
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s1\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Waits until the client closes the connection.
fn hold(stream: &mut TcpStream) {
    let _ = stream.read(&mut [0; 64]);
}

/// The data of each notifications/message the client heard, in order.
#[derive(Default)]
struct Heard {
    data: Mutex<Vec<u64>>,
    changed: Condvar,
}

impl Heard {
    /// Waits (up to `BOUND`) until `count` were heard; returns them.
    fn wait_for(&self, count: usize) -> Vec<u64> {
        let deadline = Instant::now() + BOUND;
        let mut data = self.data.lock().unwrap();
        while data.len() < count {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "only {} of {count} heard", data.len());
            data = self.changed.wait_timeout(data, left).unwrap().0;
        }
        data.clone()
    }

    fn now(&self) -> Vec<u64> {
        self.data.lock().unwrap().clone()
    }
}

fn connect(url: &str, heard: &Arc<Heard>) -> Client {
    connect_with(HttpConfig::new(url), heard)
}

fn connect_with(config: HttpConfig, heard: &Arc<Heard>) -> Client {
    let h = heard.clone();
    let options = ClientOptions {
        mode: ConnectMode::Legacy,
        callbacks: Callbacks {
            on_message: Some(Arc::new(move |message: &LogMessage| {
                h.data.lock().unwrap().push(message.data.as_u64().unwrap());
                h.changed.notify_all();
            })),
            ..Callbacks::default()
        },
        ..ClientOptions::default()
    };
    let client = Client::http(config, options);
    client.connect().expect("connect");
    client
}

/// Closes `client` on another thread; fails unless that returns within `BOUND`.
fn close_within_bound(client: Client, what: &str) {
    let (done, closed) = mpsc::channel();
    let started = Instant::now();
    std::thread::spawn(move || {
        client.close();
        let _ = done.send(());
    });
    closed
        .recv_timeout(BOUND)
        .unwrap_or_else(|_| panic!("{what}: close still running after {BOUND:?}"));
    assert!(started.elapsed() < BOUND, "{what}");
}

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn events_dribbled_a_byte_at_a_time_across_chunks_reach_the_client_between_parked_waits() {
    let _serial = serial();
    let (url, _) = start(Arc::new(|stream: &mut TcpStream, _| {
        let _ = stream.write_all(SSE_HEAD);
        std::thread::sleep(IDLE);
        // One event split over two chunks, every byte (framing too) on its own.
        let event = notice(1);
        let (first, second) = event.split_at(event.len() / 2);
        for byte in [chunk(first), chunk(second)].concat() {
            if stream.write_all(&[byte]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(3));
        }
        std::thread::sleep(IDLE);
        let _ = stream.write_all(&chunk(&notice(2)));
        std::thread::sleep(IDLE);
        // Two events in one chunk: the second is read from the buffers, not the socket.
        let _ = stream.write_all(&chunk(&[notice(3), notice(4)].concat()));
        hold(stream);
    }));
    let heard = Arc::new(Heard::default());
    let client = connect(&url, &heard);
    assert_eq!(heard.wait_for(4), [1, 2, 3, 4]);
    close_within_bound(client, "after the dribble");
}

/// An SSE event of exactly `bytes` bytes carrying a log notification whose data is `n`.
fn notice_of_size(n: u64, bytes: usize) -> Vec<u8> {
    let bare = notice(n).len() + r#","pad":"""#.len();
    let pad = "x".repeat(bytes - bare);
    let message = json!({
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "info", "data": n, "pad": pad}
    });
    let event = format!("data: {message}\n\n").into_bytes();
    assert_eq!(event.len(), bytes);
    event
}

/// Events that end exactly where a read of the stream's buffers does, followed at once by
/// more: the rest is in the connection's buffers, not on the socket, and is read before the
/// stream parks (else it would wait for bytes that never come).
#[test]
fn events_ending_where_a_read_ends_are_followed_by_what_was_read_with_them() {
    let _serial = serial();
    let (url, _) = start(Arc::new(|stream: &mut TcpStream, _| {
        let _ = stream.write_all(SSE_HEAD);
        std::thread::sleep(IDLE);
        let mut all = Vec::new();
        for (n, size) in [(1, 8192), (2, 4096), (3, 8192), (4, 1024), (5, 300)] {
            all.extend(chunk(&notice_of_size(n, size)));
        }
        let _ = stream.write_all(&all);
        hold(stream);
    }));
    let heard = Arc::new(Heard::default());
    let client = connect(&url, &heard);
    assert_eq!(heard.wait_for(5), [1, 2, 3, 4, 5]);
    close_within_bound(client, "after the aligned events");
}

#[test]
fn a_stream_cut_mid_chunk_is_opened_again_after_the_servers_retry_delay() {
    let _serial = serial();
    let (url, gets) = start(Arc::new(|stream: &mut TcpStream, n| {
        let _ = stream.write_all(SSE_HEAD);
        if n == 1 {
            let _ = stream.write_all(&chunk(b"retry: 100\n\n"));
            std::thread::sleep(IDLE);
            // A chunk announced longer than what comes, then the end of the connection.
            let event = notice(99);
            let mut cut = format!("{:x}\r\n", event.len()).into_bytes();
            cut.extend_from_slice(&event[..event.len() / 2]);
            let _ = stream.write_all(&cut);
            std::thread::sleep(IDLE);
            return;
        }
        let _ = stream.write_all(&chunk(&notice(n as u64)));
        hold(stream);
    }));
    let heard = Arc::new(Heard::default());
    let client = connect(&url, &heard);
    assert_eq!(heard.wait_for(1), [2], "the cut event is never delivered");
    assert_eq!(gets.load(Ordering::SeqCst), 2);
    close_within_bound(client, "after the stream was opened again");
}

#[test]
fn a_flood_of_events_on_the_standalone_stream_arrives_whole_and_in_order() {
    const EVENTS: u64 = 5000;
    let _serial = serial();
    let (url, _) = start(Arc::new(|stream: &mut TcpStream, _| {
        let _ = stream.write_all(SSE_HEAD);
        std::thread::sleep(IDLE);
        for start in (0..EVENTS).step_by(50) {
            let events: Vec<u8> = (start..start + 50).flat_map(notice).collect();
            if stream.write_all(&chunk(&events)).is_err() {
                return;
            }
        }
        hold(stream);
    }));
    let heard = Arc::new(Heard::default());
    let client = connect(&url, &heard);
    let expected: Vec<u64> = (0..EVENTS).collect();
    assert_eq!(heard.wait_for(EVENTS as usize), expected);
    close_within_bound(client, "after the flood");
}

/// Parked, the stream holds no thread: once the workers that read its first event have gone
/// idle and ended, no `mcpc-http` thread is left, and the stream still works. Close then
/// returns at once, and nothing is delivered after it.
#[test]
fn close_ends_a_parked_stream_at_once_and_the_parked_stream_holds_no_thread() {
    let _serial = serial();
    let (sent, send_more) = mpsc::channel::<()>();
    let send_more = Arc::new(Mutex::new(send_more));
    let (url, _) = start(Arc::new(move |stream: &mut TcpStream, _| {
        let _ = stream.write_all(SSE_HEAD);
        let _ = stream.write_all(&chunk(&notice(1)));
        // Once the test has counted the threads: one more event, then more after close.
        let _ = send_more.lock().unwrap().recv();
        let _ = stream.write_all(&chunk(&notice(2)));
        let _ = send_more.lock().unwrap().recv();
        let _ = stream.write_all(&chunk(&notice(3)));
        hold(stream);
    }));
    let heard = Arc::new(Heard::default());
    let client = connect(&url, &heard);
    assert_eq!(heard.wait_for(1), [1]);
    // Idle workers end after a few seconds.
    let deadline = Instant::now() + Duration::from_secs(20);
    while threads_named_any(&["mcpc-http"]) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        threads_named_any(&["mcpc-http"]),
        0,
        "a thread still waits on the idle standalone stream"
    );
    sent.send(()).unwrap();
    assert_eq!(
        heard.wait_for(2),
        [1, 2],
        "the parked stream stopped working"
    );
    close_within_bound(client, "while parked");
    let _ = sent.send(());
    std::thread::sleep(IDLE);
    assert_eq!(heard.now(), [1, 2], "an event was delivered after close");
}

#[test]
fn close_ends_a_stream_a_worker_is_reading_half_an_event_of() {
    let _serial = serial();
    let (url, _) = start(Arc::new(|stream: &mut TcpStream, _| {
        let _ = stream.write_all(SSE_HEAD);
        std::thread::sleep(IDLE);
        let event = notice(1);
        let mut half = format!("{:x}\r\n", event.len()).into_bytes();
        half.extend_from_slice(&event[..event.len() / 2]);
        let _ = stream.write_all(&half);
        hold(stream);
    }));
    let heard = Arc::new(Heard::default());
    let client = connect(&url, &heard);
    // The half event has arrived: a worker waits in the read for the rest.
    std::thread::sleep(3 * IDLE);
    close_within_bound(client, "mid-event");
    assert!(heard.now().is_empty());
}

/// Over direct https (a TLS relay in front of the server), events dribbled a byte at a time,
/// a flood (many events in each TLS record) and events ending where a read does all arrive, each
/// before the server sends anything more: what the TLS layer decrypted and has not handed on yet
/// is read before the stream parks, not when the next bytes come.
#[test]
fn over_direct_https_dribbled_flooded_and_aligned_events_all_arrive() {
    const FLOOD: u64 = 2000;
    let _serial = serial();
    let (go_on, next) = mpsc::channel::<()>();
    let next = Arc::new(Mutex::new(next));
    let (backend, _) = start(Arc::new(move |stream: &mut TcpStream, _| {
        let next = next.lock().unwrap();
        let _ = stream.write_all(SSE_HEAD);
        std::thread::sleep(IDLE);
        for byte in chunk(&notice(0)) {
            if stream.write_all(&[byte]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(3));
        }
        let _ = next.recv();
        for start in (1..=FLOOD).step_by(50) {
            let events: Vec<u8> = (start..start + 50).flat_map(notice).collect();
            if stream.write_all(&chunk(&events)).is_err() {
                return;
            }
        }
        let _ = next.recv();
        // Events that end where a read does, as in the plain test above.
        let mut aligned = Vec::new();
        for (n, size) in [(8192, 8192), (4096, 4096), (8193, 8192), (300, 300)] {
            aligned.extend(chunk(&notice_of_size(FLOOD + n, size)));
        }
        let _ = stream.write_all(&aligned);
        hold(stream);
    }));
    let backend = backend
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let ca = net::TestCa::new("mcpc test CA");
    let relay = net::TlsRelay::start(&ca.server(&["127.0.0.1"]), None, backend);
    let mut config = HttpConfig::new(format!("https://127.0.0.1:{}/mcp", relay.port));
    config.add_ca_pem(&ca.pem()).unwrap();
    let heard = Arc::new(Heard::default());
    let client = connect_with(config, &heard);
    assert_eq!(heard.wait_for(1), [0], "the dribbled event");
    go_on.send(()).unwrap();
    let flood: Vec<u64> = (0..=FLOOD).collect();
    assert_eq!(heard.wait_for(flood.len()), flood, "the flood");
    go_on.send(()).unwrap();
    let aligned = [FLOOD + 8192, FLOOD + 4096, FLOOD + 8193, FLOOD + 300];
    assert_eq!(heard.wait_for(flood.len() + 4)[flood.len()..], aligned);
    close_within_bound(client, "over https");
}
