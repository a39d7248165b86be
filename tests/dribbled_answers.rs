//! Answers that arrive in pieces: the stdio reader, which goes straight to its wait after a
//! read that emptied the pipe, must still read every line whole, however it is cut, and read
//! a server's last answer written just before it exits.
//!
//! The server is a few lines of Python that cut each answer in two with a pause between.

use mcpc::{Client, ClientOptions, RequestOptions, StdioConfig};
use serde_json::json;

const SERVER: &str = r#"
import json, os, sys, time
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method, id = msg.get("method"), msg["id"]
    if method == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "dribble", "version": "1"}}
    elif method == "tools/call":
        text = msg["params"]["arguments"]["text"]
        result = {"content": [{"type": "text", "text": text}]}
    else:
        result = {}
    out = json.dumps({"jsonrpc": "2.0", "id": id, "result": result}) + "\n"
    if method == "tools/call":
        # Cut where the text says: mid-frame, or at the newline (the line whole but for it).
        cut = len(out) - 1 if text.startswith("newline") else len(out) // 3
        sys.stdout.write(out[:cut]); sys.stdout.flush()
        time.sleep(0.02)
    else:
        cut = 0
    sys.stdout.write(out[cut:]); sys.stdout.flush()
    if method == "tools/call" and text.startswith("last"):
        os._exit(0)
"#;

fn client() -> Client {
    let argv: Vec<String> = vec!["python3".into(), "-c".into(), SERVER.into()];
    let client = Client::stdio(StdioConfig::new(argv), ClientOptions::default());
    client.connect().unwrap();
    client
}

fn echo(client: &Client, text: &str) -> serde_json::Value {
    let args = json!({ "text": text });
    client
        .call_tool("echo", Some(args), &RequestOptions::default())
        .unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn answers_cut_anywhere_arrive_whole_one_caller_and_several() {
    let client = client();
    // One caller at a time: it reads its own answer.
    for text in ["mid-frame", "newline", "mid-frame again"] {
        assert_eq!(echo(&client, text)["content"][0]["text"], text);
    }
    // Several at once: the reader thread reads, and answers of different calls share reads.
    std::thread::scope(|threads| {
        for t in 0..4 {
            let client = &client;
            threads.spawn(move || {
                for i in 0..5 {
                    let text = match i % 2 {
                        0 => format!("newline {t} {i}"),
                        _ => format!("thread {t} call {i}"),
                    };
                    assert_eq!(echo(client, &text)["content"][0]["text"], text.as_str());
                }
            });
        }
    });
}

#[test]
fn the_answer_a_server_writes_as_it_exits_is_read() {
    let client = client();
    assert_eq!(
        echo(&client, "last words")["content"][0]["text"],
        "last words"
    );
}
