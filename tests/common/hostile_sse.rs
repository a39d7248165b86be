//! Pieces of the hostile HTTP servers the tests write by hand: reading a request off a raw
//! socket, and writing an SSE stream in chunks of the test's choosing.

use serde_json::{json, Value};
use std::io::Read;
use std::net::TcpStream;

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
