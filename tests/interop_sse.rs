//! Interop over the 2024-11-05 HTTP+SSE transport with servers nobody here wrote: Python `mcp`
//! 2.3.0's SSE server and server-everything's `sse` mode (installed by
//! scripts/install-peers.sh). The client is given only the URL of the event stream: it finds
//! out by itself that the server speaks the old transport (its `initialize` POST is refused).

mod common;

use common::http_peer::HttpPeer;
use common::*;
use mcpc::handlers::{Callbacks, Progress, TraceDirection, TraceFrame};
use mcpc::{
    CancellationToken, Client, ClientOptions, ConnectMode, HttpConfig, HttpTransportKind,
    RequestOptions, Status,
};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn none() -> RequestOptions {
    RequestOptions::default()
}

/// What a client heard: progress, and every frame that came in (the wire trace).
#[derive(Default)]
struct Heard {
    progress: Mutex<Vec<Progress>>,
    frames: Mutex<Vec<Value>>,
}

impl Heard {
    /// Whether a response for request `id` arrived.
    fn answered(&self, id: i64) -> bool {
        self.frames.lock().unwrap().iter().any(|f| {
            f["id"] == json!(id) && (f.get("result").is_some() || f.get("error").is_some())
        })
    }
}

fn options(heard: &Arc<Heard>) -> ClientOptions {
    let (progress, trace) = (heard.clone(), heard.clone());
    let mut options = ClientOptions {
        mode: ConnectMode::Auto,
        callbacks: Callbacks {
            on_progress: Some(Arc::new(move |p: &Progress| {
                progress.progress.lock().unwrap().push(p.clone())
            })),
            on_trace: Some(Arc::new(move |frame: &TraceFrame| {
                if frame.direction == TraceDirection::In {
                    let value = serde_json::from_str(frame.json).unwrap_or(Value::Null);
                    trace.frames.lock().unwrap().push(value);
                }
            })),
            ..Callbacks::default()
        },
        ..ClientOptions::default()
    };
    // A server request (roots/list) is answered through the endpoint.
    options.callbacks.request_handlers.insert(
        "roots/list".into(),
        Arc::new(|_: &mcpc::handlers::ServerRequest| {
            Ok(json!({"roots": [{"uri": "file:///sse-root", "name": "sse root"}]}))
        }),
    );
    options
}

fn connect(peer: &mut HttpPeer, heard: &Arc<Heard>) -> Client {
    let client = Client::http(HttpConfig::new(&peer.url), options(heard));
    if let Err(error) = client.connect() {
        panic!(
            "connect to the peer over HTTP+SSE: {error:?}; the server is {}; its stderr: {:?}",
            if peer.running() { "running" } else { "gone" },
            peer.stderr.lock().unwrap()
        );
    }
    client
}

fn wait_for(limit: Duration, what: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while !what() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// Cancels a call after `after`; returns its error. The caller must be back at once.
fn cancel_after(
    client: &Arc<Client>,
    tool: &'static str,
    args: Value,
    after: Duration,
) -> mcpc::Error {
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
    result.unwrap_err()
}

#[test]
fn python_sse_server_serves_every_method_and_observes_the_cancel() {
    let Some(peers) = peers_dir() else { return };
    let mut peer = HttpPeer::python_sse(&peers).unwrap();
    let heard = Arc::new(Heard::default());
    let client = connect(&mut peer, &heard);
    assert!(!client.is_modern());
    assert_eq!(client.protocol_version().as_deref(), Some("2025-11-25"));

    client.ping(&none()).unwrap();
    let tools = client.tools(&none()).unwrap();
    assert!(tools.iter().any(|t| t["name"] == "slow"), "{tools:?}");
    let sum = client
        .call_tool("add", Some(json!({"a": 2, "b": 40})), &none())
        .unwrap();
    assert_eq!(sum["content"][0]["text"], "42", "{sum}");
    let read = client.read_resource("peer://greeting", &none()).unwrap();
    assert_eq!(read["contents"][0]["text"], "hello from python");
    assert!(!client.resources(&none()).unwrap().is_empty());
    assert!(!client.resource_templates(&none()).unwrap().is_empty());
    let prompts = client.prompts(&none()).unwrap();
    assert!(prompts.iter().any(|p| p["name"] == "greet"), "{prompts:?}");
    let prompt = client
        .get_prompt("greet", Some(json!({"name": "Ada"})), &none())
        .unwrap();
    assert!(prompt["messages"].to_string().contains("Ada"));
    let done = client
        .complete(
            json!({"type": "ref/prompt", "name": "greet"}),
            json!({"name": "name", "value": "A"}),
            None,
            &none(),
        )
        .unwrap();
    assert_eq!(done["completion"]["values"], json!(["Ada", "Alan"]));

    // The handshake era's notifications come on the stream.
    client
        .call_tool(
            "touch",
            Some(json!({"uri": "peer://greeting", "legacy": true})),
            &none(),
        )
        .unwrap();

    // Progress comes on the stream too.
    let opts = RequestOptions {
        progress_token: Some(json!("sse-progress")),
        ..none()
    };
    client
        .call_tool("slow", Some(json!({"seconds": 0.2})), &opts)
        .unwrap();
    assert!(
        wait_for(Duration::from_secs(2), || heard
            .progress
            .lock()
            .unwrap()
            .len()
            == 10),
        "{:?}",
        heard.progress.lock().unwrap()
    );

    // A cancel: POSTed to the endpoint, the server sees it, the caller is back at once.
    let client = Arc::new(client);
    peer.stderr.lock().unwrap().clear();
    let error = cancel_after(
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
            Duration::from_secs(2)
        ),
        "the server did not see the cancel: {:?}",
        peer.stderr.lock().unwrap()
    );

    // A timeout is a cancel too.
    let opts = RequestOptions {
        timeout: Some(Duration::from_millis(500)),
        ..none()
    };
    let error = client
        .call_tool("slow", Some(json!({"seconds": 10})), &opts)
        .unwrap_err();
    assert_eq!(error.status, Status::Timeout, "{error}");
    let id = error.request_id.unwrap();
    assert!(peer.said(
        &format!("slow cancelled request={id}"),
        Duration::from_secs(2)
    ));

    let sum = client
        .call_tool("add", Some(json!({"a": 1, "b": 1})), &none())
        .unwrap();
    assert_eq!(sum["content"][0]["text"], "2");
    client.close();
}

#[test]
fn server_everything_sse_serves_every_method_and_drops_the_cancelled_answer() {
    let Some(peers) = peers_dir() else { return };
    let mut peer = HttpPeer::everything_sse(&peers).unwrap();
    let heard = Arc::new(Heard::default());
    let client = connect(&mut peer, &heard);
    assert!(!client.is_modern());
    assert_eq!(client.protocol_version().as_deref(), Some("2025-11-25"));

    client.ping(&none()).unwrap();
    let tools = client.tools(&none()).unwrap();
    assert!(tools.iter().any(|t| t["name"] == "echo"), "{tools:?}");
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
    assert!(!client.resource_templates(&none()).unwrap().is_empty());
    client.subscribe_resource(uri, &none()).unwrap();
    client.unsubscribe_resource(uri, &none()).unwrap();
    let prompt = client
        .get_prompt(
            "args-prompt",
            Some(json!({"city": "Paris", "state": "Texas"})),
            &none(),
        )
        .unwrap();
    assert!(prompt["messages"].to_string().contains("Paris"));
    assert!(!client.prompts(&none()).unwrap().is_empty());
    let done = client
        .complete(
            json!({"type": "ref/prompt", "name": "completable-prompt"}),
            json!({"name": "department", "value": "E"}),
            None,
            &none(),
        )
        .unwrap();
    assert_eq!(done["completion"]["values"][0], "Engineering");
    client.set_logging_level("debug", &none()).unwrap();

    // A server request during a call: the server asks for our roots (on the stream), our
    // handler's answer is POSTed to the endpoint, and the tool reports what it got.
    let roots = client.call_tool("get-roots-list", None, &none()).unwrap();
    assert!(roots.to_string().contains("file:///sse-root"), "{roots}");

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
    assert!(wait_for(Duration::from_secs(2), || heard
        .progress
        .lock()
        .unwrap()
        .len()
        >= 3));

    // A cancel: the caller is back at once. The server took it: the TypeScript SDK sends no
    // answer for a cancelled request, and none comes, though the operation ends well within
    // the wait below (the same call not cancelled is answered: see the end).
    let client = Arc::new(client);
    let args = json!({"duration": 1, "steps": 2});
    let error = cancel_after(
        &client,
        "trigger-long-running-operation",
        args.clone(),
        Duration::from_millis(300),
    );
    assert_eq!(error.status, Status::Cancelled);
    let id = error.request_id.unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        !heard.answered(id),
        "the server answered the cancelled request {id}"
    );
    client.ping(&none()).unwrap();
    client
        .call_tool("trigger-long-running-operation", Some(args), &none())
        .unwrap();
    client.close();
}

/// Pinned, the client opens the stream at once (no POST to the URL first), and a modern
/// mode is refused: the old transport has no 2026-07-28 era.
#[test]
fn pinned_to_python_sse_server_and_refusing_the_modern_era() {
    let Some(peers) = peers_dir() else { return };
    let peer = HttpPeer::python_sse(&peers).unwrap();
    let mut config = HttpConfig::new(&peer.url);
    config.transport = HttpTransportKind::LegacySse;
    let client = Client::http(config.clone(), ClientOptions::default());
    client.connect().unwrap();
    let sum = client
        .call_tool("add", Some(json!({"a": 3, "b": 4})), &none())
        .unwrap();
    assert_eq!(sum["content"][0]["text"], "7");
    client.close();

    let modern = Client::http(
        config,
        ClientOptions {
            mode: ConnectMode::Modern,
            ..ClientOptions::default()
        },
    );
    assert_eq!(
        modern.connect().unwrap_err().status,
        Status::InvalidArgument
    );
}
