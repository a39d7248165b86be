//! Pieces of the hostile HTTP servers the tests write by hand: reading a request off a raw
//! socket, and writing an SSE stream in chunks of the test's choosing.

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// The head of a chunked SSE response.
pub const SSE_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
    Transfer-Encoding: chunked\r\n\r\n";

/// One request: its method and JSON body (`Null` without one). `None` at the end.
pub fn read_request(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<(String, Value)> {
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        fill(stream, buffer)?;
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_ascii_lowercase();
    let method = head.split(' ').next()?.to_ascii_uppercase();
    let length: usize = head
        .split("\r\n")
        .find_map(|line| line.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap());
    while buffer.len() < head_end + length {
        fill(stream, buffer)?;
    }
    let body: Vec<u8> = buffer.drain(..head_end + length).skip(head_end).collect();
    Some((method, serde_json::from_slice(&body).unwrap_or(Value::Null)))
}

fn fill(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<()> {
    let mut chunk = [0; 4096];
    match stream.read(&mut chunk) {
        Ok(0) | Err(_) => None,
        Ok(n) => {
            buffer.extend_from_slice(&chunk[..n]);
            Some(())
        }
    }
}

/// `bytes` as one chunk of a chunked body.
pub fn chunk(bytes: &[u8]) -> Vec<u8> {
    let mut framed = format!("{:x}\r\n", bytes.len()).into_bytes();
    framed.extend_from_slice(bytes);
    framed.extend_from_slice(b"\r\n");
    framed
}

/// An SSE event carrying a log notification whose data is `n`.
pub fn notice(n: u64) -> Vec<u8> {
    let message = json!({
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "info", "data": n}
    });
    format!("data: {message}\n\n").into_bytes()
}

/// Writes `bytes` one byte a chunk, with pauses longer than a client waits before it parks its
/// stream. False once the client has gone.
pub fn dribble(stream: &mut TcpStream, bytes: &[u8]) -> bool {
    bytes.iter().all(|byte| {
        let written = stream.write_all(&chunk(&[*byte])).is_ok();
        std::thread::sleep(Duration::from_millis(2));
        written
    })
}

/// Writes notices 0 to `count` - 1 in chunks of about 60 KB, then `last` with the last of them.
/// False once the client has gone.
pub fn flood(stream: &mut TcpStream, count: u64, last: &[u8]) -> bool {
    let mut batch = Vec::new();
    for n in 0..count {
        batch.extend(notice(n));
        if batch.len() > 60_000 {
            if stream.write_all(&chunk(&batch)).is_err() {
                return false;
            }
            batch.clear();
        }
    }
    batch.extend_from_slice(last);
    stream.write_all(&chunk(&batch)).is_ok()
}

/// The data of the log notices (`notifications/message`, data a number) a client heard, in order.
pub type Heard = std::sync::Arc<std::sync::Mutex<Vec<u64>>>;

/// Client options whose message callback notes each notice's data in `heard`.
pub fn hearing(heard: &Heard) -> mcpc::ClientOptions {
    let heard = heard.clone();
    mcpc::ClientOptions {
        callbacks: mcpc::handlers::Callbacks {
            on_message: Some(std::sync::Arc::new(
                move |message: &mcpc::handlers::LogMessage| {
                    heard.lock().unwrap().push(message.data.as_u64().unwrap());
                },
            )),
            ..Default::default()
        },
        ..mcpc::ClientOptions::default()
    }
}
