//! A server's misbehaviour is reported as the server's fault, never as the host's
//! (INVALID_ARGUMENT): the host cannot fix what the server sends. A small server on a real
//! socket plays each fault: a session id too long to send back in a header; a tool whose
//! `x-mcp-header` names alone would overflow a request's headers.

mod common;

use mcpc::{Client, ClientOptions, ConnectMode, HttpConfig, RequestOptions, Status};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};

/// What the small server says where it misbehaves.
#[derive(Clone, Default)]
struct Faults {
    /// Handed out with `initialize`.
    session_id: String,
    /// The `tools/list` result (`server/discover` is answered too, for the modern era).
    tools: Value,
    /// When set, `tools/call` answers with a working task of this id (modern tasks), and
    /// `tasks/get` says it still works.
    task_id: Option<String>,
}

/// Serves MCP on 127.0.0.1 (either era) with `faults`; other requests get `{}` (a tool call
/// a text result), every notification 202. Runs until the test process ends.
fn serve_with(faults: Faults) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            let faults = faults.clone();
            std::thread::spawn(move || serve(stream, &faults));
        }
    });
    url
}

fn serve_with_session_id(session_id: String) -> String {
    serve_with(Faults {
        session_id,
        ..Faults::default()
    })
}

fn serve(stream: TcpStream, faults: &Faults) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut length = 0;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let answer = match (message.get("id"), message["method"].as_str()) {
            (Some(id), Some("initialize")) => {
                let result = json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "serverInfo": {"name": "long-session", "version": "1"}
                });
                let body = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
                let extra = format!("Mcp-Session-Id: {}\r\n", faults.session_id);
                ok(&body, &extra)
            }
            (Some(id), Some(method)) => {
                let result = match method {
                    "server/discover" => json!({
                        "supportedVersions": ["2026-07-28"],
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "faults", "version": "1"}
                    }),
                    "tools/list" => json!({ "tools": faults.tools }),
                    "tools/call" | "tasks/get" if faults.task_id.is_some() => json!({
                        "resultType": "task",
                        "taskId": faults.task_id,
                        "status": "working",
                        "pollIntervalMs": 50
                    }),
                    "tools/call" => json!({"content": [{"type": "text", "text": "called"}]}),
                    _ => json!({}),
                };
                let body = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
                ok(&body, "")
            }
            _ => "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n".to_owned(),
        };
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

fn ok(body: &str, extra_headers: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{extra_headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// A handshake-era client for `url` whose host adds a 4 KiB header of its own (a token, say:
/// well within the 64 KiB the headers of a request may take).
fn legacy_client(url: &str) -> Client {
    let mut config = HttpConfig::new(url);
    config
        .add_header("X-Host-Token", &"t".repeat(4096))
        .unwrap();
    let options = ClientOptions {
        mode: ConnectMode::Legacy,
        ..ClientOptions::default()
    };
    Client::http(config, options)
}

/// A session id that leaves no room for the host's headers in a request's 64 KiB: connect
/// fails with PROTOCOL_ERROR naming the session id, not INVALID_ARGUMENT (the host's headers
/// are fine), and the id is not quoted (it may be a secret).
#[test]
fn a_session_id_too_long_to_send_back_is_a_protocol_error() {
    let session_id = "s".repeat(62 * 1024);
    let url = serve_with_session_id(session_id.clone());
    let client = legacy_client(&url);
    let outcome = client
        .connect()
        .and_then(|_| client.ping(&RequestOptions::default()));
    let error = outcome.expect_err("the session id cannot be used");
    eprintln!("observed: {}", error.message);
    assert_eq!(error.status, Status::ProtocolError, "{error:?}");
    assert!(error.message.contains("session id"), "{error:?}");
    assert!(
        !error.message.contains(&session_id[..64]),
        "the id is quoted"
    );
}

/// A session id of ordinary size still works, with the same host headers.
#[test]
fn a_session_id_within_the_limit_is_used() {
    let url = serve_with_session_id("s".repeat(1024));
    let client = legacy_client(&url);
    client.connect().expect("connect");
    client.ping(&RequestOptions::default()).expect("ping");
}

/// A tool whose `x-mcp-header` name alone (70 KiB, a valid header name) is over a request's
/// whole header budget (64 KiB): a call of it used to fail with INVALID_ARGUMENT, though the
/// host's arguments are fine. The annotation is the server's fault: the tool is dropped from
/// `tools/list` as one with an invalid annotation (SEP-2243), and a call of it by name goes out
/// without those headers, and succeeds.
#[test]
fn header_names_a_tool_declares_past_the_budget_are_the_servers_fault() {
    let name = format!("N{}", "n".repeat(70 * 1024));
    let tool = json!({
        "name": "wide",
        "inputSchema": {
            "type": "object",
            "properties": { "q": { "type": "string", "x-mcp-header": name } }
        }
    });
    let url = serve_with(Faults {
        tools: json!([tool, {"name": "plain", "inputSchema": {"type": "object"}}]),
        ..Faults::default()
    });
    let options = ClientOptions {
        mode: ConnectMode::Modern,
        ..ClientOptions::default()
    };
    let client = Client::http(HttpConfig::new(&url), options);
    client.connect().expect("connect");
    let listed = client
        .tools(&RequestOptions::default())
        .expect("tools/list");
    let names: Vec<&str> = listed.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        names,
        ["plain"],
        "the tool with the oversized annotation is dropped"
    );
    let outcome = client.call_tool("wide", Some(json!({"q": "x"})), &RequestOptions::default());
    match outcome {
        Ok(result) => assert_eq!(common::text(&result), "called"),
        Err(error) => panic!("the server's annotation failed the host's call: {error:?}"),
    }
}

/// A task whose id is too long to send back in `tasks/get`'s `Mcp-Name` header (over the 8 KiB
/// a mirrored value may take): only the server chose it, so the call fails with PROTOCOL_ERROR
/// naming the taskId, not INVALID_ARGUMENT.
#[test]
fn a_task_id_too_long_to_send_back_is_a_protocol_error() {
    let url = serve_with(Faults {
        task_id: Some("t".repeat(10 * 1024)),
        ..Faults::default()
    });
    let options = ClientOptions {
        mode: ConnectMode::Modern,
        tasks: true,
        ..ClientOptions::default()
    };
    let client = Client::http(HttpConfig::new(&url), options);
    client.connect().expect("connect");
    let error = client
        .call_tool(
            "slow",
            None,
            &RequestOptions::with_timeout(std::time::Duration::from_secs(10)),
        )
        .expect_err("the task cannot be polled");
    eprintln!("observed: {}", error.message);
    assert_eq!(error.status, Status::ProtocolError, "{error:?}");
    assert!(error.message.contains("taskId"), "{error:?}");
}
