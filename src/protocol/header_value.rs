//! Values mirrored from a request body into HTTP headers (`Mcp-Name`, `Mcp-Param-*`, SEP-2243).
//!
//! A value travels as it is only when it is plain visible ASCII with no space at either end and
//! does not itself look like the sentinel; anything else is sent as `=?base64?<base64>?=`, so a
//! CR or LF from a tool name or a resource URI can never reach a header.

use crate::protocol::base64::base64;
use serde_json::Value;

const SENTINEL_START: &str = "=?base64?";
const SENTINEL_END: &str = "?=";

/// The largest integer a JSON number holds exactly everywhere (2^53 - 1).
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Encodes a string for a header value.
pub fn encode(value: &str) -> String {
    let plain = value.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && !value.starts_with(' ')
        && !value.ends_with(' ')
        && !looks_encoded(value);
    if plain {
        value.to_owned()
    } else {
        format!("{SENTINEL_START}{}{SENTINEL_END}", base64(value.as_bytes()))
    }
}

/// Renders an argument for an `Mcp-Param-*` header, or `None` when the header is to be left
/// out: null, absent, objects and arrays, integers beyond 2^53 - 1, non-finite numbers.
pub fn render_param(value: &Value) -> Option<String> {
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                (i.unsigned_abs() <= MAX_SAFE_INTEGER).then(|| i.to_string())?
            } else if let Some(u) = n.as_u64() {
                (u <= MAX_SAFE_INTEGER).then(|| u.to_string())?
            } else {
                let f = n.as_f64().filter(|f| f.is_finite())?;
                // An integral float prints without a fraction (42.0 -> "42").
                if f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER as f64 {
                    format!("{}", f as i64)
                } else {
                    f.to_string()
                }
            }
        }
        _ => return None,
    };
    Some(encode(&text))
}

fn looks_encoded(value: &str) -> bool {
    value.starts_with(SENTINEL_START)
        && value.ends_with(SENTINEL_END)
        && value.len() >= SENTINEL_START.len() + SENTINEL_END.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plain_values_pass_unchanged() {
        for value in [
            "echo",
            "test://items/7",
            "a b",
            "",
            "x=?base64?",
            "tab\u{7e}",
        ] {
            assert_eq!(encode(value), value);
        }
    }

    #[test]
    fn everything_else_is_wrapped() {
        assert_eq!(encode("café"), "=?base64?Y2Fmw6k=?=");
        assert_eq!(encode(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode("=?base64?abc?="), "=?base64?PT9iYXNlNjQ/YWJjPz0=?=");
        for injection in [
            "evil\r\nX-Injected: 1",
            "a\nb",
            "a\rb",
            "nul\0",
            "tab\there",
            "del\u{7f}",
        ] {
            let encoded = encode(injection);
            assert!(encoded.starts_with("=?base64?"), "{injection:?}");
            assert!(
                encoded.bytes().all(|b| (0x21..=0x7e).contains(&b)),
                "{encoded:?}"
            );
        }
    }

    #[test]
    fn params_render_by_type() {
        assert_eq!(render_param(&json!("eu-west")).as_deref(), Some("eu-west"));
        assert_eq!(render_param(&json!(true)).as_deref(), Some("true"));
        assert_eq!(render_param(&json!(-42)).as_deref(), Some("-42"));
        assert_eq!(render_param(&json!(42.0)).as_deref(), Some("42"));
        assert_eq!(render_param(&json!(1.5)).as_deref(), Some("1.5"));
        assert_eq!(
            render_param(&json!(9007199254740991u64)).as_deref(),
            Some("9007199254740991")
        );
        assert_eq!(render_param(&json!(9007199254740992u64)), None);
        assert_eq!(render_param(&json!(-9007199254740992i64)), None);
        assert_eq!(render_param(&json!(null)), None);
        assert_eq!(render_param(&json!({"a": 1})), None);
        assert_eq!(render_param(&json!([1])), None);
        assert_eq!(render_param(&json!("")).as_deref(), Some(""));
        assert_eq!(
            render_param(&json!("two\nlines")).as_deref(),
            Some("=?base64?dHdvCmxpbmVz?=")
        );
    }
}
