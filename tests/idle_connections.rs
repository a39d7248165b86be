//! An idle HTTP client holds no connection besides its standalone stream (issue 33): the
//! connection a request leaves in the pool is closed by the library once it has been idle for
//! the pool's idle age, and at once when the server closes it, with its descriptor, so a
//! thousand idle clients do not hold a thousand idle sockets (or sockets in CLOSE_WAIT). The next
//! request opens a new one, also when it races the close. Sockets are counted in /proc (Linux).
#![cfg(target_os = "linux")]

mod common;
#[path = "common/net.rs"]
#[allow(dead_code)] // other tests use the rest
mod net;

use common::http_server::HttpServer;
use common::sockets::{port_of, sockets_to, sockets_to_at_most, IDLE_AGE};
use mcpc::{Client, ClientOptions, ConnectMode, HttpConfig, RequestOptions};
use net::{ConnectProxy, TestCa, TlsRelay};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long past the idle age a pooled connection may take to be closed: a wide margin.
const MARGIN: Duration = Duration::from_secs(6);

fn call(client: &Client) -> mcpc::Result<Value> {
    client.list_tools(None, &RequestOptions::default())
}

fn connect(config: HttpConfig, mode: ConnectMode) -> Client {
    let options = ClientOptions {
        mode,
        ..ClientOptions::default()
    };
    let client = Client::http(config, options);
    client.connect().expect("connect over HTTP");
    client
}

/// After a call, the client holds its pooled connection (and, in the handshake era, its
/// standalone stream); after the idle age only the stream is left; the next call works, on a
/// new connection.
fn pooled_connection_closes_after_the_idle_age(name: &str, mode: ConnectMode, streams: usize) {
    let server = HttpServer::start(name, &["--modern"]);
    let port = port_of(&server.url);
    let client = server.connect(mode);
    call(&client).expect("a call");
    let after_call = sockets_to(port);
    assert!(
        after_call > streams,
        "{name}: {after_call} sockets to the server after a call: the pooled one is missing"
    );
    let idle = sockets_to_at_most(port, streams, IDLE_AGE + MARGIN);
    assert_eq!(
        idle, streams,
        "{name}: sockets to the server {MARGIN:?} past the idle age"
    );
    call(&client).expect("a call after the pooled connection was closed");
    assert_eq!(sockets_to(port), streams + 1, "{name}: a new connection");
    client.close();
}

#[test]
fn a_modern_clients_pooled_connection_closes_after_the_idle_age() {
    pooled_connection_closes_after_the_idle_age("idle_conn_modern", ConnectMode::Modern, 0);
}

#[test]
fn a_handshake_era_clients_pooled_connection_closes_after_the_idle_age_its_stream_stays() {
    pooled_connection_closes_after_the_idle_age("idle_conn_legacy", ConnectMode::Legacy, 1);
}

/// A small HTTP server that speaks just enough of the handshake era (no session, no
/// standalone stream) and closes each connection `close_after` after its last answer, as
/// servers do with idle keep-alive connections. Counts the connections it accepted.
struct ClosingServer {
    port: u16,
    accepted: Arc<AtomicUsize>,
}

impl ClosingServer {
    fn start(close_after: Duration) -> ClosingServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let server = ClosingServer {
            port: listener.local_addr().unwrap().port(),
            accepted: Arc::default(),
        };
        let accepted = server.accepted.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                accepted.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || serve_until_idle(stream, close_after));
            }
        });
        server
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

/// Answers requests on `stream` until none comes for `close_after`; then closes it.
fn serve_until_idle(stream: TcpStream, close_after: Duration) {
    stream.set_read_timeout(Some(close_after)).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    while let Some((request_line, body)) = read_request(&mut reader) {
        let answer = answer(&request_line, &body);
        if writer.write_all(&answer).is_err() {
            return;
        }
    }
}

/// The request line and body of the next request; `None` at the end, or when none came in time.
fn read_request(reader: &mut BufReader<TcpStream>) -> Option<(String, Vec<u8>)> {
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).ok()? == 0 {
        return None;
    }
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().ok()?;
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some((request_line, body))
}

fn answer(request_line: &str, body: &[u8]) -> Vec<u8> {
    if !request_line.starts_with("POST ") {
        return b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n".to_vec();
    }
    let request: Value = serde_json::from_slice(body).unwrap_or_default();
    let Some(id) = request.get("id") else {
        return b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n".to_vec();
    };
    let result = match request["method"].as_str() {
        Some("initialize") => json!({
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "closing", "version": "1"}
        }),
        Some("tools/list") => json!({"tools": []}),
        _ => json!({}),
    };
    let reply = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
    let mut bytes = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        reply.len()
    )
    .into_bytes();
    bytes.extend_from_slice(reply.as_bytes());
    bytes
}

/// The server closes the idle connection long before the idle age: the client's socket
/// (which would sit in CLOSE_WAIT) goes at once, and the next call opens a new one.
#[test]
fn a_server_closing_an_idle_connection_frees_the_clients_socket_at_once() {
    let server = ClosingServer::start(Duration::from_millis(200));
    let client = connect(HttpConfig::new(server.url()), ConnectMode::Legacy);
    for round in 0..2 {
        call(&client).unwrap_or_else(|e| panic!("call {round}: {e}"));
        let accepted = server.accepted.load(Ordering::SeqCst);
        // Well before the idle age: only the server's close can have done it.
        let left = sockets_to_at_most(server.port, 0, IDLE_AGE - Duration::from_secs(1));
        assert_eq!(
            left, 0,
            "round {round}: sockets still open to a server that closed them"
        );
        assert_eq!(
            server.accepted.load(Ordering::SeqCst),
            accepted,
            "round {round}: the client connected again by itself"
        );
    }
    client.close();
}

/// Requests spaced about the idle age, in both eras and at many offsets around it, race the
/// close of the connection they would reuse: each one either gets the live connection or opens
/// a new one, and never fails.
#[test]
fn requests_spaced_about_the_idle_age_never_fail() {
    const CLIENTS: i32 = 16;
    const STEP: Duration = Duration::from_millis(4);
    let server = HttpServer::start("idle_conn_race", &["--modern"]);
    let clients: Vec<Client> = (0..CLIENTS)
        .map(|n| match n % 2 {
            0 => server.connect(ConnectMode::Modern),
            _ => server.connect(ConnectMode::Legacy),
        })
        .collect();
    std::thread::scope(|scope| {
        for (n, client) in clients.iter().enumerate() {
            scope.spawn(move || {
                // From 32 ms before the idle age to 28 ms after it.
                let offset = STEP * n as u32;
                let spacing = IDLE_AGE + offset - STEP * (CLIENTS as u32 / 2);
                for round in 0..3 {
                    call(client).unwrap_or_else(|e| panic!("client {n}, round {round}: {e}"));
                    std::thread::sleep(spacing);
                }
                call(client).unwrap_or_else(|e| panic!("client {n}, last call: {e}"));
            });
        }
    });
    clients.iter().for_each(Client::close);
}

/// The same close reaches a connection through a proxy's tunnel (the proxy sees the tunnel
/// end) and a connection over TLS.
#[test]
fn idle_connections_through_a_proxy_tunnel_and_over_tls_close_too() {
    let server = HttpServer::start("idle_conn_proxy", &["--modern"]);
    let proxy = ConnectProxy::start();
    let mut config = server.config();
    config.set_proxy(Some(&proxy.url())).unwrap();
    let client = connect(config, ConnectMode::Modern);
    call(&client).expect("a call through the proxy");
    assert!(
        proxy.tunnels().iter().any(|t| !t.closed),
        "no tunnel left open after the call"
    );
    let tunnels = proxy.wait_for(|t| t.iter().all(|t| t.closed));
    assert!(
        tunnels.iter().all(|t| t.closed),
        "tunnels still open after the idle age: {tunnels:?}"
    );
    assert_eq!(sockets_to(proxy.port), 0, "sockets to the proxy");
    call(&client).expect("a call through a new tunnel");
    client.close();

    let ca = TestCa::new("mcpc idle CA");
    let backend = format!("127.0.0.1:{}", port_of(&server.url));
    let relay = TlsRelay::start(&ca.server(&["127.0.0.1"]), None, backend);
    let mut config = HttpConfig::new(format!("https://127.0.0.1:{}/mcp", relay.port));
    config.add_ca_pem(&ca.pem()).unwrap();
    let client = connect(config, ConnectMode::Modern);
    call(&client).expect("a call over TLS");
    // At least the pooled one (under load an earlier one may still be closing).
    let pooled = sockets_to(relay.port);
    assert!(pooled >= 1, "{pooled} TLS sockets right after a call");
    let idle = sockets_to_at_most(relay.port, 0, IDLE_AGE + MARGIN);
    assert_eq!(idle, 0, "TLS sockets left after the idle age");
    call(&client).expect("a call over a new TLS connection");
    client.close();
}
