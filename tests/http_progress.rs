//! Progress over Streamable HTTP: notifications met on a call's SSE stream reach the progress
//! callbacks, in both eras; a JSON answer carries none.

mod common;

use common::http_server::HttpServer;
use mcpc::handlers::{Callbacks, Progress};
use mcpc::{Client, ClientOptions, ConnectMode, RequestOptions};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn progress_heard(server: &HttpServer, mode: ConnectMode) -> Vec<Progress> {
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
    let client = Client::http(server.config(), options);
    client.connect().unwrap();
    let opts = RequestOptions {
        progress_token: Some(json!("p1")),
        ..RequestOptions::default()
    };
    client
        .call_tool("progress", Some(json!({"steps": 3})), &opts)
        .unwrap();
    // Callbacks run on their own thread: give them a moment.
    let deadline = Instant::now() + Duration::from_millis(500);
    while heard.lock().unwrap().len() < 3 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let heard = heard.lock().unwrap().clone();
    heard
}

#[test]
fn progress_on_a_stream_reaches_the_callbacks_in_both_eras() {
    let server = HttpServer::start("http_progress", &["--modern"]);
    for mode in [ConnectMode::Legacy, ConnectMode::Modern] {
        let heard = progress_heard(&server, mode);
        let steps: Vec<f64> = heard.iter().map(|p| p.progress).collect();
        assert_eq!(steps, [1.0, 2.0, 3.0], "{mode:?}");
        assert!(heard
            .iter()
            .all(|p| p.token == json!("p1") && p.total == Some(3.0)));
    }
}

#[test]
fn a_json_answer_carries_no_progress() {
    let server = HttpServer::start("http_progress_json", &["--modern", "--http-json"]);
    for mode in [ConnectMode::Legacy, ConnectMode::Modern] {
        assert!(progress_heard(&server, mode).is_empty(), "{mode:?}");
    }
}
