//! The client over stdio against our test server: the handshake, every request method,
//! pagination, and what happens on bad frames, crashes and bad arguments.

mod common;

use common::*;
use mcpc::handlers::Callbacks;
use mcpc::{Client, ClientOptions, RequestOptions, Status, StderrMode, StdioConfig};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn none() -> RequestOptions {
    RequestOptions::default()
}

#[test]
fn handshake_sends_initialize_then_initialized_and_exposes_the_server() {
    let log = log_path("handshake");
    let client = connect_logged(&log, &[]);
    assert_eq!(client.protocol_version().as_deref(), Some("2025-11-25"));
    assert_eq!(
        client.server_info().unwrap()["serverInfo"]["name"],
        "mcpc-test-server"
    );
    assert!(client.server_capabilities().unwrap()["tools"].is_object());
    assert_eq!(
        client.instructions().as_deref(),
        Some("Test server for mcpc.")
    );
    // Auto mode probes first; this server refuses the probe, so the handshake follows.
    let lines = wait_for_log(&log, |l| l.len() >= 3);
    assert!(is_method(&lines[0], "server/discover"));
    assert!(is_method(&lines[1], "initialize"));
    assert_eq!(lines[1]["params"]["protocolVersion"], "2025-11-25");
    assert_eq!(lines[1]["params"]["clientInfo"]["name"], "mcpc");
    assert_eq!(
        lines[2],
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    );
    // connect again: same answer, no I/O (the barrier ping is the next line the server read)
    assert_eq!(client.connect().unwrap(), client.server_info().unwrap());
    let lines = log_after_ping(&client, &log);
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert!(is_method(&lines[3], "ping"), "{lines:?}");
}

#[test]
fn older_counter_offers_are_accepted_and_unknown_versions_rejected() {
    for version in ["2024-11-05", "2025-03-26", "2025-06-18"] {
        let client = connect(&["--protocol-version", version]);
        assert_eq!(client.protocol_version().as_deref(), Some(version));
    }
    let client = Client::stdio(
        config(&["--protocol-version", "2031-01-01"]),
        ClientOptions::default(),
    );
    let err = client.connect().unwrap_err();
    assert_eq!(err.status, Status::ProtocolError);
    assert!(err.message.contains("2031-01-01"), "{}", err.message);
    assert!(!client.is_connected());
    assert_eq!(
        client.ping(&none()).unwrap_err().status,
        Status::NotConnected
    );
}

#[test]
fn notifications_before_the_initialize_reply_are_tolerated_and_delivered() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let options = ClientOptions {
        callbacks: Callbacks {
            on_notification: Some({
                let seen = seen.clone();
                Arc::new(move |method: &str, _: Option<&Value>| {
                    seen.lock().unwrap().push(method.to_owned())
                })
            }),
            ..Callbacks::default()
        },
        ..ClientOptions::default()
    };
    let client = connect_with(config(&["--notify-before-init"]), options);
    assert!(client.is_connected());
    // Callbacks run on the client's callback thread, a moment later.
    let deadline = Instant::now() + Duration::from_secs(2);
    while seen.lock().unwrap().len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.contains(&"notifications/tools/list_changed".to_owned()),
        "{seen:?}"
    );
}

#[test]
fn every_request_method_works() {
    let client = connect(&[]);
    assert_eq!(client.ping(&none()).unwrap(), json!({}));
    let sum = client
        .call_tool("add", Some(json!({"a": 2, "b": 3})), &none())
        .unwrap();
    assert_eq!(sum["structuredContent"]["sum"], 5);
    let page = client.list_tools(None, &none()).unwrap();
    assert!(page["tools"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == "echo"));
    let read = client.read_resource("test://hello", &none()).unwrap();
    assert_eq!(read["contents"][0]["text"], "Hello, world");
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
    assert_eq!(client.resources(&none()).unwrap().len(), 2);
    assert_eq!(
        client.list_resources(None, &none()).unwrap()["resources"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        client.resource_templates(&none()).unwrap()[0]["uriTemplate"],
        "test://items/{id}"
    );
    assert_eq!(
        client.list_resource_templates(None, &none()).unwrap()["resourceTemplates"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(client.prompts(&none()).unwrap()[0]["name"], "greet");
    assert_eq!(
        client.list_prompts(None, &none()).unwrap()["prompts"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let generic = client
        .request(
            "resources/read",
            Some(json!({"uri": "test://items/7"})),
            &none(),
        )
        .unwrap();
    assert_eq!(generic["contents"][0]["text"], "item 7");
    // A handshake-era server does not know server/discover.
    let err = client.discover(&none()).unwrap_err();
    assert_eq!((err.status, err.code), (Status::ServerError, Some(-32601)));
}

#[test]
fn server_errors_keep_code_message_and_data() {
    let client = connect(&[]);
    let err = client.read_resource("test://missing", &none()).unwrap_err();
    assert_eq!(err.status, Status::ServerError);
    assert_eq!(err.code, Some(-32002));
    assert_eq!(err.message, "Resource not found");
    assert_eq!(err.data, Some(json!({"uri": "test://missing"})));
    assert!(err.request_id.is_some());
    let err = client.call_tool("no-such-tool", None, &none()).unwrap_err();
    assert_eq!((err.status, err.code), (Status::ServerError, Some(-32602)));
}

#[test]
fn pagination_walks_all_pages_and_guards_against_loops() {
    let log = log_path("paging");
    let client = connect_logged(&log, &["--page-size", "2"]);
    let first = client.list_tools(None, &none()).unwrap();
    assert_eq!(first["tools"].as_array().unwrap().len(), 2);
    let cursor = first["nextCursor"].as_str().unwrap().to_owned();
    let second = client.list_tools(Some(&cursor), &none()).unwrap();
    assert_ne!(second["tools"], first["tools"]);
    let all = client.tools(&none()).unwrap();
    let names: Vec<&str> = all.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(
        names.len() > 4 && names.contains(&"echo") && names.contains(&"slow"),
        "{names:?}"
    );
    let unique: std::collections::HashSet<_> = names.iter().collect();
    assert_eq!(unique.len(), names.len(), "no page fetched twice");

    // A server that repeats its cursor: two requests, two pages, then stop.
    let looping = connect_logged(
        &log_path("repeat"),
        &["--repeat-cursor", "--page-size", "1"],
    );
    assert_eq!(looping.tools(&none()).unwrap().len(), 2);

    // A server that never ends: PAGINATION_LIMIT after max_pages.
    let options = ClientOptions {
        max_pages: 5,
        ..ClientOptions::default()
    };
    let endless_log = log_path("endless");
    let endless = connect_with(
        config(&["--endless-pages", "--log", endless_log.to_str().unwrap()]),
        options,
    );
    let err = endless.prompts(&none()).unwrap_err();
    assert_eq!(err.status, Status::PaginationLimit);
    assert_eq!(
        read_log(&endless_log)
            .iter()
            .filter(|l| is_method(l, "prompts/list"))
            .count(),
        5
    );
}

#[test]
fn a_non_json_stdout_line_is_skipped_and_reported() {
    let client = connect(&[]);
    let ok = client.call_tool("noise", None, &none()).unwrap();
    assert_eq!(text(&ok), "noise done");
    let stats = client.stats();
    assert_eq!(stats.bad_frames, 1);
    assert!(stats.last_bad_frame.unwrap().contains("this is not json"));
}

#[test]
fn a_line_over_the_limit_fails_the_pending_calls_and_reading_goes_on() {
    let mut config = config(&[]);
    config.max_line_bytes = 10_000;
    let client = connect_with(config, ClientOptions::default());
    let err = client
        .call_tool("oversized", Some(json!({"bytes": 50_000})), &none())
        .unwrap_err();
    assert_eq!(err.status, Status::ProtocolError);
    assert!(err.message.contains("10000"), "{}", err.message);
    // The message names the option that raises the limit.
    for option in [
        "StdioConfig::max_line_bytes",
        "mcp_client_options_set_max_line_bytes",
    ] {
        assert!(err.message.contains(option), "{}", err.message);
    }
    let ok = client
        .call_tool("echo", Some(json!({"text": "still here"})), &none())
        .unwrap();
    assert_eq!(text(&ok), "still here");
    // Under the limit is fine.
    let big = client
        .call_tool("oversized", Some(json!({"bytes": 5_000})), &none())
        .unwrap();
    assert_eq!(text(&big).len(), 5_000);
}

#[test]
fn server_requests_are_answered_ping_by_us_others_with_method_not_found() {
    let client = connect(&[]);
    let reply = client
        .call_tool("ask_client", Some(json!({"method": "roots/list"})), &none())
        .unwrap();
    let reply: Value = serde_json::from_str(text(&reply)).unwrap();
    assert_eq!(reply["error"]["code"], -32601);
    let reply = client
        .call_tool("ask_client", Some(json!({"method": "ping"})), &none())
        .unwrap();
    let reply: Value = serde_json::from_str(text(&reply)).unwrap();
    assert_eq!(reply["result"], json!({}));
}

#[test]
fn a_partial_line_then_exit_is_a_transport_error() {
    let client = connect(&[]);
    let err = client
        .call_tool("crash", Some(json!({"partial": true})), &none())
        .unwrap_err();
    assert_eq!(err.status, Status::TransportError);
}

#[test]
fn stderr_is_drained_to_a_callback_and_kept_as_a_tail() {
    let lines = Arc::new(AtomicUsize::new(0));
    let mut config = config(&["--stderr-lines", "50000", "--ignore-stdin-eof"]);
    config.stderr = StderrMode::Callback({
        let lines = lines.clone();
        Arc::new(move |_: &str| {
            lines.fetch_add(1, Ordering::Relaxed);
        })
    });
    let client = connect_with(config, ClientOptions::default());
    // A bound against a hang. Under wine every stderr write of the server is a round trip
    // to wineserver: writing the 50000 lines alone takes the server about 9 s there.
    let bound = if cfg!(windows) { 120 } else { 10 };
    let deadline = Instant::now() + Duration::from_secs(bound);
    while lines.load(Ordering::Relaxed) < 50_000 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        lines.load(Ordering::Relaxed),
        50_000,
        "every stderr line was read"
    );
    assert_eq!(
        client.stderr_tail().last().map(String::as_str),
        Some("stderr line 50000")
    );
    client.ping(&none()).unwrap();
}

#[test]
fn a_server_that_exits_quotes_its_stderr_in_the_error() {
    let client = connect(&["--stderr-every-request"]);
    let err = client.call_tool("crash", None, &none()).unwrap_err();
    assert_eq!(err.status, Status::TransportError);
    assert!(
        err.message.contains("request tools/call"),
        "{}",
        err.message
    );
}

#[test]
fn env_and_cwd_reach_the_server() {
    let dir = std::env::temp_dir();
    let log_name = format!("mcpc-env-{}.log", std::process::id());
    let mut config = config(&[]);
    config.env.push(("MCPC_TEST_LOG".into(), log_name.clone()));
    config.cwd = Some(dir.clone());
    let client = connect_with(config, ClientOptions::default());
    client.ping(&none()).unwrap();
    // The log path is relative, so it lands in the cwd we gave.
    let log = dir.join(&log_name);
    assert!(wait_for_log(&log, |l| l.iter().any(|x| is_method(x, "ping"))).len() >= 3);
    let _ = std::fs::remove_file(log);
}

#[test]
fn bad_arguments_and_missing_programs_get_clear_statuses() {
    let client = connect(&[]);
    let err = client
        .call_tool("echo", Some(json!([1, 2])), &none())
        .unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    let err = client
        .request("ping", Some(json!("x")), &none())
        .unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);

    let missing = Client::stdio(
        StdioConfig::new(["/nonexistent/mcp-server"]),
        ClientOptions::default(),
    );
    let err = missing.connect().unwrap_err();
    assert_eq!(err.status, Status::TransportError);
    assert!(
        err.message.contains("/nonexistent/mcp-server"),
        "{}",
        err.message
    );

    let empty = Client::stdio(
        StdioConfig::new(Vec::<String>::new()),
        ClientOptions::default(),
    );
    assert_eq!(empty.connect().unwrap_err().status, Status::InvalidArgument);

    let unconnected = Client::stdio(config(&[]), ClientOptions::default());
    assert_eq!(
        unconnected.tools(&none()).unwrap_err().status,
        Status::NotConnected
    );
}

#[test]
fn the_core_refuses_an_environment_name_the_environment_cannot_hold() {
    for name in ["", "A=B", "NUL\0"] {
        let mut config = common::config(&[]);
        config.env.push((name.to_owned(), "value".to_owned()));
        let client = Client::stdio(config, ClientOptions::default());
        let error = client.connect().expect_err("a bad environment name");
        assert_eq!(error.status, Status::InvalidArgument, "{name:?}: {error}");
        assert!(
            error.message.contains("environment variable name"),
            "{error}"
        );
    }
}
