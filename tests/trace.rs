//! The wire trace: every frame in and out, in order, with its transport; never an HTTP header;
//! a trace callback may call the client.

mod common;

use common::http_server::HttpServer;
use common::*;
use mcpc::handlers::{Callbacks, TraceDirection, TraceFrame};
use mcpc::{Client, ClientOptions, ConnectMode, RequestOptions};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

type Frames = Arc<Mutex<Vec<(TraceDirection, String, Value)>>>;

fn tracing(frames: &Frames) -> ClientOptions {
    let frames = frames.clone();
    let callbacks = Callbacks {
        on_trace: Some(Arc::new(move |frame: &TraceFrame| {
            let json = serde_json::from_str(frame.json).expect("a traced frame is JSON");
            let entry = (frame.direction, frame.transport.to_owned(), json);
            frames.lock().unwrap().push(entry);
        })),
        ..Callbacks::default()
    };
    ClientOptions {
        callbacks,
        ..ClientOptions::default()
    }
}

/// Waits until the trace holds a frame matching `done`.
fn wait_for(frames: &Frames, done: impl Fn(&(TraceDirection, String, Value)) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !frames.lock().unwrap().iter().any(&done) {
        assert!(Instant::now() < deadline, "{:?}", frames.lock().unwrap());
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn stdio_frames_in_and_out_in_order() {
    let frames = Frames::default();
    let client = connect_with(config(&[]), tracing(&frames));
    let echoed = client
        .call_tool(
            "echo",
            Some(json!({"text": "traced"})),
            &RequestOptions::default(),
        )
        .unwrap();
    assert_eq!(text(&echoed), "traced");
    wait_for(&frames, |(d, _, f)| {
        *d == TraceDirection::In && f["result"]["content"][0]["text"] == "traced"
    });
    let frames = frames.lock().unwrap().clone();
    assert!(frames.iter().all(|(_, transport, _)| transport == "stdio"));
    let summary: Vec<(TraceDirection, String)> = frames
        .iter()
        .map(|(d, _, f)| {
            let what = f["method"]
                .as_str()
                .map_or_else(|| format!("answer {}", f["id"]), str::to_owned);
            (*d, what)
        })
        .collect();
    use TraceDirection::{In, Out};
    assert_eq!(
        summary,
        [
            // The auto mode's probe, refused by a server of the handshake era.
            (Out, "server/discover".to_owned()),
            (In, "answer 1".to_owned()),
            (Out, "initialize".to_owned()),
            (In, "answer 2".to_owned()),
            (Out, "notifications/initialized".to_owned()),
            (Out, "tools/call".to_owned()),
            (In, "answer 3".to_owned()),
        ]
    );
    assert_eq!(frames[5].2["params"]["arguments"]["text"], "traced");
}

#[test]
fn http_trace_never_carries_a_header_or_its_credential() {
    const SECRET: &str = "s3cr3t-token-in-a-header";
    for (mode, args) in [
        (ConnectMode::Legacy, &[][..]),
        (ConnectMode::Modern, &["--modern"][..]),
    ] {
        let server = HttpServer::start("trace_http", args);
        let frames = Frames::default();
        let mut config = server.config();
        config
            .add_header("Authorization", &format!("Bearer {SECRET}"))
            .unwrap();
        let client = Client::http(
            config,
            ClientOptions {
                mode,
                ..tracing(&frames)
            },
        );
        client.connect().unwrap();
        client
            .call_tool(
                "echo",
                Some(json!({"text": "over http"})),
                &RequestOptions::default(),
            )
            .unwrap();
        wait_for(&frames, |(d, _, f)| {
            *d == TraceDirection::In && f["result"]["content"][0]["text"] == "over http"
        });
        let frames = frames.lock().unwrap().clone();
        assert!(frames.iter().all(|(_, transport, _)| transport == "http"));
        assert!(frames
            .iter()
            .any(|(d, _, f)| *d == TraceDirection::Out && f["method"] == "tools/call"));
        let all = format!("{frames:?}");
        assert!(
            !all.contains(SECRET) && !all.contains("Authorization"),
            "{all}"
        );
    }
}

#[test]
fn a_trace_callback_may_call_the_client() {
    let frames = Frames::default();
    let client_slot: Arc<OnceLock<Weak<Client>>> = Arc::default();
    let pinged = Arc::new(Mutex::new(None));
    let mut options = tracing(&frames);
    let inner = options.callbacks.on_trace.take().unwrap();
    let (slot, result) = (client_slot.clone(), pinged.clone());
    options.callbacks.on_trace = Some(Arc::new(move |frame: &TraceFrame| {
        inner(frame);
        let is_echo_call =
            frame.direction == TraceDirection::Out && frame.json.contains("\"echo\"");
        if is_echo_call {
            if let Some(client) = slot.get().and_then(Weak::upgrade) {
                *result.lock().unwrap() = Some(client.ping(&RequestOptions::default()).is_ok());
            }
        }
    }));
    let client = Arc::new(connect_with(config(&[]), options));
    client_slot.set(Arc::downgrade(&client)).unwrap();
    client
        .call_tool(
            "echo",
            Some(json!({"text": "x"})),
            &RequestOptions::default(),
        )
        .unwrap();
    wait_for(&frames, |(_, _, f)| f["method"] == "ping");
    let deadline = Instant::now() + Duration::from_secs(10);
    while pinged.lock().unwrap().is_none() {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(*pinged.lock().unwrap(), Some(true));
    client.close();
}

#[test]
fn close_delivers_the_frames_queued_before_it_and_a_trace_callback_may_close() {
    // Frames recorded just before close still reach the host (mcp-call exits right after its
    // call: its last frames must not be lost).
    let frames = Frames::default();
    let client = connect_with(config(&[]), tracing(&frames));
    client.ping(&RequestOptions::default()).unwrap();
    client.close();
    let traced = frames.lock().unwrap().clone();
    let last = traced.last().expect("frames");
    assert_eq!(last.0, TraceDirection::In, "{traced:?}");
    assert_eq!(last.2["result"], json!({}), "{traced:?}");

    // A trace callback that closes its own client is not waited for.
    let client_slot: Arc<OnceLock<Weak<Client>>> = Arc::default();
    let slot = client_slot.clone();
    let options = ClientOptions {
        callbacks: Callbacks {
            on_trace: Some(Arc::new(move |frame: &TraceFrame| {
                if frame.json.contains("\"ping\"") {
                    if let Some(client) = slot.get().and_then(Weak::upgrade) {
                        client.close();
                    }
                }
            })),
            ..Callbacks::default()
        },
        ..ClientOptions::default()
    };
    let client = Arc::new(connect_with(config(&[]), options));
    client_slot.set(Arc::downgrade(&client)).unwrap();
    let started = Instant::now();
    let _ = client.ping(&RequestOptions::default());
    let deadline = Instant::now() + Duration::from_secs(10);
    while client.state() != mcpc::ConnectionState::Closed {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}
