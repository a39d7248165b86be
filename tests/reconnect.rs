//! The reconnect contract: once a connection has failed (the stdio server exited, the HTTP
//! server ended the session) the client says so (`state()` is Failed, `is_connected()` false),
//! and `connect()` starts a new connection, says so in the log, and calls go to it.

mod common;

use common::http_server::{header, posts_of, HttpServer};
use common::*;
use mcpc::handlers::Callbacks;
use mcpc::{Client, ClientOptions, ConnectMode, ConnectionState, LogLevel, RequestOptions, Status};
use serde_json::json;
use std::sync::{Arc, Mutex};

fn none() -> RequestOptions {
    RequestOptions::default()
}

/// Options whose log callback keeps the Info messages.
fn logged(mode: ConnectMode) -> (ClientOptions, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let keep = seen.clone();
    let options = ClientOptions {
        mode,
        callbacks: Callbacks {
            on_log: Some(Arc::new(move |level: LogLevel, message: &str| {
                if level == LogLevel::Info {
                    keep.lock().unwrap().push(message.to_owned());
                }
            })),
            ..Callbacks::default()
        },
        ..ClientOptions::default()
    };
    (options, seen)
}

fn reconnect_logged(seen: &Mutex<Vec<String>>) -> bool {
    seen.lock()
        .unwrap()
        .iter()
        .any(|m| m.contains("connecting again"))
}

#[test]
fn after_the_stdio_server_crashed_connect_starts_it_again() {
    let (options, seen) = logged(ConnectMode::Auto);
    let client = Client::stdio(config(&[]), options);
    assert_eq!(client.state(), ConnectionState::NotConnected);
    client.connect().unwrap();
    assert_eq!(client.state(), ConnectionState::Connected);
    let first = client.server_pid().unwrap();

    let err = client.call_tool("crash", None, &none()).unwrap_err();
    assert_eq!(err.status, Status::TransportError);
    assert_eq!(client.state(), ConnectionState::Failed);
    assert!(!client.is_connected());
    assert_eq!(
        client.ping(&none()).unwrap_err().status,
        Status::TransportError,
        "the failed connection's calls keep failing until connect"
    );
    assert!(!reconnect_logged(&seen));

    let info = client.connect().expect("connect starts the server again");
    assert_eq!(info["serverInfo"]["name"], "mcpc-test-server");
    assert!(reconnect_logged(&seen), "{:?}", seen.lock().unwrap());
    assert_eq!(client.state(), ConnectionState::Connected);
    let second = client.server_pid().unwrap();
    assert_ne!(first, second, "a new server process");
    assert!(!process_exists(first), "the crashed server was reaped");
    let echoed = client
        .call_tool("echo", Some(json!({"text": "again"})), &none())
        .unwrap();
    assert_eq!(text(&echoed), "again");
    // Connected again: connect returns the cached result, no new process.
    client.connect().unwrap();
    assert_eq!(client.server_pid(), Some(second));

    client.close();
    assert_eq!(client.state(), ConnectionState::Closed);
    assert!(!process_exists(second));
    assert_eq!(client.connect().unwrap_err().status, Status::Closed);
}

#[test]
fn after_the_http_session_expired_connect_opens_a_new_one() {
    let server = HttpServer::start("reconnect_http", &["--expire-session-after", "2"]);
    let (options, seen) = logged(ConnectMode::Legacy);
    let client = Client::http(server.config(), options);
    client.connect().unwrap();
    assert_eq!(client.state(), ConnectionState::Connected);
    client.ping(&none()).unwrap();
    let expired = client.ping(&none()).unwrap_err();
    assert_eq!(expired.status, Status::SessionExpired, "{expired}");
    assert_eq!(client.state(), ConnectionState::Failed);
    assert!(!client.is_connected());

    client.connect().expect("connect opens a new session");
    assert!(reconnect_logged(&seen), "{:?}", seen.lock().unwrap());
    assert_eq!(client.state(), ConnectionState::Connected);
    let echoed = client
        .call_tool("echo", Some(json!({"text": "again"})), &none())
        .unwrap();
    assert_eq!(text(&echoed), "again");
    let requests = server.requests();
    let last = posts_of(&requests, "tools/call").pop().unwrap();
    assert_eq!(header(last, "mcp-session-id"), Some("session-2"));
    client.close();
    assert_eq!(client.state(), ConnectionState::Closed);
}
