//! Interop over stdio with MCP servers nobody here wrote: Python `mcp` 2.3.0 (both eras) and
//! `@modelcontextprotocol/server-everything` (handshake era only). Installed by
//! scripts/install-peers.sh.

mod common;

use common::*;
use mcpc::{
    CancellationToken, Client, ClientOptions, ConnectMode, RequestOptions, Status, StderrMode,
    StdioConfig,
};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn none() -> RequestOptions {
    RequestOptions::default()
}

/// A connected client whose server's stderr lines are collected.
fn connect_collecting(argv: Vec<String>, mode: ConnectMode) -> (Client, Arc<Mutex<Vec<String>>>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let mut config = StdioConfig::new(argv);
    config.stderr = StderrMode::Callback({
        let lines = lines.clone();
        Arc::new(move |line: &str| lines.lock().unwrap().push(line.to_owned()))
    });
    let client = Client::stdio(
        config,
        ClientOptions {
            mode,
            ..ClientOptions::default()
        },
    );
    client.connect().expect("connect to the peer");
    (client, lines)
}

fn wait_for_line(lines: &Mutex<Vec<String>>, needle: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if lines.lock().unwrap().iter().any(|l| l.contains(needle)) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Cancels a slow call after `after` and returns the call's error.
fn cancel_slow(client: &Client, tool: &str, args: Value, after: Duration) -> mcpc::Error {
    let token = CancellationToken::new();
    let canceller = {
        let token = token.clone();
        std::thread::spawn(move || {
            std::thread::sleep(after);
            token.cancel(Some("interop cancel"))
        })
    };
    let start = Instant::now();
    let err = client
        .call_tool(tool, Some(args), &RequestOptions::with_cancellation(&token))
        .unwrap_err();
    assert!(
        start.elapsed() < after + Duration::from_secs(2),
        "the caller was woken at once"
    );
    assert!(canceller.join().unwrap());
    err
}

#[test]
fn python_server_in_both_eras_with_a_cancel_it_observes() {
    let Some(peers) = peers_dir() else { return };
    for (mode, version) in [
        (ConnectMode::Auto, "2026-07-28"),
        (ConnectMode::Legacy, "2025-11-25"),
    ] {
        let (client, stderr) = connect_collecting(python_server(&peers), mode);
        assert_eq!(
            client.protocol_version().as_deref(),
            Some(version),
            "{mode:?}"
        );
        assert_eq!(client.is_modern(), version == "2026-07-28");
        assert_eq!(
            client.server_implementation().unwrap()["name"],
            "python-peer"
        );

        let sum = client
            .call_tool("add", Some(json!({"a": 2, "b": 40})), &none())
            .unwrap();
        assert_eq!(sum["content"][0]["text"], "42", "{mode:?}: {sum}");
        let tools: Vec<String> = client
            .tools(&none())
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect();
        assert!(
            tools.contains(&"slow".to_owned()) && tools.contains(&"add".to_owned()),
            "{tools:?}"
        );
        let read = client.read_resource("peer://greeting", &none()).unwrap();
        assert_eq!(read["contents"][0]["text"], "hello from python");
        let prompt = client
            .get_prompt("greet", Some(json!({"name": "Ada"})), &none())
            .unwrap();
        assert!(prompt["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("Ada"));

        let err = cancel_slow(
            &client,
            "slow",
            json!({"seconds": 10}),
            Duration::from_millis(700),
        );
        assert_eq!(err.status, Status::Cancelled);
        let id = err.request_id.unwrap();
        assert!(
            wait_for_line(&stderr, &format!("slow cancelled request={id}")),
            "{mode:?}: the server did not see the cancel: {:?}",
            stderr.lock().unwrap()
        );
        // The connection goes on working after the cancel.
        assert_eq!(
            client
                .call_tool("add", Some(json!({"a": 1, "b": 1})), &none())
                .unwrap()["content"][0]["text"],
            "2"
        );
        if client.is_modern() {
            let ping = client.ping(&none()).unwrap_err();
            assert_eq!(
                (ping.status, ping.code),
                (Status::ServerError, Some(-32601))
            );
        } else {
            client.ping(&none()).unwrap();
        }
    }
}

#[test]
fn server_everything_falls_back_to_the_handshake_and_serves_every_method() {
    let Some(peers) = peers_dir() else { return };
    let (client, _) = connect_collecting(everything_server(&peers), ConnectMode::Auto);
    assert!(!client.is_modern());
    assert_eq!(client.protocol_version().as_deref(), Some("2025-11-25"));

    client.ping(&none()).unwrap();
    let tools = client.tools(&none()).unwrap();
    assert!(tools.iter().any(|t| t["name"] == "echo"), "{tools:?}");
    let page = client.list_tools(None, &none()).unwrap();
    assert!(!page["tools"].as_array().unwrap().is_empty());
    let echo = client
        .call_tool("echo", Some(json!({"message": "hi"})), &none())
        .unwrap();
    assert!(
        echo["content"][0]["text"].as_str().unwrap().contains("hi"),
        "{echo}"
    );
    let sum = client
        .call_tool("get-sum", Some(json!({"a": 2, "b": 3})), &none())
        .unwrap();
    assert!(
        sum["content"][0]["text"].as_str().unwrap().contains('5'),
        "{sum}"
    );

    let resources = client.resources(&none()).unwrap();
    assert!(!resources.is_empty());
    let uri = resources[0]["uri"].as_str().unwrap();
    let read = client.read_resource(uri, &none()).unwrap();
    assert_eq!(read["contents"][0]["uri"], uri);
    assert!(!client.list_resources(None, &none()).unwrap()["resources"]
        .as_array()
        .unwrap()
        .is_empty());
    assert!(!client.resource_templates(&none()).unwrap().is_empty());
    assert!(
        !client.list_resource_templates(None, &none()).unwrap()["resourceTemplates"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    let prompts = client.prompts(&none()).unwrap();
    assert!(
        prompts.iter().any(|p| p["name"] == "args-prompt"),
        "{prompts:?}"
    );
    assert!(!client.list_prompts(None, &none()).unwrap()["prompts"]
        .as_array()
        .unwrap()
        .is_empty());
    let prompt = client
        .get_prompt(
            "args-prompt",
            Some(json!({"city": "Paris", "state": "Texas"})),
            &none(),
        )
        .unwrap();
    assert!(prompt["messages"].to_string().contains("Paris"), "{prompt}");
    let done = client
        .complete(
            json!({"type": "ref/prompt", "name": "completable-prompt"}),
            json!({"name": "department", "value": "E"}),
            None,
            &none(),
        )
        .unwrap();
    assert_eq!(done["completion"]["values"][0], "Engineering");

    // A cancel: the server suppresses the response; our caller is woken at once.
    let err = cancel_slow(
        &client,
        "trigger-long-running-operation",
        json!({"duration": 5, "steps": 5}),
        Duration::from_millis(500),
    );
    assert_eq!(err.status, Status::Cancelled);
    client.ping(&none()).unwrap();
}

/// server-everything's `simulate-research-query` is a 2025-11-25 experimental task
/// (`taskSupport: required`): with tasks allowed and the tools listed, the call runs as a task,
/// the question it asks on an ambiguous topic reaches the elicitation handler (through
/// `tasks/result`), and the call returns the report; a cancelled call returns at once, and the
/// server's own record of the task then says cancelled (its `tasks/cancel` arrived).
#[test]
fn server_everything_runs_a_2025_11_25_task_and_hears_its_cancel() {
    let Some(peers) = peers_dir() else { return };
    let asked = Arc::new(Mutex::new(Vec::new()));
    let mut options = ClientOptions {
        mode: ConnectMode::Legacy,
        tasks: true,
        ..ClientOptions::default()
    };
    let handler_asked = asked.clone();
    options.callbacks.request_handlers.insert(
        "elicitation/create".into(),
        Arc::new(move |request: &mcpc::handlers::ServerRequest| {
            handler_asked.lock().unwrap().push(request.params.clone());
            Ok(json!({ "action": "accept", "content": { "interpretation": "programming" } }))
        }),
    );
    let client = Client::stdio(StdioConfig::new(everything_server(&peers)), options);
    client.connect().expect("connect to server-everything");
    let tools = client.tools(&none()).unwrap();
    let research = tools
        .iter()
        .find(|t| t["name"] == "simulate-research-query")
        .expect("server-everything offers simulate-research-query");
    assert_eq!(research["execution"]["taskSupport"], "required");

    let args = json!({ "topic": "python", "ambiguous": true });
    let report = client
        .call_tool("simulate-research-query", Some(args), &none())
        .expect("the task's result");
    let text = report["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("Research Report: python (programming)"),
        "{report}"
    );
    assert_eq!(
        asked.lock().unwrap().len(),
        1,
        "one question, answered once"
    );

    let token = CancellationToken::new();
    let (created_tx, created) = crossbeam_channel::bounded::<()>(1);
    let opts = RequestOptions {
        cancellation: Some(token.clone()),
        on_progress: Some(Arc::new(move |_: &mcpc::handlers::Progress| {
            let _ = created_tx.try_send(());
        })),
        ..none()
    };
    let canceller = std::thread::spawn(move || {
        created.recv_timeout(Duration::from_secs(10)).unwrap();
        token.cancel(Some("interop cancel"));
        Instant::now()
    });
    let args = json!({ "topic": "rust" });
    let err = client
        .call_tool("simulate-research-query", Some(args), &opts)
        .unwrap_err();
    let returned = Instant::now();
    assert_eq!(err.status, Status::Cancelled, "{err:?}");
    assert!(returned.duration_since(canceller.join().unwrap()) < Duration::from_secs(2));
    let task_id = err.data.as_ref().unwrap()["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        let task = client.get_task(&task_id, &none()).unwrap();
        if task["status"] == "cancelled" || Instant::now() > deadline {
            break task["status"].clone();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        status, "cancelled",
        "the server's task after our tasks/cancel"
    );
}
