//! A JSON object held as text: checked once when it is made, then written into requests as it
//! is. The C API's tool and prompt arguments arrive this way, so a call reads the host's text
//! once (`protocol::scan`) instead of checking its UTF-8, then its JSON, then copying it.

use super::scan::Scan;
use crate::error::{Error, Result};
use serde_json::value::RawValue;
use std::sync::Arc;

/// The deepest nesting allowed: what serde_json's parser accepts (its limit of 128 levels, less
/// the one it counts at the limit), so what a server built on it would refuse is refused here.
const MAX_DEPTH: usize = 127;

/// JSON text that is one object: valid JSON (UTF-8, strict syntax) whose value is an object,
/// kept as written (its key order, escapes and number spellings) without the whitespace around
/// it. Made with [`ObjectText::new`], or from a serde_json `RawValue`.
///
/// Shared, not copied, when cloned: a C request started many times (or each time it is started:
/// the started call takes its own copy of the request) carries one text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectText(Arc<str>);

impl ObjectText {
    /// Checks `text`: INVALID_ARGUMENT unless it is one JSON object.
    pub fn new(text: &str) -> Result<ObjectText> {
        ObjectText::from_bytes(text.as_bytes(), "the JSON text")
    }

    /// As [`ObjectText::new`], for bytes not yet known to be UTF-8; a refusal names them
    /// `what` ("tool arguments is not valid JSON: ...").
    pub(crate) fn from_bytes(bytes: &[u8], what: &str) -> Result<ObjectText> {
        let mut scan = Scan::new(bytes);
        scan.whitespace();
        let start = scan.position();
        if scan.peek() != Some(b'{') || scan.value(MAX_DEPTH).is_none() {
            return Err(match scan.too_deep() {
                true => Error::invalid(format!("{what} nests deeper than {MAX_DEPTH} levels")),
                false => refusal(bytes, what),
            });
        }
        let end = scan.position();
        scan.whitespace();
        if !scan.at_end() {
            return Err(refusal(bytes, what));
        }
        let body = &bytes[start..end];
        let text = match scan.ascii_only() {
            // SAFETY: the scan accepted every byte of `body`, and takes a byte above 0x7F only
            // as part of a checked UTF-8 character (which makes `ascii_only` false): all ASCII.
            true => unsafe { std::str::from_utf8_unchecked(body) },
            false => std::str::from_utf8(body).map_err(|_| refusal(bytes, what))?,
        };
        debug_assert!(std::str::from_utf8(text.as_bytes()).is_ok());
        Ok(ObjectText(text.into()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<Box<RawValue>> for ObjectText {
    type Error = Error;

    /// A raw value is valid JSON already: only whether it is an object is checked.
    fn try_from(raw: Box<RawValue>) -> Result<ObjectText> {
        match raw.get().starts_with('{') {
            true => Ok(ObjectText(Arc::from(raw.get()))),
            false => Err(Error::invalid("the JSON text must be a JSON object")),
        }
    }
}

/// Why text was refused, in the words the C API has always used: told by serde_json, which
/// takes its time over it (only refused text comes here).
fn refusal(bytes: &[u8], what: &str) -> Error {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Error::invalid(format!("{what} is not valid UTF-8"));
    };
    match serde_json::from_str::<serde_json::Value>(text) {
        Err(e) => Error::invalid(format!("{what} is not valid JSON: {e}")),
        Ok(value) if !value.is_object() => Error::invalid(format!("{what} must be a JSON object")),
        // Not expected: the scan refuses only what serde_json refuses.
        Ok(_) => Error::invalid(format!("{what} is not valid JSON")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_is_kept_as_written_without_the_whitespace_around_it() {
        let text = ObjectText::new(" \n{ \"b\" : 1.50, \"a\":\"\\u00e9\", \"é\": [] }\t").unwrap();
        assert_eq!(
            text.as_str(),
            "{ \"b\" : 1.50, \"a\":\"\\u00e9\", \"é\": [] }"
        );
    }

    #[test]
    fn anything_else_is_refused_with_the_reason() {
        for (bytes, reason) in [
            (&b"[1]"[..], "x must be a JSON object"),
            (b"\"s\"", "x must be a JSON object"),
            (b"{\"a\":1", "x is not valid JSON: EOF while parsing"),
            (b"{} {}", "x is not valid JSON: trailing characters"),
            (b"{\"a\":\"\xff\"}", "x is not valid UTF-8"),
            (b"", "x is not valid JSON: EOF while parsing"),
        ] {
            let error = ObjectText::from_bytes(bytes, "x").unwrap_err();
            assert!(
                error.message.starts_with(reason),
                "{bytes:x?}: {}",
                error.message
            );
        }
    }

    #[test]
    fn nesting_is_refused_where_serde_json_refuses_it() {
        for depth in [126, 127, 128, 129, 10_000] {
            let text = format!("{}{}", r#"{"a":"#.repeat(depth), "}".repeat(depth))
                .replacen("{\"a\":}", "{}", 1);
            let serde = serde_json::from_str::<serde_json::Value>(&text).is_ok();
            let ours = ObjectText::new(&text);
            assert_eq!(ours.is_ok(), serde, "depth {depth}");
            if let Err(error) = ours {
                assert_eq!(error.message, "the JSON text nests deeper than 127 levels");
            }
        }
    }

    #[test]
    fn a_raw_value_must_be_an_object() {
        let raw = |text: &str| RawValue::from_string(text.into()).unwrap();
        assert_eq!(
            ObjectText::try_from(raw(r#"{"a":1}"#)).unwrap().as_str(),
            r#"{"a":1}"#
        );
        assert!(ObjectText::try_from(raw("[1]")).is_err());
    }
}
