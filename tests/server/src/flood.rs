//! `--flood METHOD`: a server that sends `METHOD` to the client as fast as it can, for the
//! client's tests of the queues a server can fill. Over stdio the flood starts once the client
//! says `notifications/initialized`; over HTTP it goes on every standalone GET stream. A method
//! under `notifications/` is sent as a notification, any other as a request (ids `flood-N`).
//! `--flood-bytes N` makes each `notifications/message` (or `sampling/createMessage`) carry N
//! bytes of data (of text).
//! `--flood-count N` stops after N messages, `--flood-secs S` after S seconds; otherwise it
//! goes on until the client goes away. A `--flood-secs` flood is also deaf: the server reads
//! nothing from the client while it lasts (the stdio flood runs on the thread that reads stdin;
//! HTTP POSTs wait), as a server that floods and never reads our answers would.

use crate::Server;
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// How long each flood id is: an attacker may choose long ids, and every answer echoes its id.
const ID_BYTES: usize = 1024;
/// Messages written at once: a flood is as fast as the server can make it.
const BATCH: u64 = 64;

/// The flood's `n`-th message; `padding` lengthens request ids, `data_bytes` (when some) is
/// the size of a log message's data or of a sampling request's text.
pub fn message(method: &str, n: u64, padding: &str, data_bytes: Option<usize>) -> Value {
    let mut message = json!({ "jsonrpc": "2.0", "method": method });
    if !method.starts_with("notifications/") {
        message["id"] = json!(format!("flood-{n}-{padding}"));
    }
    if method == "notifications/message" {
        message["params"] = match data_bytes {
            Some(bytes) => json!({ "level": "info", "data": "x".repeat(bytes) }),
            None => json!({ "level": "info", "data": n }),
        };
    } else if method == "sampling/createMessage" {
        let text = data_bytes.map_or("flood".to_owned(), |bytes| "x".repeat(bytes));
        message["params"] = json!({
            "messages": [{ "role": "user", "content": { "type": "text", "text": text } }],
            "maxTokens": 1
        });
    }
    message
}

/// Sends the flood on stdout: on this (the reading) thread when it is deaf, else from a thread
/// of its own, so stdin is still read.
pub fn start_on_stdout(server: &Arc<Server>) {
    if server.args.flood.is_none() {
        return;
    }
    let flood = {
        let server = server.clone();
        // The client going away shows up as EOF on stdin, which ends the process.
        move || {
            run(&server, |batch| {
                server.write_raw(batch.as_bytes());
                true
            })
        }
    };
    match server.args.flood_secs {
        Some(_) => flood(),
        None => drop(thread::spawn(flood)),
    }
}

/// Sends the flood with `write` (given SSE events, many at a time) until a write fails.
pub fn on_stream(server: &Server, mut write: impl FnMut(&str) -> bool) {
    run(server, |batch| {
        let events: String = batch
            .lines()
            .map(|line| format!("event: message\ndata: {line}\n\n"))
            .collect();
        write(&events)
    });
}

/// Sends the flood's messages (lines, `BATCH` at a time) with `send` until it is over or
/// `send` says stop.
fn run(server: &Server, mut send: impl FnMut(&str) -> bool) {
    let Some(method) = &server.args.flood else {
        return;
    };
    let deadline = server
        .args
        .flood_secs
        .map(|secs| Instant::now() + Duration::from_secs(secs));
    server.flooding.store(deadline.is_some(), Ordering::SeqCst);
    let count = server.args.flood_count.unwrap_or(u64::MAX);
    let padding = ".".repeat(ID_BYTES);
    // Each message is made from the text of the first, which is faster than serializing it:
    // `head` + id + `tail`, or just `head` for a notification.
    let template = message(method, 0, "", server.args.flood_bytes).to_string();
    let (head, tail) = match template.split_once("flood-0-") {
        Some((head, tail)) => (head, Some(tail)),
        None => (template.as_str(), None),
    };
    let mut n = 0;
    while n < count && deadline.is_none_or(|d| Instant::now() < d) {
        let mut batch = String::new();
        for n in n..count.min(n + BATCH) {
            batch.push_str(head);
            if let Some(tail) = tail {
                batch.push_str(&format!("flood-{n}-{padding}"));
                batch.push_str(tail);
            }
            batch.push('\n');
        }
        n = count.min(n + BATCH);
        if !send(&batch) {
            break;
        }
    }
    server.flooding.store(false, Ordering::SeqCst);
}

/// What the client sends waits while a deaf flood lasts.
pub fn wait_while_flooding(server: &Server) {
    while server.flooding.load(Ordering::SeqCst) {
        thread::sleep(Duration::from_millis(5));
    }
}
