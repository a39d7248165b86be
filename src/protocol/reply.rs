//! A successful result as the server sent it.
//!
//! Most results pass through the library untouched: the C API hands their JSON text to the
//! host, which parses it itself. Building a `serde_json::Value` tree for such a result, walking
//! it to encode it again and freeing it was most of a call's CPU. So the stdio reader keeps a
//! plain success response's `result` as its text ([`parse_answer`]), and a [`Reply`] builds the
//! tree only when something looks inside (`Deref` to `Value`). Reading `resultType`, the one
//! field every call checks, does not need the tree: it is read from the text when the reply is
//! made. A reply changed through `DerefMut` forgets the text, so [`Reply::text`] is always the
//! result as the library would give it.
//!
//! The text is the server's own: its key order, escapes and number spellings. Skipping a value
//! checks its syntax but not serde_json's limits (numbers beyond f64, lone surrogate escapes),
//! so such a result reaches a C host as the valid JSON it is, and the Rust API as a
//! PROTOCOL_ERROR ([`Reply::try_into_value`]), as the general parser would have refused it.

use super::scan::Scan;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use std::borrow::Cow;
use std::cell::OnceCell;
use std::fmt;

pub struct Reply {
    /// The server's text, while `value` is unchanged from it, with one byte to spare (for the
    /// NUL a C string adds: the C API takes the text over as it is).
    text: Option<String>,
    /// The tree, built on first look.
    value: OnceCell<Value>,
    /// `resultType` as read from `text`.
    kind: Option<Value>,
}

impl Reply {
    /// A reply kept as the server's text (checked JSON), with its `resultType`.
    fn from_checked_text(text: &str, kind: Option<Value>) -> Reply {
        let mut owned = String::with_capacity(text.len() + 1);
        owned.push_str(text);
        Reply {
            kind,
            text: Some(owned),
            value: OnceCell::new(),
        }
    }

    /// The result's `resultType` member, without building the tree.
    pub fn result_type(&self) -> Option<&Value> {
        match (&self.text, self.value.get()) {
            (Some(_), None) => self.kind.as_ref(),
            _ => self.value().get("resultType"),
        }
    }

    /// The result as JSON text: the server's own text when it was kept and never changed.
    pub fn text(&self) -> Cow<'_, str> {
        match &self.text {
            Some(text) => Cow::Borrowed(text),
            None => Cow::Owned(crate::protocol::json_text::to_string(self.value())),
        }
    }

    /// [`Reply::text`], owned: the kept text itself, without a copy. Either way the string has
    /// room for one more byte.
    pub fn into_text(self) -> String {
        match self.text {
            Some(text) => text,
            None => crate::protocol::json_text::to_string(self.value()),
        }
    }

    /// The tree, for the Rust API: a text the tree cannot hold (valid JSON beyond serde_json's
    /// limits, such as a number out of f64's range or a lone surrogate escape, which the
    /// general parser refuses too) is a PROTOCOL_ERROR rather than a silent null.
    pub fn try_into_value(self) -> crate::error::Result<Value> {
        match (self.value.into_inner(), self.text) {
            (Some(value), _) => Ok(value),
            (None, Some(text)) => serde_json::from_str(&text).map_err(|e| {
                crate::error::Error::protocol(format!("the result cannot be read ({e})"))
            }),
            (None, None) => Ok(Value::Null),
        }
    }

    /// The tree; null for a text the tree cannot hold (see `try_into_value`).
    pub fn into_value(self) -> Value {
        match (self.value.into_inner(), self.text) {
            (Some(value), _) => value,
            (None, Some(text)) => parse(&text),
            (None, None) => Value::Null,
        }
    }

    fn value(&self) -> &Value {
        self.value.get_or_init(|| match &self.text {
            Some(text) => parse(text),
            None => Value::Null,
        })
    }
}

/// The text is JSON the reader checked whole, so it parses; were it ever to fail (nesting the
/// reader allowed and the tree refuses), the result reads as null rather than panicking.
fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

impl From<Value> for Reply {
    fn from(value: Value) -> Reply {
        Reply {
            text: None,
            value: OnceCell::from(value),
            kind: None,
        }
    }
}

impl std::ops::Deref for Reply {
    type Target = Value;
    fn deref(&self) -> &Value {
        self.value()
    }
}

impl std::ops::DerefMut for Reply {
    /// Changing the tree makes the server's text stale: it is forgotten.
    fn deref_mut(&mut self) -> &mut Value {
        self.value();
        self.text = None;
        self.value.get_mut().expect("built just above")
    }
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

impl PartialEq for Reply {
    fn eq(&self, other: &Reply) -> bool {
        self.value() == other.value()
    }
}

/// A plain success response, `{"jsonrpc": ..., "id": <integer>, "result": ...}` with nothing
/// else in it: its id and its result kept as text. `None` for anything else (requests,
/// notifications, errors, other ids, extra members, duplicate members, member names spelled
/// with escapes, bad JSON), which the general parser then handles, errors included.
///
/// The line is read once (`protocol::scan`): its syntax, its UTF-8, the result's nesting and
/// whether the result may have a `resultType` are all found in that pass.
pub fn parse_answer(line: &[u8]) -> Option<(i64, Reply)> {
    let mut scan = Scan::new(line);
    scan.whitespace();
    let (mut jsonrpc, mut id, mut result) = (false, None, None);
    // The frame's own level; the result counts its nesting from MAX_RESULT_DEPTH.
    scan.members(MAX_RESULT_DEPTH + 1, |scan, name, escaped, _| {
        match name {
            _ if escaped => return None,
            b"jsonrpc" if !jsonrpc => {
                scan.string()?;
                jsonrpc = true;
            }
            b"id" if id.is_none() => id = Some(scan.integer()?),
            b"result" if result.is_none() => result = Some(scan_result(scan)?),
            _ => return None,
        }
        Some(())
    })?;
    scan.whitespace();
    if !scan.at_end() {
        return None;
    }
    let (id, (start, end, kind)) = id.zip(result)?;
    let text = &line[start..end];
    let text = match scan.ascii_only() {
        // SAFETY: the scan accepted every byte of the line, and takes a byte above 0x7F only
        // as part of a checked UTF-8 character (which makes `ascii_only` false): all ASCII.
        true => unsafe { std::str::from_utf8_unchecked(text) },
        false => std::str::from_utf8(text).ok()?,
    };
    debug_assert!(std::str::from_utf8(text.as_bytes()).is_ok());
    let kind = match kind {
        KindSeen::Absent => None,
        KindSeen::Plain(chars) => Some(Value::String(std::str::from_utf8(chars).ok()?.into())),
        KindSeen::Parse => result_type_of(text),
    };
    Some((id, Reply::from_checked_text(text, kind)))
}

/// What the scan of a result learned of its `resultType`.
enum KindSeen<'a> {
    /// No member is, or may be, `resultType`.
    Absent,
    /// The last `resultType` is a string spelled without escapes: these are its characters.
    Plain(&'a [u8]),
    /// Only a parse can tell: a member name spelled with escapes (it may spell `resultType`),
    /// or a `resultType` that is not a plain string.
    Parse,
}

/// The result's value: where it starts and ends in the line, and what it says of its
/// `resultType` (read as the scan passes; a modern result always has one).
fn scan_result<'a>(scan: &mut Scan<'a>) -> Option<(usize, usize, KindSeen<'a>)> {
    let start = scan.position();
    let mut kind = KindSeen::Absent;
    let mut member = |scan: &mut Scan<'a>, name: &[u8], escaped: bool, depth: usize| {
        if escaped {
            kind = KindSeen::Parse;
        } else if name == b"resultType" && !matches!(kind, KindSeen::Parse) {
            if scan.peek()? == b'"' {
                let (text, escaped) = scan.string()?;
                kind = match escaped {
                    true => KindSeen::Parse,
                    false => KindSeen::Plain(text),
                };
                return Some(());
            }
            kind = KindSeen::Parse;
        }
        scan.value(depth)
    };
    match scan.peek()? {
        b'{' => scan.members(MAX_RESULT_DEPTH, &mut member)?,
        _ => scan.value(MAX_RESULT_DEPTH)?,
    }
    Some((start, scan.position(), kind))
}

/// The deepest nesting of a result the general parser accepts (serde_json's limit of 128
/// levels, less the frame around the result and the one it counts at the limit).
const MAX_RESULT_DEPTH: usize = 126;

/// `resultType` of a result's text (the last one, as the tree would keep); `None` when the
/// result is not an object or has none. Only for what the scan could not tell (`KindSeen::Parse`).
fn result_type_of(text: &str) -> Option<Value> {
    struct Kind;
    impl<'de> Visitor<'de> for Kind {
        type Value = Option<Value>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut kind = None;
            while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                match key.as_ref() {
                    "resultType" => kind = Some(map.next_value::<Value>()?),
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(kind)
        }
    }
    serde_json::Deserializer::from_str(text)
        .deserialize_map(Kind)
        .ok()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_plain_answer_is_kept_as_text() {
        let line = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a\"b"}],"z":1,"a":2}}"#;
        let (id, reply) = parse_answer(line).expect("an answer");
        assert_eq!(id, 7);
        // The server's own text and key order, escapes as sent.
        assert_eq!(
            reply.text(),
            r#"{"content":[{"type":"text","text":"a\"b"}],"z":1,"a":2}"#
        );
        assert_eq!(reply["content"][0]["text"], "a\"b");
        assert_eq!(reply.result_type(), None);
    }

    #[test]
    fn anything_but_a_plain_answer_goes_to_the_general_parser() {
        for line in [
            &br#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}"#[..],
            br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            br#"{"jsonrpc":"2.0","id":"1","result":{}}"#,
            br#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#,
            br#"{"jsonrpc":"2.0","id":-0,"result":{}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{},"extra":1}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{},"result":{}}"#,
            br#"{"jsonrpc":"2.0","result":{}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{}} trailing"#,
            br#"[1]"#,
        ] {
            assert!(
                parse_answer(line).is_none(),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
    }

    #[test]
    fn nesting_the_tree_would_refuse_is_refused_here_too() {
        for depth in [1, 100, 125, 126, 127, 128, 129, 200, 5000] {
            let line = format!(
                r#"{{"id":1,"result":{}{}}}"#,
                "[".repeat(depth),
                "]".repeat(depth)
            );
            let general = serde_json::from_str::<Value>(&line).is_ok();
            assert_eq!(
                parse_answer(line.as_bytes()).is_some(),
                general,
                "depth {depth}"
            );
            let objects = format!(
                r#"{{"id":1,"result":{}1{}}}"#,
                r#"{"a\"[":"#.repeat(depth),
                "}".repeat(depth)
            );
            let general = serde_json::from_str::<Value>(&objects).is_ok();
            assert_eq!(
                parse_answer(objects.as_bytes()).is_some(),
                general,
                "{depth} objects"
            );
        }
        // Brackets inside strings are text, not nesting.
        let quoted = format!(
            r#"{{"id":1,"result":{{"t":"{}\"{}"}}}}"#,
            "[".repeat(300),
            "{".repeat(300)
        );
        assert!(parse_answer(quoted.as_bytes()).is_some());
    }

    /// The C API takes the kept text over without looking for a NUL byte: no frame that
    /// holds one, in a string or between values, may be kept.
    #[test]
    fn a_raw_nul_is_never_kept() {
        for line in [
            &b"{\"id\":1,\"result\":{\"text\":\"a\0b\"}}"[..],
            &b"{\"id\":1,\"result\":{\"text\":\0\"ab\"}}"[..],
            &b"{\"id\":1,\"result\":{\"a\":1\0}}"[..],
        ] {
            assert!(
                parse_answer(line).is_none(),
                "{}",
                String::from_utf8_lossy(line)
            );
            assert!(serde_json::from_slice::<Value>(line).is_err());
        }
        let (_, reply) = parse_answer(br#"{"id":1,"result":{"text":"a\u0000b"}}"#).unwrap();
        let text = reply.into_text();
        assert!(!text.as_bytes().contains(&0));
        assert!(text.capacity() > text.len(), "room for the NUL");
    }

    #[test]
    fn result_type_spelled_with_escapes_is_still_found() {
        let line = br#"{"id":3,"result":{"result\u0054ype":"input_required"}}"#;
        let (_, reply) = parse_answer(line).unwrap();
        assert_eq!(reply.result_type(), Some(&json!("input_required")));
        let plain = br#"{"id":3,"result":{"text":"no such key here"}}"#;
        assert_eq!(parse_answer(plain).unwrap().1.result_type(), None);
    }

    /// Read as the scan passes, or by a parse when the scan cannot tell: the tree's answer
    /// (the last member of the name) either way.
    #[test]
    fn result_type_is_what_the_tree_says() {
        for result in [
            r#"{"resultType":"complete","content":[]}"#,
            r#"{"resultType":"a","resultType":"b"}"#,
            r#"{"resultType":5}"#,
            r#"{"resultType":{"nested":"x"},"resultType":"plain"}"#,
            r#"{"resultType":"plain","resultType":null}"#,
            r#"{"resultType":"a\u0062"}"#,
            r#"{"result\u0054ype":"escaped name","x":1}"#,
            r#"{"resultType":"first","result\u0054ype":"escaped last"}"#,
            r#"{"inner":{"resultType":"not the result's"}}"#,
            r#"["resultType"]"#,
            r#""resultType""#,
        ] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#);
            let (_, reply) = parse_answer(line.as_bytes()).expect("an answer");
            let tree: Value = serde_json::from_str(result).unwrap();
            assert_eq!(reply.result_type(), tree.get("resultType"), "{result}");
        }
    }

    #[test]
    fn result_type_is_read_from_the_text_and_follows_changes() {
        let line = br#"{"id":2,"result":{"resultType":"input_required","x":{"resultType":"no"}},"jsonrpc":"2.0"}"#;
        let (_, mut reply) = parse_answer(line).unwrap();
        assert_eq!(reply.result_type(), Some(&json!("input_required")));
        reply["resultType"] = json!("complete");
        assert_eq!(reply.result_type(), Some(&json!("complete")));
        // Changed: the text is the tree's now.
        assert_eq!(
            reply.text(),
            r#"{"resultType":"complete","x":{"resultType":"no"}}"#
        );
        let from_value = Reply::from(json!({"resultType": "task"}));
        assert_eq!(from_value.result_type(), Some(&json!("task")));
        assert_eq!(from_value.into_value(), json!({"resultType": "task"}));
    }
}
