//! The Streamable HTTP transport against our own test server in its HTTP mode (and, for the
//! answers it never gives, small canned servers): sessions, both body kinds, resumption, header
//! encoding, limits, both cancel paths, timeouts, connection reuse and failures.

mod common;

use common::http_server::*;
use common::text;
use mcpc::{
    CancellationToken, Client, ClientOptions, ConnectMode, HttpConfig, RequestOptions, Status,
};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn none() -> RequestOptions {
    RequestOptions::default()
}

fn echo(client: &Client, text_in: &str) -> mcpc::Result<Value> {
    client.call_tool("echo", Some(json!({ "text": text_in })), &none())
}

/// Starts `call` on another thread, cancels it after `after`, and returns its error and how
/// long the caller took to return after the cancel.
fn cancel_after(
    client: &Arc<Client>,
    call: impl FnOnce(&Client, &RequestOptions) -> mcpc::Result<Value> + Send + 'static,
    after: Duration,
) -> (mcpc::Error, Duration) {
    let token = CancellationToken::new();
    let caller = {
        let (client, opts) = (client.clone(), RequestOptions::with_cancellation(&token));
        std::thread::spawn(move || {
            let result = call(&client, &opts);
            (result, Instant::now())
        })
    };
    std::thread::sleep(after);
    let cancelled_at = Instant::now();
    assert!(token.cancel(Some("test cancel")));
    let (result, returned_at) = caller.join().unwrap();
    (
        result.unwrap_err(),
        returned_at.saturating_duration_since(cancelled_at),
    )
}

fn slow(ms: u64) -> impl FnOnce(&Client, &RequestOptions) -> mcpc::Result<Value> {
    move |client, opts| client.call_tool("slow", Some(json!({ "ms": ms })), opts)
}

#[test]
fn legacy_session_and_version_go_on_every_request_after_initialize() {
    let server = HttpServer::start("http_legacy_session", &[]);
    let client = server.connect(ConnectMode::Legacy);
    assert_eq!(client.protocol_version().as_deref(), Some("2025-11-25"));
    assert_eq!(text(&echo(&client, "hi").unwrap()), "hi");
    client.close();

    let requests = server.requests();
    let initialize = posts_of(&requests, "initialize")[0];
    assert_eq!(header(initialize, "mcp-session-id"), None);
    assert_eq!(header(initialize, "mcp-protocol-version"), None);
    assert_eq!(
        header(initialize, "accept"),
        Some("application/json, text/event-stream")
    );
    assert_eq!(header(initialize, "content-type"), Some("application/json"));
    for method in ["notifications/initialized", "tools/call"] {
        let post = posts_of(&requests, method)[0];
        assert_eq!(
            header(post, "mcp-session-id"),
            Some("session-1"),
            "{method}"
        );
        assert_eq!(
            header(post, "mcp-protocol-version"),
            Some("2025-11-25"),
            "{method}"
        );
        assert_eq!(header(post, "mcp-method"), Some(method));
    }
    assert_eq!(
        header(posts_of(&requests, "tools/call")[0], "mcp-name"),
        Some("echo")
    );
    // close ends the session.
    // (Found by method: the standalone GET, sent earlier, may be logged after it.)
    let delete = requests.iter().find(|r| r["method"] == "DELETE").unwrap();
    assert_eq!(header(delete, "mcp-session-id"), Some("session-1"));
    assert_eq!(header(delete, "mcp-protocol-version"), Some("2025-11-25"));
}

#[test]
fn close_ends_pending_calls_and_the_session_in_bounded_time() {
    let server = HttpServer::start("http_close", &[]);
    let client = Arc::new(server.connect(ConnectMode::Legacy));
    let caller = {
        let client = client.clone();
        std::thread::spawn(move || slow(10_000)(&client, &none()))
    };
    server.wait_for(|lines| !posts_of(&http_requests(lines), "tools/call").is_empty());
    let start = Instant::now();
    client.close();
    let closing = start.elapsed();
    assert_eq!(caller.join().unwrap().unwrap_err().status, Status::Closed);
    assert!(closing < Duration::from_secs(2), "close took {closing:?}");
    let lines =
        server.wait_for(|lines| http_requests(lines).iter().any(|r| r["method"] == "DELETE"));
    let delete = http_requests(&lines)
        .into_iter()
        .find(|r| r["method"] == "DELETE")
        .expect("a DELETE");
    assert_eq!(header(&delete, "mcp-session-id"), Some("session-1"));
}

#[test]
fn an_expired_session_is_reported_and_connect_starts_another() {
    // The session serves notifications/initialized and one call, then it is gone.
    let server = HttpServer::start("http_expiry", &["--expire-session-after", "2"]);
    let client = server.connect(ConnectMode::Legacy);
    echo(&client, "one").unwrap();
    let expired = echo(&client, "two").unwrap_err();
    assert_eq!(expired.status, Status::SessionExpired, "{expired}");
    // The session id is a credential: named, never quoted.
    assert!(
        expired.message.contains("no longer knows the session"),
        "{expired}"
    );
    assert!(!expired.message.contains("session-1"), "{expired}");
    assert!(expired.request_id.is_some());
    assert_eq!(
        expired.code,
        Some(-32600),
        "the server's JSON-RPC error is kept"
    );

    // The session is forgotten: calls say so until the host connects again, which starts a
    // new session on the same client.
    assert_eq!(
        echo(&client, "three").unwrap_err().status,
        Status::NotConnected
    );
    client.connect().unwrap();
    assert!(echo(&client, "four").is_ok());
    let requests = server.requests();
    let last = posts_of(&requests, "tools/call").pop().unwrap();
    assert_eq!(header(last, "mcp-session-id"), Some("session-2"));
    client.close();
    let lines =
        server.wait_for(|lines| http_requests(lines).iter().any(|r| r["method"] == "DELETE"));
    let deletes: Vec<_> = http_requests(&lines)
        .into_iter()
        .filter(|r| r["method"] == "DELETE")
        .collect();
    assert_eq!(deletes.len(), 1, "no DELETE for the session that is gone");
    assert_eq!(header(&deletes[0], "mcp-session-id"), Some("session-2"));
}

/// Every request method.
fn exercise(server: &HttpServer, mode: ConnectMode) {
    let options = ClientOptions {
        mode,
        ..ClientOptions::default()
    };
    let client = Client::http(server.config(), options);
    client.connect().unwrap();
    assert_eq!(client.is_modern(), mode == ConnectMode::Modern);

    assert_eq!(text(&echo(&client, "hi").unwrap()), "hi");
    let tools = client.tools(&none()).unwrap();
    assert!(tools.len() > 5, "all pages: {tools:?}");
    assert_eq!(client.resources(&none()).unwrap().len(), 2);
    let read = client.read_resource("test://items/7", &none()).unwrap();
    assert_eq!(read["contents"][0]["text"], "item 7");
    let prompt = client
        .get_prompt("greet", Some(json!({"name": "Ada"})), &none())
        .unwrap();
    assert_eq!(prompt["messages"][0]["content"]["text"], "Hello, Ada!");
    let done = client
        .complete(
            json!({"type": "ref/prompt", "name": "greet"}),
            json!({"name": "name", "value": "ga"}),
            None,
            &none(),
        )
        .unwrap();
    assert_eq!(done["completion"]["values"], json!(["gamma", "gamut"]));
    let error = client
        .call_tool("add", Some(json!({"a": "x"})), &none())
        .unwrap_err();
    assert_eq!(
        (error.status, error.code),
        (Status::ServerError, Some(-32602))
    );

    let opts = RequestOptions {
        progress_token: Some(json!("p1")),
        ..none()
    };
    let result = client
        .call_tool("progress", Some(json!({"steps": 3})), &opts)
        .unwrap();
    assert_eq!(text(&result), "done");
}

#[test]
fn json_and_sse_answers_work_in_both_eras() {
    for flags in [vec![], vec!["--http-json"]] {
        let mut args = vec!["--modern", "--page-size", "2"];
        args.extend(flags);
        let server = HttpServer::start("http_bodies", &args);
        exercise(&server, ConnectMode::Legacy);
        exercise(&server, ConnectMode::Modern);
    }
}

#[test]
fn auto_mode_falls_back_to_initialize_when_the_server_refuses_discover() {
    let server = HttpServer::start("http_auto_fallback", &[]);
    let client = server.connect(ConnectMode::Auto);
    assert!(!client.is_modern());
    assert_eq!(text(&echo(&client, "hi").unwrap()), "hi");
    let requests = server.requests();
    let probe = posts_of(&requests, "server/discover")[0];
    // The probe names its version in the header, as its envelope does.
    assert_eq!(header(probe, "mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(header(probe, "mcp-method"), Some("server/discover"));
}

#[test]
fn modern_requests_carry_version_method_and_name_and_no_session() {
    let server = HttpServer::start("http_modern_headers", &["--modern"]);
    let client = server.connect(ConnectMode::Auto);
    assert!(client.is_modern());
    echo(&client, "hi").unwrap();
    client.read_resource("test://hello", &none()).unwrap();
    client.close();
    let requests = server.requests();
    for request in &requests {
        assert_eq!(header(request, "mcp-session-id"), None, "{request}");
        assert_ne!(request["method"], "DELETE", "no session to delete");
        let method = request["body"]["method"].as_str().unwrap();
        assert_eq!(header(request, "mcp-method"), Some(method));
        assert_eq!(header(request, "mcp-protocol-version"), Some("2026-07-28"));
    }
    assert_eq!(
        header(posts_of(&requests, "resources/read")[0], "mcp-name"),
        Some("test://hello")
    );
}

#[test]
fn names_that_could_inject_headers_are_base64_wrapped() {
    let server = HttpServer::start("http_injection", &["--modern"]);
    for mode in [ConnectMode::Modern, ConnectMode::Legacy] {
        let client = server.connect(mode);
        // The server decodes Mcp-Name and compares it with the body (-32020 if they differ):
        // getting "Unknown tool" back proves the header arrived intact and matching.
        let evil = "echo\r\nX-Injected: 1";
        let error = client
            .call_tool(evil, Some(json!({})), &none())
            .unwrap_err();
        assert_eq!(
            (error.status, error.code),
            (Status::ServerError, Some(-32602)),
            "{mode:?}: {error}"
        );
        assert!(error.message.contains("Unknown tool"), "{error}");
        let uri = "test://items/caf\u{e9}\n";
        let read = client.read_resource(uri, &none()).unwrap();
        assert_eq!(read["contents"][0]["text"], "item caf\u{e9}\n");
    }
    let requests = server.requests();
    for request in &requests {
        let headers = request["headers"].as_object().unwrap();
        assert!(!headers.contains_key("x-injected"), "{request}");
    }
    let calls = posts_of(&requests, "tools/call");
    assert_eq!(calls.len(), 2);
    for call in calls {
        assert_eq!(
            header(call, "mcp-name"),
            Some("=?base64?ZWNobw0KWC1JbmplY3RlZDogMQ==?=")
        );
    }
    let reads = posts_of(&requests, "resources/read");
    assert_eq!(
        header(reads[0], "mcp-name"),
        Some("=?base64?dGVzdDovL2l0ZW1zL2NhZsOpCg==?=")
    );
}

#[test]
fn declared_parameters_are_mirrored_once_tools_list_declared_them() {
    let server = HttpServer::start("http_params", &["--modern"]);
    let client = server.connect(ConnectMode::Modern);
    let args = json!({"region": "eu west\r\n", "count": 3});
    // Before tools/list we know no declaration: the server finds the headers missing.
    let error = client
        .call_tool("header_ok", Some(args.clone()), &none())
        .unwrap_err();
    assert_eq!(error.code, Some(-32020), "{error}");

    let tools = client.tools(&none()).unwrap();
    assert!(!tools.iter().any(|t| t["name"] == "header_bad"), "dropped");
    let result = client
        .call_tool("header_ok", Some(args.clone()), &none())
        .unwrap();
    assert_eq!(serde_json::from_str::<Value>(text(&result)).unwrap(), args);
    // Absent arguments mean absent headers.
    client
        .call_tool("header_ok", Some(json!({"count": 4})), &none())
        .unwrap();

    let requests = server.requests();
    let calls = posts_of(&requests, "tools/call");
    let mirrored = calls[1];
    assert_eq!(
        header(mirrored, "mcp-param-region"),
        Some("=?base64?ZXUgd2VzdA0K?=")
    );
    assert_eq!(header(mirrored, "mcp-param-count"), Some("3"));
    assert_eq!(header(calls[2], "mcp-param-region"), None);
    assert_eq!(header(calls[2], "mcp-param-count"), Some("4"));
}

#[test]
fn error_statuses_keep_the_servers_json_rpc_error() {
    let server = HttpServer::start("http_errors", &["--modern"]);
    let client = server.connect(ConnectMode::Modern);
    // 404 with a -32601 body.
    let error = client
        .request("nonexistent/method", None, &none())
        .unwrap_err();
    assert_eq!(
        (error.status, error.code),
        (Status::ServerError, Some(-32601)),
        "{error}"
    );
    assert!(error.request_id.is_some());
}

#[test]
fn resumption_waits_the_servers_retry_delay_then_gets_the_answer() {
    let server = HttpServer::start(
        "http_resume",
        &["--drop-streams", "primed", "--retry-ms", "300"],
    );
    let client = server.connect(ConnectMode::Legacy);
    let opts = RequestOptions {
        progress_token: Some(json!("r")),
        ..none()
    };
    let result = client
        .call_tool("progress", Some(json!({"steps": 2})), &opts)
        .unwrap();
    assert_eq!(text(&result), "done");
    let lines = server.log();
    let dropped = time_of(&lines, |l| l.get("stream_dropped").is_some()).unwrap();
    let resumed = time_of(&lines, |l| {
        l["http"]["method"] == "GET" && l["http"]["headers"]["last-event-id"].is_string()
    })
    .unwrap();
    let waited = resumed - dropped;
    assert!((300..1300).contains(&waited), "resumed after {waited} ms");
    let requests = http_requests(&lines);
    let gets = resumptions(&requests);
    assert_eq!(gets.len(), 1);
    assert_eq!(header(gets[0], "last-event-id"), Some("s2-0"));
    assert_eq!(header(gets[0], "accept"), Some("text/event-stream"));
    assert_eq!(header(gets[0], "mcp-session-id"), Some("session-1"));
}

#[test]
fn an_unprimed_stream_that_drops_fails_without_resuming() {
    let server = HttpServer::start("http_unprimed", &["--drop-streams", "unprimed"]);
    let client = server.connect(ConnectMode::Legacy);
    let start = Instant::now();
    let error = echo(&client, "x").unwrap_err();
    assert_eq!(error.status, Status::ProtocolError, "{error}");
    assert!(error.message.contains("without a response"), "{error}");
    assert!(start.elapsed() < Duration::from_secs(1));
    assert!(resumptions(&server.requests()).is_empty());
}

#[test]
fn the_modern_era_never_resumes_a_dropped_stream() {
    let server = HttpServer::start(
        "http_modern_no_resume",
        &["--modern", "--drop-streams", "primed"],
    );
    let client = server.connect(ConnectMode::Modern);
    let error = echo(&client, "x").unwrap_err();
    assert_eq!(error.status, Status::ProtocolError, "{error}");
    assert!(error.message.contains("without a response"), "{error}");
    assert!(resumptions(&server.requests()).is_empty());
}

#[test]
fn resumption_gives_up_after_two_attempts_that_bring_nothing() {
    let server = HttpServer::start(
        "http_resume_fails",
        &["--drop-streams", "always", "--retry-ms", "100"],
    );
    let client = server.connect(ConnectMode::Legacy);
    let error = echo(&client, "x").unwrap_err();
    assert_eq!(error.status, Status::ProtocolError, "{error}");
    assert!(error.message.contains("2 reconnections"), "{error}");
    assert_eq!(resumptions(&server.requests()).len(), 2);
    // The client is still usable: a call that does not stream works.
    client.ping(&none()).unwrap();
}

#[test]
fn size_limits_fail_the_call_in_both_body_kinds() {
    for flags in [vec![], vec!["--http-json"]] {
        let server = HttpServer::start("http_limits", &flags);
        let mut config = server.config();
        config.max_message_bytes = 4096;
        let options = ClientOptions {
            mode: ConnectMode::Legacy,
            ..ClientOptions::default()
        };
        let client = Client::http(config, options);
        client.connect().unwrap();
        let small = client
            .call_tool("oversized", Some(json!({"bytes": 1000})), &none())
            .unwrap();
        assert_eq!(text(&small).len(), 1000);
        let error = client
            .call_tool("oversized", Some(json!({"bytes": 100_000})), &none())
            .unwrap_err();
        assert_eq!(error.status, Status::ProtocolError, "{flags:?}: {error}");
        assert!(error.message.contains("4096"), "{error}");
        // The message names the option that raises the limit.
        for option in [
            "HttpConfig::max_message_bytes",
            "mcp_client_options_set_max_line_bytes",
        ] {
            assert!(error.message.contains(option), "{error}");
        }
        // The next call is fine.
        assert_eq!(text(&echo(&client, "after").unwrap()), "after");
    }
}

#[test]
fn legacy_cancel_posts_the_notice_and_the_caller_returns_at_once() {
    let server = HttpServer::start("http_cancel_legacy", &[]);
    let client = Arc::new(server.connect(ConnectMode::Legacy));
    let (error, took) = cancel_after(&client, slow(10_000), Duration::from_millis(300));
    assert_eq!(error.status, Status::Cancelled);
    assert!(
        took < Duration::from_millis(250),
        "returned {took:?} after the cancel"
    );
    let id = error.request_id.unwrap();

    let lines = server.wait_for(|lines| {
        lines
            .iter()
            .any(|l| l["handler_done"] == id && l["cancelled"] == true)
    });
    assert!(
        lines
            .iter()
            .any(|l| l["handler_done"] == id && l["cancelled"] == true),
        "the slow tool did not stop"
    );
    let requests = http_requests(&lines);
    let notices = posts_of(&requests, "notifications/cancelled");
    assert_eq!(notices.len(), 1);
    let notice = notices[0];
    assert_eq!(notice["body"]["params"]["requestId"], id);
    assert_eq!(notice["body"]["params"]["reason"], "test cancel");
    assert_eq!(header(notice, "mcp-session-id"), Some("session-1"));
    assert_eq!(
        header(notice, "mcp-method"),
        Some("notifications/cancelled")
    );
    // The notice came after its request, on another connection.
    let call = posts_of(&requests, "tools/call")[0];
    assert!(notice["at_ms"].as_u64() >= call["at_ms"].as_u64());
    assert_ne!(notice["connection"], call["connection"]);
    // The connection goes on working.
    assert_eq!(text(&echo(&client, "next").unwrap()), "next");
}

#[test]
fn modern_cancel_closes_the_stream_and_posts_nothing() {
    for flags in [vec!["--modern"], vec!["--modern", "--http-json"]] {
        let server = HttpServer::start("http_cancel_modern", &flags);
        let client = Arc::new(server.connect(ConnectMode::Modern));
        let (error, took) = cancel_after(&client, slow(10_000), Duration::from_millis(300));
        let cancelled_at = Instant::now() - took;
        assert_eq!(error.status, Status::Cancelled);
        assert!(
            took < Duration::from_millis(250),
            "returned {took:?} after the cancel"
        );
        let id = error.request_id.unwrap();

        let lines = server.wait_for(|lines| {
            lines.iter().any(|l| l["closed_by_client"] == id)
                && lines.iter().any(|l| l["handler_done"] == id)
        });
        let seen_after = cancelled_at.elapsed();
        assert!(
            lines.iter().any(|l| l["closed_by_client"] == id),
            "{flags:?}: the server never saw the stream close"
        );
        assert!(seen_after < Duration::from_secs(1), "{seen_after:?}");
        assert!(
            lines
                .iter()
                .any(|l| l["handler_done"] == id && l["cancelled"] == true),
            "the slow tool did not stop"
        );
        let requests = http_requests(&lines);
        assert!(posts_of(&requests, "notifications/cancelled").is_empty());

        // The aborted connection never serves another request.
        let aborted = posts_of(&requests, "tools/call")[0]["connection"].clone();
        for n in 0..5 {
            echo(&client, &n.to_string()).unwrap();
        }
        let requests = server.requests();
        let calls = posts_of(&requests, "tools/call");
        assert!(calls[1..].iter().all(|c| c["connection"] != aborted));
    }
}

#[test]
fn timeouts_reach_the_server_as_cancels_do() {
    for mode in [ConnectMode::Legacy, ConnectMode::Modern] {
        // A server per era: request ids start again with each client.
        let server = HttpServer::start("http_timeouts", &["--modern"]);
        let client = server.connect(mode);
        let start = Instant::now();
        let error = client
            .call_tool(
                "slow",
                Some(json!({"ms": 10_000})),
                &RequestOptions::with_timeout(Duration::from_millis(200)),
            )
            .unwrap_err();
        assert_eq!(error.status, Status::Timeout, "{mode:?}");
        assert!(start.elapsed() < Duration::from_millis(600));
        let id = error.request_id.unwrap();
        let lines = server.wait_for(|lines| lines.iter().any(|l| l["handler_done"] == id));
        assert!(
            lines
                .iter()
                .any(|l| l["handler_done"] == id && l["cancelled"] == true),
            "{mode:?}: the server did not stop the tool"
        );
        let requests = http_requests(&lines);
        let notices = posts_of(&requests, "notifications/cancelled");
        if mode == ConnectMode::Legacy {
            assert_eq!(notices.len(), 1);
            let reason = &notices[0]["body"]["params"]["reason"];
            assert_eq!(reason, "timed out after 200 ms");
        } else {
            assert!(notices.is_empty(), "the modern era posts no notice");
        }
    }
}

#[test]
fn calls_reuse_connections_and_are_not_slower_than_the_first() {
    for flags in [vec![], vec!["--modern", "--http-json"]] {
        let server = HttpServer::start("http_reuse", &flags);
        let mode = match flags.is_empty() {
            true => ConnectMode::Legacy,
            false => ConnectMode::Modern,
        };
        let client = Client::http(
            server.config(),
            ClientOptions {
                mode,
                ..ClientOptions::default()
            },
        );
        let start = Instant::now();
        client.connect().unwrap();
        let first = start.elapsed();
        let mut later = Vec::new();
        for n in 0..30 {
            let start = Instant::now();
            echo(&client, &n.to_string()).unwrap();
            later.push(start.elapsed());
        }
        later.sort();
        let median = later[later.len() / 2];
        let requests = server.requests();
        let mut connections: Vec<u64> = posts_of(&requests, "tools/call")
            .iter()
            .map(|c| c["connection"].as_u64().unwrap())
            .collect();
        connections.sort();
        connections.dedup();
        // The next call may start before the last one's stream has quite ended, so a few
        // connections take turns; what matters is that their number does not grow with calls.
        assert!(
            connections.len() <= 5,
            "{flags:?}: 30 calls used {} connections",
            connections.len()
        );
        assert!(
            median <= first + Duration::from_millis(5),
            "median call {median:?}, connect {first:?}"
        );
    }
}

/// A local port that refuses connections for as long as the socket lives: bound, never
/// listening, so no other test's server can take it meanwhile. Unix only: made with libc
/// sockets, and Windows retries a refused connect for about a second, past the test's bound.
#[cfg(unix)]
struct RefusingPort {
    fd: libc::c_int,
    port: u16,
}

#[cfg(unix)]
impl RefusingPort {
    fn new() -> Self {
        // SAFETY: plain socket calls on a socket we own, with correctly sized addresses.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
            assert!(fd >= 0);
            let mut addr: libc::sockaddr_in = std::mem::zeroed();
            addr.sin_family = libc::AF_INET as libc::sa_family_t;
            addr.sin_addr.s_addr = u32::from_ne_bytes([127, 0, 0, 1]);
            let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            let sockaddr = &mut addr as *mut libc::sockaddr_in as *mut libc::sockaddr;
            assert_eq!(libc::bind(fd, sockaddr, len), 0);
            assert_eq!(libc::getsockname(fd, sockaddr, &mut len), 0);
            RefusingPort {
                fd,
                port: u16::from_be(addr.sin_port),
            }
        }
    }
}

#[cfg(unix)]
impl Drop for RefusingPort {
    fn drop(&mut self) {
        // SAFETY: our own descriptor, closed once.
        unsafe { libc::close(self.fd) };
    }
}

#[cfg(unix)]
#[test]
fn a_refused_connection_fails_fast() {
    let refusing = RefusingPort::new();
    let port = refusing.port;
    let client = Client::http(
        HttpConfig::new(format!("http://127.0.0.1:{port}/mcp")),
        ClientOptions::default(),
    );
    let start = Instant::now();
    let error = client.connect().unwrap_err();
    assert_eq!(error.status, Status::TransportError, "{error}");
    assert!(error.message.contains("refused"), "{error}");
    assert!(start.elapsed() < Duration::from_secs(1));
}

/// Unix only: it runs the `openssl` tool (to make the certificate and as the TLS server), which
/// a Windows process under Wine cannot start; TLS on Windows is covered by tests/network.rs
/// (certificates made in the test, a TLS server in the test), which runs under Wine.
#[cfg(unix)]
#[test]
fn https_verifies_the_server_certificate() {
    // A TLS server with a self-signed certificate, made by the openssl tool when there is one.
    let dir = std::env::temp_dir().join(format!("mcpc-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let made = std::process::Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args(["-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1"])
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stderr(std::process::Stdio::null())
        .status();
    if !made.is_ok_and(|s| s.success()) {
        common::skip("no openssl tool to make a certificate (scripts/install-deps.sh installs it)");
        return;
    }
    // A port freed a moment ago may be taken by another test's server before openssl binds it:
    // then openssl exits, and we try another.
    let (mut server, port) = (1..=3)
        .find_map(|_| {
            let port = TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let mut server = std::process::Command::new("openssl")
                .args(["s_server", "-quiet", "-www", "-accept", &port.to_string()])
                .arg("-cert")
                .arg(&cert)
                .arg("-key")
                .arg(&key)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            let deadline = Instant::now() + Duration::from_secs(5);
            while server.try_wait().unwrap().is_none() && Instant::now() < deadline {
                if common::ports::listening(port) {
                    return Some((server, port));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = server.kill();
            let _ = server.wait();
            None
        })
        .expect("openssl s_server did not start");
    let client = Client::http(
        HttpConfig::new(format!("https://127.0.0.1:{port}/mcp")),
        ClientOptions::default(),
    );
    let error = client.connect().unwrap_err();
    let _ = server.kill();
    let _ = server.wait();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(error.status, Status::TransportError, "{error}");
    // Self-signed: nobody we trust issued it.
    assert!(error.message.contains("UnknownIssuer"), "{error}");
}

#[test]
fn bad_urls_and_headers_are_invalid_arguments() {
    for url in ["ftp://127.0.0.1/mcp", "not a url", "http:///mcp", ""] {
        let client = Client::http(HttpConfig::new(url), ClientOptions::default());
        let error = client.connect().unwrap_err();
        assert_eq!(error.status, Status::InvalidArgument, "{url:?}: {error}");
    }
    let mut config = HttpConfig::new("http://127.0.0.1:1/mcp");
    assert!(config.add_header("X-Evil", "a\r\nInjected: 1").is_err());
    assert!(config.add_header("Bad Name", "v").is_err());
    assert!(config.add_header("Mcp-Session-Id", "forged").is_err());
    config.headers.push(("X-Evil".into(), "a\nb".into()));
    let error = Client::http(config, ClientOptions::default())
        .connect()
        .unwrap_err();
    assert_eq!(error.status, Status::InvalidArgument);
}

#[test]
fn extra_headers_go_on_every_request() {
    let server = HttpServer::start("http_extra_headers", &[]);
    let mut config = server.config();
    config.add_header("Authorization", "Bearer secret").unwrap();
    let client = Client::http(
        config,
        ClientOptions {
            mode: ConnectMode::Legacy,
            ..ClientOptions::default()
        },
    );
    client.connect().unwrap();
    echo(&client, "x").unwrap();
    client.close();
    let requests = server.requests();
    let posts = requests.iter().filter(|r| r["method"] == "POST").count();
    assert_eq!(posts, 3, "initialize, initialized, call");
    assert!(requests.iter().any(|r| r["method"] == "DELETE"));
    for request in &requests {
        assert_eq!(header(request, "authorization"), Some("Bearer secret"));
    }
}

#[test]
fn server_requests_met_on_a_stream_are_answered() {
    let server = HttpServer::start("http_server_request", &[]);
    let client = server.connect(ConnectMode::Legacy);
    let result = client
        .call_tool("ask_client", Some(json!({"method": "x/unknown"})), &none())
        .unwrap();
    let answer: Value = serde_json::from_str(text(&result)).unwrap();
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    let requests = server.requests();
    let reply = requests
        .iter()
        .find(|r| r["body"]["error"].is_object())
        .expect("the answer was POSTed");
    assert_eq!(header(reply, "mcp-session-id"), Some("session-1"));
    assert_eq!(header(reply, "mcp-method"), None);
}

#[test]
fn the_standalone_stream_carries_server_requests_until_close() {
    let server = HttpServer::start("http_standalone", &[]);
    let client = server.connect(ConnectMode::Legacy);
    let opened = |lines: &[Value]| {
        http_requests(lines)
            .iter()
            .any(|r| r["method"] == "GET" && header(r, "last-event-id").is_none())
    };
    assert!(opened(&server.wait_for(opened)), "no standalone GET");
    let requests = server.requests();
    let get = requests.iter().find(|r| r["method"] == "GET").unwrap();
    assert_eq!(header(get, "accept"), Some("text/event-stream"));
    assert_eq!(header(get, "mcp-session-id"), Some("session-1"));
    assert_eq!(header(get, "mcp-protocol-version"), Some("2025-11-25"));

    // The stream may be accepted a moment after it was requested.
    let deadline = Instant::now() + Duration::from_secs(2);
    while server.broadcast(&json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}))
        == 0
    {
        assert!(
            Instant::now() < deadline,
            "the standalone stream never opened"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // A request from the server that belongs to no call: the client answers it (ping).
    assert_eq!(
        server.broadcast(&json!({"jsonrpc": "2.0", "id": "srv-ping", "method": "ping"})),
        1
    );
    let is_answer = |r: &Value| r["path"] == "/mcp" && r["body"]["id"] == "srv-ping";
    let lines = server.wait_for(|lines| http_requests(lines).iter().any(is_answer));
    let answer = http_requests(&lines)
        .into_iter()
        .find(is_answer)
        .expect("the ping was answered");
    assert_eq!(answer["body"]["result"], json!({}));
    assert_eq!(header(&answer, "mcp-session-id"), Some("session-1"));

    let closing = Instant::now();
    client.close();
    let lines = server.wait_for(|lines| lines.iter().any(|l| l.get("standalone_closed").is_some()));
    assert!(lines.iter().any(|l| l.get("standalone_closed").is_some()));
    assert!(closing.elapsed() < Duration::from_secs(1));
}

#[test]
fn the_standalone_stream_can_be_turned_off_and_is_never_opened_in_the_modern_era() {
    let server = HttpServer::start("http_no_standalone", &["--modern"]);
    let mut config = server.config();
    config.listen = false;
    let quiet = Client::http(
        config,
        ClientOptions {
            mode: ConnectMode::Legacy,
            ..ClientOptions::default()
        },
    );
    quiet.connect().unwrap();
    let modern = server.connect(ConnectMode::Modern);
    echo(&quiet, "x").unwrap();
    echo(&modern, "y").unwrap();
    // The barrier: close waits for every exchange the clients started, a GET included.
    quiet.close();
    modern.close();
    assert!(!server.requests().iter().any(|r| r["method"] == "GET"));
}

/// A server that answers each connection's first request with the next canned response, and
/// records the requests it read.
fn canned_server(responses: Vec<String>) -> (String, std::thread::JoinHandle<Vec<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let mut seen = Vec::new();
        for response in responses {
            let (stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            let mut length = 0;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap();
                }
                head.push_str(&line);
                if line == "\r\n" {
                    break;
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            seen.push(head + &String::from_utf8_lossy(&body));
            (&stream).write_all(response.as_bytes()).unwrap();
        }
        seen
    });
    (url, handle)
}

fn canned(status: &str, headers: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\nConnection: close\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// A legacy client connected to canned answers: `initialize`, then 202, then `then`.
fn canned_client(then: String) -> (Client, std::thread::JoinHandle<Vec<String>>) {
    let init = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"canned","version":"1"}}}"#;
    let (url, handle) = canned_server(vec![
        canned("200 OK", "Content-Type: application/json\r\n", init),
        canned("202 Accepted", "", ""),
        then,
    ]);
    let mut config = HttpConfig::new(url);
    config.listen = false; // one canned answer per request we make
    let client = Client::http(
        config,
        ClientOptions {
            mode: ConnectMode::Legacy,
            ..ClientOptions::default()
        },
    );
    client.connect().unwrap();
    (client, handle)
}

#[test]
fn other_failures_name_the_status_content_type_or_redirect() {
    let (client, server) = canned_client(canned("500 Internal Server Error", "", "boom"));
    let error = client.ping(&none()).unwrap_err();
    assert_eq!(error.status, Status::TransportError, "{error}");
    assert!(
        error.message.contains("HTTP 500") && error.message.contains("boom"),
        "{error}"
    );
    server.join().unwrap();

    let (client, server) = canned_client(canned(
        "200 OK",
        "Content-Type: text/html\r\n",
        "<html></html>",
    ));
    let error = client.ping(&none()).unwrap_err();
    assert_eq!(error.status, Status::ProtocolError, "{error}");
    assert!(error.message.contains("text/html"), "{error}");
    server.join().unwrap();

    let (client, server) = canned_client(canned(
        "307 Temporary Redirect",
        "Location: http://elsewhere.invalid/mcp\r\n",
        "",
    ));
    let error = client.ping(&none()).unwrap_err();
    assert_eq!(error.status, Status::TransportError, "{error}");
    assert!(
        error.message.contains("http://elsewhere.invalid/mcp"),
        "{error}"
    );
    // Three requests were read: nothing followed the redirect.
    assert_eq!(server.join().unwrap().len(), 3);

    let (client, server) = canned_client(canned(
        "400 Bad Request",
        "Content-Type: application/json\r\n",
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: nope","data":{"why":"test"}}}"#,
    ));
    let error = client.ping(&none()).unwrap_err();
    assert_eq!(
        (error.status, error.code, error.message.as_str()),
        (Status::ServerError, Some(-32000), "Bad Request: nope")
    );
    assert_eq!(error.data, Some(json!({"why": "test"})));
    server.join().unwrap();
}

#[test]
fn the_c_api_makes_http_clients_and_checks_headers() {
    use mcpc::ffi::*;
    use std::ffi::CStr;
    let server = HttpServer::start("http_c_api", &[]);
    unsafe {
        let options = mcp_client_options_new();
        assert_eq!(
            mcp_client_options_add_header(options, c"X-Evil".as_ptr(), c"a\r\nb: c".as_ptr()),
            mcp_status::InvalidArgument
        );
        let fresh = mcp_client_options_new();
        assert_eq!(
            mcp_client_options_add_header(fresh, c"X-Token".as_ptr(), c"t1".as_ptr()),
            mcp_status::Ok
        );
        assert_eq!(
            mcp_client_options_set_http_connect_timeout_ms(fresh, 0),
            mcp_status::InvalidArgument
        );
        let fresh_ok = mcp_client_options_new();
        mcp_client_options_add_header(fresh_ok, c"X-Token".as_ptr(), c"t1".as_ptr());
        mcp_client_options_set_http_connect_timeout_ms(fresh_ok, 2000);
        mcp_client_options_set_http_idle_timeout_ms(fresh_ok, 0);
        assert_eq!(
            mcp_client_options_set_http_listen(fresh_ok, false),
            mcp_status::Ok
        );

        let url = std::ffi::CString::new(server.url.clone()).unwrap();
        let client = mcp_client_new_http(url.as_ptr(), fresh_ok);
        let result = mcp_client_connect(client);
        assert_eq!(
            mcp_result_status(result),
            mcp_status::Ok,
            "{:?}",
            CStr::from_ptr(mcp_result_message(result))
        );
        mcp_result_free(result);
        mcp_client_free(client);
        let requests = server.requests();
        assert!(requests.iter().all(|r| header(r, "x-token") == Some("t1")));
        assert!(
            !requests.iter().any(|r| r["method"] == "GET"),
            "listen was off"
        );

        // A rejected header poisons the options: connect reports it.
        let client = mcp_client_new_http(url.as_ptr(), options);
        let result = mcp_client_connect(client);
        assert_eq!(mcp_result_status(result), mcp_status::InvalidArgument);
        mcp_result_free(result);
        mcp_client_free(client);

        let client = mcp_client_new_http(c"gopher://x".as_ptr(), std::ptr::null());
        let result = mcp_client_connect(client);
        assert_eq!(mcp_result_status(result), mcp_status::InvalidArgument);
        mcp_result_free(result);
        mcp_client_free(client);
        let client = mcp_client_new_http(std::ptr::null(), std::ptr::null());
        let result = mcp_client_connect(client);
        assert_eq!(mcp_result_status(result), mcp_status::InvalidArgument);
        mcp_result_free(result);
        mcp_client_free(client);

        mcp_client_options_free(options);
        mcp_client_options_free(fresh);
        mcp_client_options_free(fresh_ok);
    }
}
