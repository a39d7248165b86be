//! Both protocol eras: auto negotiation and each of its branches, the modern envelope on every
//! request (never on notifications), the -32022 retry, x-mcp-header filtering and the
//! input_required (SEP-2322) loop. Against our test server over stdio.

mod common;

use common::*;
use mcpc::handlers::{Callbacks, HandlerError, LogHandler, RequestHandler, ServerRequest};
use mcpc::{
    CancellationToken, Client, ClientOptions, ConnectMode, LogLevel, RequestOptions, Status,
};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";

fn none() -> RequestOptions {
    RequestOptions::default()
}

fn options(mode: ConnectMode, version: Option<&str>) -> ClientOptions {
    ClientOptions {
        mode,
        protocol_version: version.map(str::to_owned),
        ..ClientOptions::default()
    }
}

fn logged(log: &std::path::Path, args: &[&str]) -> mcpc::StdioConfig {
    let mut all = vec!["--log", log.to_str().unwrap()];
    all.extend_from_slice(args);
    config(&all)
}

fn methods(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter_map(|l| l.get("method").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

fn has_envelope(line: &Value, version: &str) -> bool {
    let meta = &line["params"]["_meta"];
    meta[VERSION_KEY] == version
        && meta["io.modelcontextprotocol/clientInfo"]["name"] == "mcpc"
        && meta["io.modelcontextprotocol/clientCapabilities"].is_object()
}

#[test]
fn auto_speaks_modern_to_a_modern_server_with_the_envelope_on_every_request_only() {
    let log = log_path("auto-modern");
    let client = connect_with(logged(&log, &["--modern"]), ClientOptions::default());
    assert!(client.is_modern());
    assert_eq!(client.protocol_version().as_deref(), Some("2026-07-28"));
    assert_eq!(
        client.server_implementation().unwrap()["name"],
        "mcpc-test-server"
    );
    assert!(client.server_capabilities().unwrap()["tools"].is_object());
    assert_eq!(
        client.instructions().as_deref(),
        Some("Test server for mcpc.")
    );

    // Every request method, in the modern era.
    let opts = none();
    assert_eq!(
        text(
            &client
                .call_tool("echo", Some(json!({"text": "m"})), &opts)
                .unwrap()
        ),
        "m"
    );
    assert!(!client.tools(&opts).unwrap().is_empty());
    assert_eq!(client.resources(&opts).unwrap().len(), 2);
    assert_eq!(client.resource_templates(&opts).unwrap().len(), 1);
    assert_eq!(client.prompts(&opts).unwrap().len(), 1);
    let read = client.read_resource("test://hello", &opts).unwrap();
    assert_eq!(read["contents"][0]["text"], "Hello, world");
    let page = client.list_resources(None, &opts).unwrap();
    assert_eq!(
        (page["ttlMs"].clone(), page["cacheScope"].clone()),
        (json!(0), json!("private")),
        "cache hints pass through"
    );
    let prompt = client
        .get_prompt("greet", Some(json!({"name": "Ada"})), &opts)
        .unwrap();
    assert_eq!(prompt["messages"][0]["content"]["text"], "Hello, Ada!");
    let done = client
        .complete(
            json!({"type": "ref/prompt", "name": "greet"}),
            json!({"name": "name", "value": "al"}),
            None,
            &opts,
        )
        .unwrap();
    assert_eq!(done["completion"]["values"], json!(["alpha"]));
    assert!(client.discover(&opts).unwrap()["supportedVersions"].is_array());
    let ping = client.ping(&opts).unwrap_err();
    assert_eq!(
        (ping.status, ping.code),
        (Status::ServerError, Some(-32601)),
        "ping is gone in the modern era"
    );

    // A cancel: its notification carries no envelope.
    let token = CancellationToken::new();
    let canceller = {
        let token = token.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            token.cancel(Some("stop"))
        })
    };
    let err = client
        .call_tool(
            "slow",
            Some(json!({"ms": 5000})),
            &RequestOptions::with_cancellation(&token),
        )
        .unwrap_err();
    canceller.join().unwrap();
    assert_eq!(err.status, Status::Cancelled);

    // Caller _meta is kept beside the envelope.
    let mut meta = serde_json::Map::new();
    meta.insert(
        "traceparent".into(),
        json!("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
    );
    let traced = RequestOptions {
        meta: Some(meta),
        ..none()
    };
    client
        .call_tool("echo", Some(json!({"text": "t"})), &traced)
        .unwrap();

    let lines = wait_for_log(&log, |l| {
        !cancels(l).is_empty()
            && l.iter()
                .any(|x| x["params"]["_meta"]["traceparent"].is_string())
    });
    let seen = methods(&lines);
    assert_eq!(seen[0], "server/discover");
    assert!(
        !seen
            .iter()
            .any(|m| m == "initialize" || m == "notifications/initialized"),
        "{seen:?}"
    );
    for line in &lines {
        if line.get("id").is_some() {
            assert!(
                has_envelope(line, "2026-07-28"),
                "request without envelope: {line}"
            );
        } else {
            assert!(
                line["params"].get("_meta").is_none(),
                "notification with envelope: {line}"
            );
        }
    }
    assert_eq!(
        cancels(&lines).len(),
        1,
        "modern stdio still sends notifications/cancelled"
    );
    assert!(lines
        .iter()
        .any(|l| l["params"]["_meta"]["traceparent"].is_string()));
}

#[test]
fn auto_falls_back_to_the_handshake_when_discover_is_refused() {
    let log = log_path("auto-legacy");
    let client = connect_with(logged(&log, &[]), ClientOptions::default());
    assert!(!client.is_modern());
    assert_eq!(client.protocol_version().as_deref(), Some("2025-11-25"));
    client.ping(&none()).unwrap();
    let lines = wait_for_log(&log, |l| methods(l).contains(&"ping".to_owned()));
    assert_eq!(
        methods(&lines)[..4],
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "ping"
        ]
    );
    assert!(
        has_envelope(&lines[0], "2026-07-28"),
        "the probe is stamped"
    );
    assert!(
        lines[3]["params"].get("_meta").is_none(),
        "legacy requests carry no envelope"
    );
}

#[test]
fn every_other_probe_failure_also_falls_back() {
    for discover in ["malformed", "not-object", "error"] {
        let client = connect_with(
            config(&["--modern", "--discover", discover]),
            ClientOptions::default(),
        );
        assert!(!client.is_modern(), "{discover}");
        assert_eq!(
            client.protocol_version().as_deref(),
            Some("2025-11-25"),
            "{discover}"
        );
    }
    // No answer at all: the probe times out, then the handshake.
    let options = ClientOptions {
        discover_timeout: Duration::from_millis(300),
        ..ClientOptions::default()
    };
    let start = Instant::now();
    let client = connect_with(config(&["--modern", "--discover", "silent"]), options);
    assert!(!client.is_modern());
    assert!(start.elapsed() < Duration::from_secs(3));
    // A server that shares no modern version and names only modern ones is an error, not legacy.
    let client = Client::stdio(
        config(&["--modern", "--supported-versions", "2099-01-01"]),
        ClientOptions::default(),
    );
    let err = client.connect().unwrap_err();
    assert_eq!(err.status, Status::ProtocolError);
    assert!(err.message.contains("2099-01-01"), "{}", err.message);
}

#[test]
fn pins_and_modes() {
    // A pinned modern version is never downgraded.
    let client = Client::stdio(config(&[]), options(ConnectMode::Auto, Some("2026-07-28")));
    assert_eq!(client.connect().unwrap_err().status, Status::ServerError);
    // An explicit handshake version pins the handshake: no probe, and that version offered.
    let log = log_path("pin-legacy");
    let client = connect_with(
        logged(&log, &["--modern"]),
        options(ConnectMode::Auto, Some("2025-06-18")),
    );
    assert_eq!(client.protocol_version().as_deref(), Some("2025-06-18"));
    let lines = wait_for_log(&log, |l| !l.is_empty());
    assert_eq!(methods(&lines)[0], "initialize");
    assert_eq!(lines[0]["params"]["protocolVersion"], "2025-06-18");
    // Legacy mode never probes, even on a modern-capable server.
    let log = log_path("mode-legacy");
    let client = connect_with(
        logged(&log, &["--modern"]),
        options(ConnectMode::Legacy, None),
    );
    assert!(!client.is_modern());
    assert_eq!(
        methods(&wait_for_log(&log, |l| !l.is_empty()))[0],
        "initialize"
    );
    // Modern mode on a legacy server fails with the server's answer.
    let client = Client::stdio(config(&[]), options(ConnectMode::Modern, None));
    let err = client.connect().unwrap_err();
    assert_eq!((err.status, err.code), (Status::ServerError, Some(-32601)));
    // Modern mode on a modern-only server.
    let client = connect_with(
        config(&["--modern-only"]),
        options(ConnectMode::Modern, None),
    );
    assert!(client.is_modern());
    // Contradictions are invalid arguments.
    let client = Client::stdio(
        config(&[]),
        options(ConnectMode::Legacy, Some("2026-07-28")),
    );
    assert_eq!(
        client.connect().unwrap_err().status,
        Status::InvalidArgument
    );
    let client = Client::stdio(
        config(&[]),
        options(ConnectMode::Modern, Some("2025-11-25")),
    );
    assert_eq!(
        client.connect().unwrap_err().status,
        Status::InvalidArgument
    );
    let client = Client::stdio(config(&[]), options(ConnectMode::Auto, Some("1999-01-01")));
    assert_eq!(
        client.connect().unwrap_err().status,
        Status::InvalidArgument
    );
}

#[test]
fn unsupported_version_during_discover_is_retried_once() {
    let log = log_path("reject-first");
    let client = connect_with(
        logged(&log, &["--modern", "--reject-first", "1"]),
        ClientOptions::default(),
    );
    assert!(client.is_modern());
    let lines = wait_for_log(&log, |l| l.len() >= 2);
    assert_eq!(methods(&lines)[..2], ["server/discover", "server/discover"]);
    assert_ne!(lines[0]["id"], lines[1]["id"], "the retry is a new request");
}

#[test]
fn invalid_x_mcp_header_tools_are_dropped_in_the_modern_era_only() {
    let warnings = Arc::new(Mutex::new(Vec::<String>::new()));
    let on_log: LogHandler = {
        let warnings = warnings.clone();
        Arc::new(move |level: LogLevel, message: &str| {
            if level == LogLevel::Warning {
                warnings.lock().unwrap().push(message.to_owned());
            }
        })
    };
    let modern = connect_with(
        config(&["--modern"]),
        ClientOptions {
            callbacks: Callbacks {
                on_log: Some(on_log),
                ..Callbacks::default()
            },
            ..ClientOptions::default()
        },
    );
    let names = |tools: Vec<Value>| -> Vec<String> {
        tools
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let listed = names(modern.tools(&none()).unwrap());
    assert!(
        listed.contains(&"header_ok".to_owned()) && !listed.contains(&"header_bad".to_owned()),
        "{listed:?}"
    );
    let page = modern.list_tools(None, &none()).unwrap();
    assert!(!names(page["tools"].as_array().unwrap().clone()).contains(&"header_bad".to_owned()));
    let warnings = warnings.lock().unwrap().clone();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("header_bad") && w.contains("number")),
        "{warnings:?}"
    );

    let legacy = connect_with(config(&["--modern"]), options(ConnectMode::Legacy, None));
    let listed = names(legacy.tools(&none()).unwrap());
    assert!(
        listed.contains(&"header_bad".to_owned()),
        "legacy keeps every tool"
    );
}

fn handlers(record: Arc<Mutex<Vec<(String, Value)>>>) -> HashMap<String, RequestHandler> {
    let mut map: HashMap<String, RequestHandler> = HashMap::new();
    for method in ["elicitation/create", "roots/list"] {
        let record = record.clone();
        map.insert(
            method.to_owned(),
            Arc::new(move |request: &ServerRequest| {
                record
                    .lock()
                    .unwrap()
                    .push((request.method.to_owned(), request.params.clone()));
                Ok(match request.method {
                    "roots/list" => json!({"roots": [{"uri": "file:///work"}]}),
                    _ => json!({"action": "accept", "content": {"ok": true}}),
                })
            }),
        );
    }
    map
}

fn with_handlers(request_handlers: HashMap<String, RequestHandler>) -> Callbacks {
    Callbacks {
        request_handlers,
        ..Callbacks::default()
    }
}

#[test]
fn input_required_is_answered_by_handlers_and_retried_with_a_fresh_id() {
    for era in [vec!["--modern"], vec![]] {
        let log = log_path(&format!("mrtr{}", era.len()));
        let record = Arc::new(Mutex::new(Vec::new()));
        let options = ClientOptions {
            callbacks: with_handlers(handlers(record.clone())),
            ..ClientOptions::default()
        };
        let client = connect_with(logged(&log, &era), options);
        let result = client
            .call_tool("confirm", Some(json!({"question": "sure?"})), &none())
            .unwrap();
        assert_eq!(
            text(&result),
            r#"confirmed: {"action":"accept","content":{"ok":true}}"#
        );
        assert_eq!(record.lock().unwrap()[0].1["message"], "sure?");

        let lines = read_log(&log);
        let calls: Vec<&Value> = lines
            .iter()
            .filter(|l| is_method(l, "tools/call"))
            .collect();
        assert_eq!(calls.len(), 2);
        assert_ne!(calls[0]["id"], calls[1]["id"]);
        assert!(
            calls[0]["params"].get("inputResponses").is_none()
                && calls[0]["params"].get("requestState").is_none()
        );
        assert_eq!(calls[1]["params"]["requestState"], "state-1");
        assert_eq!(
            calls[1]["params"]["arguments"],
            json!({"question": "sure?"}),
            "the original params are sent again"
        );

        let result = client.call_tool("two_rounds", None, &none()).unwrap();
        assert!(text(&result).starts_with("done: "), "{result}");
        let prompt = client.get_prompt("confirm_prompt", None, &none()).unwrap();
        assert_eq!(prompt["messages"][0]["content"]["text"], "confirmed");
        let read = client.read_resource("test://confirm", &none()).unwrap();
        assert_eq!(read["contents"][0]["text"], "confirmed");
        let legs = client
            .call_tool("state_only", Some(json!({"legs": 3})), &none())
            .unwrap();
        assert_eq!(text(&legs), "legs done");
    }
}

#[test]
fn input_required_without_a_handler_can_be_continued_by_hand() {
    let client = connect(&["--modern"]);
    let err = client.call_tool("confirm", None, &none()).unwrap_err();
    assert_eq!(err.status, Status::InputRequired);
    let interim = err.data.unwrap();
    assert_eq!(
        interim["inputRequests"]["confirm"]["method"],
        "elicitation/create"
    );
    let state = interim["requestState"].as_str().unwrap().to_owned();
    let manual = RequestOptions {
        input_responses: Some(json!({"confirm": {"action": "decline"}})),
        request_state: Some(state),
        ..none()
    };
    let result = client.call_tool("confirm", None, &manual).unwrap();
    assert_eq!(text(&result), r#"confirmed: {"action":"decline"}"#);
    // The manual fields belong to that call only: the next call starts afresh.
    assert_eq!(
        client
            .call_tool("confirm", None, &none())
            .unwrap_err()
            .status,
        Status::InputRequired
    );
}

#[test]
fn input_rounds_are_capped_and_handler_failures_are_reported() {
    let record = Arc::new(Mutex::new(Vec::new()));
    let options = ClientOptions {
        callbacks: with_handlers(handlers(record.clone())),
        input_required_max_rounds: 3,
        ..ClientOptions::default()
    };
    let client = connect_with(config(&["--modern"]), options);
    let err = client.call_tool("always_input", None, &none()).unwrap_err();
    assert_eq!(err.status, Status::InputRequired);
    assert!(err.message.contains("3 rounds"), "{}", err.message);
    assert_eq!(record.lock().unwrap().len(), 3);

    let mut failing: HashMap<String, RequestHandler> = HashMap::new();
    failing.insert(
        "elicitation/create".into(),
        Arc::new(|_: &ServerRequest| {
            Err(HandlerError {
                code: -1,
                message: "user said no".into(),
            })
        }),
    );
    let client = connect_with(
        config(&["--modern"]),
        ClientOptions {
            callbacks: with_handlers(failing),
            ..ClientOptions::default()
        },
    );
    let err = client.call_tool("confirm", None, &none()).unwrap_err();
    assert_eq!(err.status, Status::InputRequired);
    assert!(err.message.contains("user said no"), "{}", err.message);
    // A method nobody handles.
    let err = client.call_tool("two_rounds", None, &none()).unwrap_err();
    assert!(err.message.contains("roots/list"), "{}", err.message);
}

/// A fake modern server that rejects the first tools/call with -32022.
struct RejectingOnce {
    seen: Arc<Mutex<Vec<Value>>>,
}

impl mcpc::BlockingTransport for RejectingOnce {
    fn round_trip(&self, request: &str, on_sent: &mut dyn FnMut()) -> mcpc::Result<String> {
        on_sent();
        let request: Value = serde_json::from_str(request).unwrap();
        let mut seen = self.seen.lock().unwrap();
        seen.push(request.clone());
        let id = request["id"].clone();
        let reply = match request["method"].as_str().unwrap() {
            "server/discover" => {
                json!({"id": id, "result": {"supportedVersions": ["2026-07-28"], "capabilities": {}}})
            }
            "tools/call" if seen.iter().filter(|r| r["method"] == "tools/call").count() == 1 => {
                json!({"id": id, "error": {
                "code": -32022, "message": "Unsupported protocol version",
                "data": {"supported": ["2026-07-28", "2025-11-25"], "requested": "2026-07-28"}}})
            }
            _ => json!({"id": id, "result": {"content": [{"type": "text", "text": "ok"}]}}),
        };
        Ok(reply.to_string())
    }
    fn notify(&self, _: &str) -> mcpc::Result<()> {
        Ok(())
    }
    fn close(&self) {}
}

#[test]
fn unsupported_version_on_a_request_is_retried_once_with_a_shared_version() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let client = Client::custom(
        RejectingOnce { seen: seen.clone() },
        ClientOptions::default(),
    );
    client.connect().unwrap();
    assert!(client.is_modern());
    let result = client.call_tool("t", None, &none()).unwrap();
    assert_eq!(text(&result), "ok");
    let seen = seen.lock().unwrap();
    let calls: Vec<&Value> = seen
        .iter()
        .filter(|r| r["method"] == "tools/call")
        .collect();
    assert_eq!(calls.len(), 2);
    assert_ne!(calls[0]["id"], calls[1]["id"]);
    assert!(has_envelope(calls[1], "2026-07-28"));
}

#[test]
fn a_modern_server_slower_than_the_probe_is_still_spoken_to_in_the_modern_era() {
    // The probe gives up before the server reads anything; the server then refuses the
    // fallback `initialize` naming its modern version, so the client discovers again.
    let log = log_path("slow-modern");
    let options = ClientOptions {
        discover_timeout: Duration::from_millis(100),
        ..ClientOptions::default()
    };
    let client = connect_with(
        logged(&log, &["--modern-only", "--slow-start-ms", "500"]),
        options,
    );
    assert!(client.is_modern());
    assert_eq!(client.protocol_version().as_deref(), Some("2026-07-28"));
    let lines = wait_for_log(&log, |l| l.len() >= 3);
    assert_eq!(
        methods(&lines)[..3],
        ["server/discover", "initialize", "server/discover"]
    );
}

/// A blocking call waiting between load-shedding legs (a pause of up to 250 ms) is woken by its
/// cancel at once, like a call blocked on the wire, and sends no further leg.
#[test]
fn a_cancel_between_input_rounds_wakes_the_blocked_caller_and_ends_the_legs() {
    let log = log_path("eras-cancel-between-legs");
    let client = Arc::new(connect_logged(&log, &["--modern"]));
    let token = CancellationToken::new();
    let caller = {
        let (client, opts) = (client.clone(), RequestOptions::with_cancellation(&token));
        std::thread::spawn(move || {
            let result = client.call_tool("state_only", Some(json!({"legs": 1000})), &opts);
            (result, Instant::now())
        })
    };
    // Five legs in, the pauses between legs have grown to their longest (250 ms).
    let is_leg = |l: &Value| is_method(l, "tools/call");
    wait_for_log(&log, |lines| {
        lines.iter().filter(|l| is_leg(l)).count() >= 5
    });
    std::thread::sleep(Duration::from_millis(20)); // inside the pause after the fifth leg
    let legs_at_cancel = read_log(&log).iter().filter(|l| is_leg(l)).count();
    let cancelled_at = Instant::now();
    assert!(token.cancel(Some("enough")));
    let (result, returned_at) = caller.join().unwrap();
    assert_eq!(result.unwrap_err().status, Status::Cancelled);
    let took = returned_at.saturating_duration_since(cancelled_at);
    // A wide margin against hangs; the figure is reported (before, the pause polled every 5 ms).
    assert!(
        took < Duration::from_secs(2),
        "returned {took:?} after the cancel"
    );
    report_figure(&format!(
        "eras: a blocking call paused between input rounds returned {took:?} after its cancel"
    ));
    std::thread::sleep(Duration::from_millis(300)); // longer than any pause
    let legs_after = read_log(&log).iter().filter(|l| is_leg(l)).count();
    assert!(
        legs_after <= legs_at_cancel + 1,
        "legs went on after the cancel: {legs_at_cancel} then {legs_after}"
    );
}
