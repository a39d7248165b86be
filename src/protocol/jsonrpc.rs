//! JSON-RPC 2.0 framing: encoding our requests and notifications, classifying what arrives.

use super::envelope::Envelope;
use super::json_text;
use super::params::{self, Params};
use crate::error::{Error, Result};
use serde_json::{json, Value};

/// JSON-RPC error codes the client itself uses.
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INTERNAL_ERROR: i64 = -32603;

// The fixed pieces of our frames, named so buffer sizes can be computed from them.
const HEAD_WITH_ID: &str = r#"{"jsonrpc":"2.0","id":"#;
const HEAD: &str = r#"{"jsonrpc":"2.0""#;
const METHOD: &str = r#","method":"#;
const PARAMS: &str = r#","params":"#;

/// Encodes a request. Ids are integers chosen by the client and unique per connection. In the
/// modern era `envelope` is stamped into `params._meta` as the params are written.
pub fn encode_request(
    id: i64,
    method: &str,
    params: Option<&Params>,
    envelope: Option<&Envelope>,
) -> String {
    let id = Value::from(id);
    let params_len = match (params, envelope) {
        (None, None) => 0,
        _ => PARAMS.len() + params::estimated_len(params, envelope),
    };
    let len = HEAD_WITH_ID.len() + json_text::estimated_len(&id) + rest_len(method, params_len);
    let mut line = with_room_for_newline(len);
    line.push_str(HEAD_WITH_ID);
    json_text::write_value(&mut line, &id);
    line.push_str(METHOD);
    json_text::write_str(&mut line, method);
    if params.is_some() || envelope.is_some() {
        line.push_str(PARAMS);
        params::write(&mut line, params, envelope);
    }
    line.push('}');
    line
}

pub fn encode_notification(method: &str, params: Option<&Value>) -> String {
    let params_len = params.map_or(0, |p| PARAMS.len() + json_text::estimated_len(p));
    let mut line = with_room_for_newline(HEAD.len() + rest_len(method, params_len));
    line.push_str(HEAD);
    line.push_str(METHOD);
    json_text::write_str(&mut line, method);
    if let Some(params) = params {
        line.push_str(PARAMS);
        json_text::write_value(&mut line, params);
    }
    line.push('}');
    line
}

/// A buffer for a frame of `len` bytes (exact when no string in it needs an escape), plus
/// one for the newline the stdio transport appends, so the line is allocated once (or not at
/// all: a spare of this thread's, see `frame_buffers`).
fn with_room_for_newline(len: usize) -> String {
    // An empty buffer is valid UTF-8.
    String::from_utf8(crate::frame_buffers::take(len + 1)).unwrap_or_default()
}

/// The length of the method, the params (`params_len`, their key included) and the closing
/// brace, escapes aside.
fn rest_len(method: &str, params_len: usize) -> usize {
    METHOD.len() + method.len() + 2 + params_len + 1
}

/// `notifications/cancelled`; the `reason` key is left out when there is no reason.
pub fn encode_cancelled(request_id: i64, reason: Option<&str>) -> String {
    let params = match reason {
        Some(reason) => json!({ "requestId": request_id, "reason": reason }),
        None => json!({ "requestId": request_id }),
    };
    encode_notification(super::methods::CANCELLED, Some(&params))
}

/// Our answer to a request the server sent us.
pub fn encode_error_response(id: &Value, code: i64, message: &str) -> String {
    // The keys in the order `json!` gave them before (serde_json's maps are sorted).
    const ERROR_CODE: &str = r#","error":{"code":"#;
    const MESSAGE: &str = r#","message":"#;
    let code = Value::from(code);
    let len = HEAD_WITH_ID.len()
        + json_text::estimated_len(id)
        + ERROR_CODE.len()
        + json_text::estimated_len(&code)
        + MESSAGE.len()
        + message.len()
        + 4;
    let mut line = with_room_for_newline(len);
    line.push_str(HEAD_WITH_ID);
    json_text::write_value(&mut line, id);
    line.push_str(ERROR_CODE);
    json_text::write_value(&mut line, &code);
    line.push_str(MESSAGE);
    json_text::write_str(&mut line, message);
    line.push_str("}}");
    line
}

use super::reply::Reply;

/// One message from the server, sorted by kind.
#[derive(Debug, PartialEq)]
pub enum Incoming {
    /// An answer to one of our requests: the whole frame, with `result` or `error`.
    Response { id: Value, frame: Value },
    /// A plain success answer whose result is kept as the server's text (the stdio reader's
    /// fast path: `protocol::reply::parse_answer`).
    Answer { id: i64, reply: Reply },
    /// The server asks something of us and waits for an answer.
    Request {
        id: Value,
        method: String,
        params: Option<Value>,
    },
    Notification {
        method: String,
        params: Option<Value>,
    },
    /// Valid JSON that is not a JSON-RPC message; the text says why.
    Invalid(String),
}

/// Reads the messages in one message text (an HTTP body, an SSE event): a plain success answer
/// keeps its result as text (`reply::parse_answer`, one pass over the text and no tree);
/// anything else goes through the general parser, a batch taken apart. Err when the text is
/// not JSON.
pub fn read_messages(text: &[u8], mut each: impl FnMut(Incoming)) -> serde_json::Result<()> {
    if let Some((id, reply)) = super::reply::parse_answer(text) {
        each(Incoming::Answer { id, reply });
        return Ok(());
    }
    match serde_json::from_slice(text)? {
        Value::Array(batch) => batch.into_iter().for_each(|m| each(classify(m))),
        message => each(classify(message)),
    }
    Ok(())
}

/// Sorts a parsed frame into request, response or notification.
pub fn classify(frame: Value) -> Incoming {
    let Value::Object(mut map) = frame else {
        return Incoming::Invalid(format!("not a JSON object: {}", brief(&frame)));
    };
    let method = match map.remove("method") {
        Some(Value::String(m)) => Some(m),
        Some(other) => {
            return Incoming::Invalid(format!("method is not a string: {}", brief(&other)))
        }
        None => None,
    };
    let params = map.remove("params");
    match (method, map.contains_key("id")) {
        (Some(method), true) => {
            let id = map.remove("id").unwrap_or(Value::Null);
            Incoming::Request { id, method, params }
        }
        (Some(method), false) => Incoming::Notification { method, params },
        (None, true) if map.contains_key("result") || map.contains_key("error") => {
            let id = map.get("id").cloned().unwrap_or(Value::Null);
            Incoming::Response {
                id,
                frame: Value::Object(map),
            }
        }
        _ => Incoming::Invalid(format!(
            "neither a request, a response nor a notification: {}",
            brief(&Value::Object(map))
        )),
    }
}

/// Turns a response frame into its result, or the server's JSON-RPC error.
pub fn into_result(frame: Value) -> Result<Value> {
    let Value::Object(mut map) = frame else {
        return Err(Error::protocol("response is not a JSON object"));
    };
    if let Some(error) = map.remove("error") {
        let code = error.get("code").and_then(Value::as_i64);
        let message = error.get("message").and_then(Value::as_str);
        return match (code, message) {
            (Some(code), Some(message)) => Err(Error::server(
                code,
                message.to_owned(),
                error.get("data").cloned(),
            )),
            _ => Err(Error::protocol(format!(
                "malformed JSON-RPC error object: {}",
                brief(&error)
            ))),
        };
    }
    map.remove("result")
        .ok_or_else(|| Error::protocol("response has neither result nor error"))
}

/// A short rendering of a value for error messages, so a huge frame never floods a message.
pub fn brief(value: &Value) -> String {
    let mut text = value.to_string();
    if text.len() > 200 {
        let mut cut = 200;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("...");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_encoding_is_valid_json_with_all_fields() {
        let params = json!({"name": "echo \"q\"", "arguments": {"text": "é"}});
        let line = encode_request(7, "tools/call", Some(&params.clone().into()), None);
        let back: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            back,
            json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":params})
        );
        let bare: Value = serde_json::from_str(&encode_request(1, "ping", None, None)).unwrap();
        assert_eq!(bare, json!({"jsonrpc":"2.0","id":1,"method":"ping"}));
    }

    /// The encoders before json_text: `format!` over `Value`'s Display.
    fn old_request(id: i64, method: &str, params: Option<&Value>) -> String {
        let method = Value::from(method);
        match params {
            Some(params) => {
                format!(r#"{{"jsonrpc":"2.0","id":{id},"method":{method},"params":{params}}}"#)
            }
            None => format!(r#"{{"jsonrpc":"2.0","id":{id},"method":{method}}}"#),
        }
    }

    fn old_notification(method: &str, params: Option<&Value>) -> String {
        let method = Value::from(method);
        match params {
            Some(params) => format!(r#"{{"jsonrpc":"2.0","method":{method},"params":{params}}}"#),
            None => format!(r#"{{"jsonrpc":"2.0","method":{method}}}"#),
        }
    }

    fn old_error_response(id: &Value, code: i64, message: &str) -> String {
        let error = json!({ "code": code, "message": message });
        format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{error}}}"#)
    }

    #[test]
    fn encoders_are_byte_identical_to_the_format_versions() {
        let params = [
            None,
            Some(json!({})),
            Some(json!({"name": "echo", "arguments": {"text": "a\"b\\c\n\u{1}é".repeat(50)}})),
            Some(json!([1, -2.5, null, true, {"k": ["v"]}])),
        ];
        for method in ["tools/call", "", "we\"ird\\\u{0}méthod"] {
            for params in &params {
                let tree = params.clone().map(Params::from);
                for id in [0, 1, 42, i64::MAX, i64::MIN] {
                    assert_eq!(
                        encode_request(id, method, tree.as_ref(), None),
                        old_request(id, method, params.as_ref())
                    );
                }
                assert_eq!(
                    encode_notification(method, params.as_ref()),
                    old_notification(method, params.as_ref())
                );
            }
        }
        for id in [
            json!(1),
            json!("s-\"1\""),
            json!(null),
            json!(-7),
            json!(1.5),
        ] {
            for (code, message) in [(METHOD_NOT_FOUND, "Method not found: x\"y"), (0, "")] {
                assert_eq!(
                    encode_error_response(&id, code, message),
                    old_error_response(&id, code, message)
                );
            }
        }
    }

    #[test]
    fn encoders_allocate_once_with_room_for_the_newline() {
        let params = Params::from(json!({"name": "echo", "arguments": {"text": "x".repeat(1024)}}));
        let exact = |line: String| assert_eq!(line.capacity(), line.len() + 1, "{line}");
        for id in [0, 7, 12345, i64::MAX, i64::MIN] {
            exact(encode_request(id, "tools/call", Some(&params), None));
            exact(encode_request(id, "ping", None, None));
        }
        let envelope = Envelope::new("2026-07-28", &json!({"name": "c"}), &json!({}));
        for params in [None, Some(&params)] {
            let line = encode_request(9, "tools/call", params, Some(&envelope));
            let spare = line.capacity() - line.len();
            assert!((1..=16).contains(&spare), "{spare} spare: {line}");
        }
        exact(encode_notification("notifications/initialized", None));
        exact(encode_cancelled(3, Some("user")));
        exact(encode_error_response(
            &json!("s1"),
            METHOD_NOT_FOUND,
            "Method not found: x",
        ));
    }

    #[test]
    fn cancelled_has_no_reason_key_without_a_reason() {
        let v: Value = serde_json::from_str(&encode_cancelled(3, None)).unwrap();
        assert_eq!(
            v,
            json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}})
        );
        let v: Value = serde_json::from_str(&encode_cancelled(3, Some("why"))).unwrap();
        assert_eq!(v["params"]["reason"], "why");
    }

    #[test]
    fn classify_sorts_every_kind() {
        let r = classify(json!({"jsonrpc":"2.0","id":1,"result":{}}));
        assert!(matches!(r, Incoming::Response { id, .. } if id == json!(1)));
        let r = classify(json!({"jsonrpc":"2.0","id":"s1","method":"roots/list"}));
        assert!(matches!(r, Incoming::Request { method, .. } if method == "roots/list"));
        let r = classify(json!({"jsonrpc":"2.0","method":"notifications/message","params":{}}));
        assert!(matches!(r, Incoming::Notification { .. }));
        assert!(matches!(classify(json!([1, 2])), Incoming::Invalid(_)));
        assert!(matches!(classify(json!({"id": 1})), Incoming::Invalid(_)));
        assert!(matches!(
            classify(json!({"method": 5})),
            Incoming::Invalid(_)
        ));
    }

    #[test]
    fn into_result_maps_errors() {
        assert_eq!(
            into_result(json!({"id":1,"result":{"a":1}})).unwrap(),
            json!({"a":1})
        );
        let e = into_result(json!({"id":1,"error":{"code":-32602,"message":"bad","data":{"x":1}}}))
            .unwrap_err();
        assert_eq!(e.status, crate::Status::ServerError);
        assert_eq!((e.code, e.message.as_str()), (Some(-32602), "bad"));
        assert_eq!(e.data, Some(json!({"x":1})));
        let e = into_result(json!({"id":1,"error":"nope"})).unwrap_err();
        assert_eq!(e.status, crate::Status::ProtocolError);
        assert_eq!(
            into_result(json!({"id":1})).unwrap_err().status,
            crate::Status::ProtocolError
        );
    }

    #[test]
    fn brief_truncates_on_a_char_boundary() {
        let long = Value::from("é".repeat(300));
        assert!(brief(&long).len() < 220);
    }
}
