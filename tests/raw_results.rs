//! Results reach a C host as the server's own text (key order, escapes, number spellings), with
//! no tree built and encoded again in between; the Rust API gets the same result as a tree.
//! A result that is valid JSON beyond what a tree can hold (a number out of f64's range) is
//! handed to C as it is, and is a PROTOCOL_ERROR for the Rust API, never a silent null.
//!
//! The server is a few lines of Python that write these answers byte for byte.

use mcpc::ffi::*;
use mcpc::{Client, ClientOptions, RequestOptions, Status, StdioConfig};
use serde_json::json;
use std::ffi::{CStr, CString};
use std::ptr::null;

const SERVER: &str = r#"
import json, sys
ANSWERS = {
    "order": '{"z":1,"a":"\\u00e9 \\"q\\"","content":[{"type":"text","text":"x"}]}',
    "beyond": '{"n":1e400,"content":[]}',
}
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method, id = msg.get("method"), msg["id"]
    if method == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "raw", "version": "1"}}
        out = json.dumps({"jsonrpc": "2.0", "id": id, "result": result})
    elif method == "tools/call":
        text = ANSWERS[msg["params"]["name"]]
        out = '{"jsonrpc":"2.0","id":%d,"result":%s}' % (id, text)
    else:
        out = json.dumps({"jsonrpc": "2.0", "id": id,
                          "error": {"code": -32601, "message": "no such method"}})
    sys.stdout.write(out + "\n")
    sys.stdout.flush()
"#;

fn argv() -> Vec<String> {
    vec!["python3".into(), "-c".into(), SERVER.into()]
}

#[test]
fn the_c_api_gets_the_servers_text_and_rust_the_same_tree() {
    let client = Client::stdio(StdioConfig::new(argv()), ClientOptions::default());
    client.connect().unwrap();
    let none = RequestOptions::default();
    let result = client.call_tool("order", None, &none).unwrap();
    assert_eq!(
        result,
        json!({"z": 1, "a": "é \"q\"", "content": [{"type": "text", "text": "x"}]})
    );
    let err = client.call_tool("beyond", None, &none).unwrap_err();
    assert_eq!(err.status, Status::ProtocolError, "{err}");
    assert!(err.message.contains("cannot be read"), "{err}");

    unsafe {
        let args: Vec<CString> = argv()
            .into_iter()
            .map(|a| CString::new(a).unwrap())
            .collect();
        let mut ptrs: Vec<*const std::ffi::c_char> = args.iter().map(|a| a.as_ptr()).collect();
        ptrs.push(null());
        let c = mcp_client_new_stdio(ptrs.as_ptr(), std::ptr::null_mut());
        let connected = mcp_client_connect(c);
        assert_eq!(mcp_result_status(connected), mcp_status::Ok);
        mcp_result_free(connected);
        let text_of = |name: &CStr| {
            let r = mcp_client_call_tool(c, name.as_ptr(), null(), null());
            assert_eq!(mcp_result_status(r), mcp_status::Ok);
            let text = CStr::from_ptr(mcp_result_json(r))
                .to_str()
                .unwrap()
                .to_owned();
            mcp_result_free(r);
            text
        };
        // Byte for byte: the server's key order and its escapes.
        assert_eq!(
            text_of(c"order"),
            r#"{"z":1,"a":"\u00e9 \"q\"","content":[{"type":"text","text":"x"}]}"#
        );
        assert_eq!(text_of(c"beyond"), r#"{"n":1e400,"content":[]}"#);
        mcp_client_free(c);
    }
}
