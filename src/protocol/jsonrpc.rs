//! JSON-RPC 2.0 framing: encoding our requests and notifications, classifying what arrives.

use crate::error::{Error, Result};
use serde_json::{json, Value};

/// JSON-RPC error codes the client itself uses.
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INTERNAL_ERROR: i64 = -32603;

/// Encodes a request. Ids are integers chosen by the client and unique per connection.
pub fn encode_request(id: i64, method: &str, params: Option<&Value>) -> String {
    let method = Value::from(method);
    match params {
        Some(params) => {
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":{method},"params":{params}}}"#)
        }
        None => format!(r#"{{"jsonrpc":"2.0","id":{id},"method":{method}}}"#),
    }
}

pub fn encode_notification(method: &str, params: Option<&Value>) -> String {
    let method = Value::from(method);
    match params {
        Some(params) => format!(r#"{{"jsonrpc":"2.0","method":{method},"params":{params}}}"#),
        None => format!(r#"{{"jsonrpc":"2.0","method":{method}}}"#),
    }
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
    let error = json!({ "code": code, "message": message });
    format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{error}}}"#)
}

/// One message from the server, sorted by kind.
#[derive(Debug, PartialEq)]
pub enum Incoming {
    /// An answer to one of our requests: the whole frame, with `result` or `error`.
    Response { id: Value, frame: Value },
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
        let line = encode_request(7, "tools/call", Some(&params));
        let back: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            back,
            json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":params})
        );
        let bare: Value = serde_json::from_str(&encode_request(1, "ping", None)).unwrap();
        assert_eq!(bare, json!({"jsonrpc":"2.0","id":1,"method":"ping"}));
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
