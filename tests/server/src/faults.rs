//! The `fault` tool: a server misbehaving on purpose, so the client's handling of each kind of
//! bad output can be tested over stdio.

use crate::tools::text_result;
use crate::{Reply, Request, RpcError, Server};
use serde_json::{json, Value};
use std::io::Write;
use std::thread;
use std::time::Duration;

/// `fault {kind, count?}`. Kinds:
/// - `wrong_id`: answers with an id it was never sent, and never with the right one;
/// - `duplicate`: answers twice with the same id;
/// - `not_jsonrpc`: writes a JSON line that is not JSON-RPC, then answers;
/// - `flood`: sends `count` (default 10000) log notifications, then answers;
/// - `drip`: writes its answer one byte per millisecond;
/// - `close_stdout`: closes its stdout but keeps running (until stdin closes);
/// - `endless_line`: writes `bytes` bytes with no newline (forever when `bytes` is absent),
///   then a newline and its answer.
/// - `notify`: sends the notification `method` with `params` (if given), then answers.
pub fn fault(server: &Server, request: &Request, args: &Value) -> Reply {
    let kind = args["kind"].as_str().unwrap_or_default();
    let answer =
        |text: &str| json!({ "jsonrpc": "2.0", "id": request.id(), "result": text_result(text) });
    match kind {
        "wrong_id" => {
            let stray =
                json!({ "jsonrpc": "2.0", "id": 987_654_321, "result": text_result("stray") });
            server.send(&stray);
            never_answer(request)
        }
        "duplicate" => {
            server.send(&answer("first"));
            server.send(&answer("second"));
            Err(RpcError::cancelled()) // answered already: send nothing more
        }
        "not_jsonrpc" => {
            server.send(&json!({ "hello": "world" }));
            Ok(text_result("after the odd line"))
        }
        "flood" => {
            let count = args["count"].as_u64().unwrap_or(10_000);
            for i in 0..count {
                server.notify(
                    "notifications/message",
                    Some(json!({ "level": "debug", "data": i })),
                );
            }
            Ok(text_result(format!("flooded {count}")))
        }
        "drip" => {
            let mut line = answer("dripped").to_string();
            line.push('\n');
            for byte in line.as_bytes() {
                server.write_raw(std::slice::from_ref(byte));
                thread::sleep(Duration::from_millis(1));
            }
            Err(RpcError::cancelled()) // answered by hand
        }
        "endless_line" => {
            // Under the stdout lock throughout: another answer must not land inside the line.
            let mut stdout = server.stdout.lock().unwrap();
            let chunk = [b'x'; 64 * 1024];
            let mut left = args["bytes"].as_u64().unwrap_or(u64::MAX);
            while left > 0 {
                let n = left.min(chunk.len() as u64) as usize;
                if stdout.write_all(&chunk[..n]).is_err() {
                    break; // the client is gone
                }
                left -= n as u64;
            }
            let _ = stdout.write_all(b"\n").and_then(|()| stdout.flush());
            drop(stdout);
            Ok(text_result("after the long line"))
        }
        "close_stdout" => {
            crate::platform::close_stdout();
            never_answer(request)
        }
        "notify" => {
            let method = args["method"].as_str().unwrap_or("notifications/message");
            server.notify(method, args.get("params").cloned());
            Ok(text_result("notified"))
        }
        _ => Err(RpcError::invalid_params(format!("unknown fault {kind:?}"))),
    }
}

/// Waits until the client cancels (or forever), answering nothing.
fn never_answer(request: &Request) -> Reply {
    request.cancel().wait();
    Err(RpcError::cancelled())
}
