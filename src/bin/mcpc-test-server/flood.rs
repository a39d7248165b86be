//! `--flood METHOD`: a server that sends `METHOD` to the client as fast as it can, for the
//! client's tests of the queues a server can fill. Over stdio the flood starts once the client
//! says `notifications/initialized`; over HTTP it goes on every standalone GET stream. A method
//! under `notifications/` is sent as a notification, any other as a request (ids `flood-N`).
//! `--flood-count N` stops after N messages; otherwise it goes on until the client goes away.

use crate::Server;
use serde_json::{json, Value};
use std::sync::Arc;
use std::thread;

/// The flood's `n`-th message.
pub fn message(method: &str, n: u64) -> Value {
    let mut message = json!({ "jsonrpc": "2.0", "method": method });
    if !method.starts_with("notifications/") {
        message["id"] = json!(format!("flood-{n}"));
    }
    if method == "notifications/message" {
        message["params"] = json!({ "level": "info", "data": n });
    } else if method == "sampling/createMessage" {
        message["params"] = json!({
            "messages": [{ "role": "user", "content": { "type": "text", "text": "flood" } }],
            "maxTokens": 1
        });
    }
    message
}

/// Sends the flood on stdout from a thread of its own, so stdin is still read.
pub fn start_on_stdout(server: &Arc<Server>) {
    let Some(method) = server.args.flood.clone() else {
        return;
    };
    let server = server.clone();
    thread::spawn(move || {
        // The client going away shows up as EOF on stdin, which ends the process.
        for n in 0..server.args.flood_count.unwrap_or(u64::MAX) {
            server.send(&message(&method, n));
        }
    });
}

/// Sends the flood with `write` (one SSE event each) until a write fails.
pub fn on_stream(server: &Server, mut write: impl FnMut(&str) -> bool) {
    let Some(method) = &server.args.flood else {
        return;
    };
    for n in 0..server.args.flood_count.unwrap_or(u64::MAX) {
        if !write(&message(method, n).to_string()) {
            return;
        }
    }
}
