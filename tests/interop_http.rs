//! Interop over Streamable HTTP with MCP servers nobody here wrote: Python `mcp` 2.3.0 (both
//! eras; it observes cancels and says so on stderr) and `@modelcontextprotocol/server-everything`
//! (handshake era only). Installed by scripts/install-peers.sh.

mod common;

use common::http_peer::HttpPeer;
use common::*;
use mcpc::handlers::{Callbacks, Progress};
use mcpc::{
    CancellationToken, Client, ClientOptions, ConnectMode, HttpConfig, RequestOptions, Status,
};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn none() -> RequestOptions {
    RequestOptions::default()
}

/// A connected client that records the progress it hears.
fn connect(peer: &mut HttpPeer, mode: ConnectMode) -> (Client, Arc<Mutex<Vec<Progress>>>) {
    let heard = Arc::new(Mutex::new(Vec::new()));
    let options = ClientOptions {
        mode,
        callbacks: Callbacks {
            on_progress: Some({
                let heard = heard.clone();
                Arc::new(move |p: &Progress| heard.lock().unwrap().push(p.clone()))
            }),
            ..Callbacks::default()
        },
        ..ClientOptions::default()
    };
    let client = Client::http(HttpConfig::new(&peer.url), options);
    if let Err(error) = client.connect() {
        panic!(
            "connect to the peer over HTTP: {error:?}; the server is {}; its stderr: {:?}",
            if peer.running() { "running" } else { "gone" },
            peer.stderr.lock().unwrap()
        );
    }
    (client, heard)
}

/// Cancels a call after `after`; returns its error and the instant of the cancel. The caller
/// must be back at once.
fn cancel_after(
    client: &Arc<Client>,
    tool: &'static str,
    args: Value,
    after: Duration,
) -> (mcpc::Error, Instant) {
    let token = CancellationToken::new();
    let caller = {
        let (client, opts) = (client.clone(), RequestOptions::with_cancellation(&token));
        std::thread::spawn(move || {
            let result = client.call_tool(tool, Some(args), &opts);
            (result, Instant::now())
        })
    };
    std::thread::sleep(after);
    let cancelled_at = Instant::now();
    assert!(token.cancel(Some("interop cancel")));
    let (result, returned_at) = caller.join().unwrap();
    let took = returned_at.saturating_duration_since(cancelled_at);
    assert!(
        took < Duration::from_millis(200),
        "the caller took {took:?} to return"
    );
    (result.unwrap_err(), cancelled_at)
}

#[test]
fn python_server_over_http_in_both_eras_observes_the_cancel() {
    let Some(peers) = peers_dir() else { return };
    let mut peer = HttpPeer::python(&peers).unwrap();
    for (mode, version) in [
        (ConnectMode::Auto, "2026-07-28"),
        (ConnectMode::Legacy, "2025-11-25"),
    ] {
        let (client, progress) = connect(&mut peer, mode);
        assert_eq!(client.protocol_version().as_deref(), Some(version));
        assert_eq!(client.is_modern(), version == "2026-07-28");

        let sum = client
            .call_tool("add", Some(json!({"a": 2, "b": 40})), &none())
            .unwrap();
        assert_eq!(sum["content"][0]["text"], "42", "{mode:?}: {sum}");
        let tools = client.tools(&none()).unwrap();
        assert!(tools.iter().any(|t| t["name"] == "slow"), "{tools:?}");
        let read = client.read_resource("peer://greeting", &none()).unwrap();
        assert_eq!(read["contents"][0]["text"], "hello from python");
        let prompt = client
            .get_prompt("greet", Some(json!({"name": "Ada"})), &none())
            .unwrap();
        assert!(prompt["messages"].to_string().contains("Ada"));

        // Progress arrives on the call's SSE stream.
        let opts = RequestOptions {
            progress_token: Some(json!(format!("p-{version}"))),
            ..none()
        };
        client
            .call_tool("slow", Some(json!({"seconds": 0.2})), &opts)
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(2);
        while progress.lock().unwrap().len() < 10 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(progress.lock().unwrap().len(), 10, "{mode:?}");

        let client = Arc::new(client);
        // Request ids start again with each client: only this cancel's line may count.
        peer.stderr.lock().unwrap().clear();
        let (error, cancelled_at) = cancel_after(
            &client,
            "slow",
            json!({"seconds": 10}),
            Duration::from_millis(700),
        );
        assert_eq!(error.status, Status::Cancelled);
        let id = error.request_id.unwrap();
        assert!(
            peer.said(
                &format!("slow cancelled request={id}"),
                Duration::from_secs(1)
            ),
            "{mode:?}: the server did not see the cancel within a second: {:?}",
            peer.stderr.lock().unwrap()
        );
        assert!(cancelled_at.elapsed() < Duration::from_secs(2));
        // The connection goes on working.
        let sum = client
            .call_tool("add", Some(json!({"a": 1, "b": 1})), &none())
            .unwrap();
        assert_eq!(sum["content"][0]["text"], "2");
        client.close();
    }
}

#[test]
fn server_everything_over_http_serves_every_method_and_its_session_errors_stay_whole() {
    let Some(peers) = peers_dir() else { return };
    let mut peer = HttpPeer::everything(&peers).unwrap();
    let (client, progress) = connect(&mut peer, ConnectMode::Auto);
    assert!(!client.is_modern());
    assert_eq!(client.protocol_version().as_deref(), Some("2025-11-25"));

    client.ping(&none()).unwrap();
    let tools = client.tools(&none()).unwrap();
    assert!(tools.iter().any(|t| t["name"] == "echo"), "{tools:?}");
    assert!(!client.list_tools(None, &none()).unwrap()["tools"]
        .as_array()
        .unwrap()
        .is_empty());
    let echo = client
        .call_tool("echo", Some(json!({"message": "hi"})), &none())
        .unwrap();
    assert!(echo["content"][0]["text"].as_str().unwrap().contains("hi"));
    let sum = client
        .call_tool("get-sum", Some(json!({"a": 2, "b": 3})), &none())
        .unwrap();
    assert!(sum["content"][0]["text"].as_str().unwrap().contains('5'));

    let resources = client.resources(&none()).unwrap();
    let uri = resources[0]["uri"].as_str().unwrap();
    assert_eq!(
        client.read_resource(uri, &none()).unwrap()["contents"][0]["uri"],
        uri
    );
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
    assert!(prompts.iter().any(|p| p["name"] == "args-prompt"));
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
    assert!(prompt["messages"].to_string().contains("Paris"));
    let done = client
        .complete(
            json!({"type": "ref/prompt", "name": "completable-prompt"}),
            json!({"name": "department", "value": "E"}),
            None,
            &none(),
        )
        .unwrap();
    assert_eq!(done["completion"]["values"][0], "Engineering");

    // Progress on the call's stream.
    let opts = RequestOptions {
        progress_token: Some(json!("everything-progress")),
        ..none()
    };
    client
        .call_tool(
            "trigger-long-running-operation",
            Some(json!({"duration": 0.3, "steps": 3})),
            &opts,
        )
        .unwrap();
    // Callbacks run on their own thread: give the last one a moment.
    let deadline = Instant::now() + Duration::from_secs(2);
    while progress.lock().unwrap().len() < 3 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(progress.lock().unwrap().len(), 3);

    // A cancel: the caller is back at once, and the client goes on working.
    let client = Arc::new(client);
    let (error, _) = cancel_after(
        &client,
        "trigger-long-running-operation",
        json!({"duration": 5, "steps": 5}),
        Duration::from_millis(500),
    );
    assert_eq!(error.status, Status::Cancelled);
    client.ping(&none()).unwrap();

    // A server that forgot our session (restarted on the same port) answers 400 with a
    // JSON-RPC error, which comes back whole.
    let port = peer.port;
    drop(peer);
    let _restarted = HttpPeer::everything_on(&peers, port).unwrap();
    let error = client.ping(&none()).unwrap_err();
    assert_eq!(
        (error.status, error.code),
        (Status::ServerError, Some(-32000)),
        "{error}"
    );
    assert!(error.message.contains("session"), "{error}");
}
