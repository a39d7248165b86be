//! A request's params on their way to the wire: a JSON object as a tree, and at most one member
//! kept as JSON text the host handed us (a tool's or a prompt's arguments from the C API). The
//! text was checked once (valid JSON, an object) and is written into the frame as it is: no
//! tree is built only to be encoded again. The library adds its own members (`_meta`,
//! `inputResponses`, `task`...) to the tree; it never looks into the text. A tool's or a
//! prompt's name is kept as a string beside the tree, not in it: a map built and dropped for
//! every call only to hold it cost three allocations.
//!
//! In the modern era the envelope's `_meta` entries are written here too, as the frame is
//! encoded (see `envelope`).

use super::envelope::{self, Envelope};
use super::json_text;
use super::object_text::ObjectText;
use serde_json::{Map, Value};

#[derive(Clone, Debug)]
pub struct Params {
    /// The member `name`, written before the tree's, unless the tree has one of that name.
    name: Option<String>,
    /// A JSON object (callers check, and refuse anything else).
    pub tree: Value,
    /// A member written after the tree's, unless the tree has one of that name.
    text: Option<(&'static str, ObjectText)>,
}

impl Params {
    /// `{"name": name}`, for a tool's or a prompt's params.
    pub fn named(name: impl Into<String>) -> Params {
        Params {
            name: Some(name.into()),
            ..Params::empty()
        }
    }

    /// These params with the member `key` whose value is `text`.
    pub fn and_text(self, key: &'static str, text: ObjectText) -> Params {
        Params {
            text: Some((key, text)),
            ..self
        }
    }

    /// An object with no members.
    pub fn empty() -> Params {
        Params::from(Value::Object(Map::new()))
    }
}

impl From<Value> for Params {
    fn from(tree: Value) -> Params {
        Params {
            name: None,
            tree,
            text: None,
        }
    }
}

/// Appends `params` (absent ones are left out) as JSON text, with the envelope's entries in
/// `_meta` when there is an envelope (then the params are always written, as `_meta` is
/// required). The caller's `_meta` entries are kept; the envelope's reserved keys win.
pub fn write(out: &mut String, params: Option<&Params>, envelope: Option<&Envelope>) {
    let plain = params.filter(|p| p.text.is_none() && p.name.is_none() && envelope.is_none());
    if let Some(params) = plain {
        return json_text::write_value(out, &params.tree);
    }
    if params.is_none() && envelope.is_none() {
        return;
    }
    let tree = params.and_then(|p| p.tree.as_object());
    let text = params.and_then(|p| p.text.as_ref());
    let in_tree = |key: &str| tree.is_some_and(|t| t.contains_key(key));
    out.push('{');
    let mut first = true;
    if let Some(name) = params.and_then(|p| p.name.as_deref()) {
        if !in_tree("name") {
            write_member(out, &mut first, "name", |out| {
                json_text::write_str(out, name)
            });
        }
    }
    for (key, value) in tree.into_iter().flatten() {
        if !(envelope.is_some() && key == "_meta") {
            write_member(out, &mut first, key, |out| {
                json_text::write_value(out, value)
            });
        }
    }
    if let Some((key, text)) = text.filter(|(key, _)| !in_tree(key)) {
        write_member(out, &mut first, key, |out| out.push_str(text.as_str()));
    }
    if let Some(envelope) = envelope {
        write_member(out, &mut first, "_meta", |out| {
            out.push('{');
            let meta = tree.and_then(|t| t.get("_meta")).and_then(Value::as_object);
            for (key, value) in meta.into_iter().flatten() {
                if !envelope::is_reserved(key) {
                    write_member(out, &mut true, key, |out| {
                        json_text::write_value(out, value)
                    });
                    out.push(',');
                }
            }
            out.push_str(envelope.members());
            out.push('}');
        });
    }
    out.push('}');
}

fn write_member(out: &mut String, first: &mut bool, key: &str, value: impl FnOnce(&mut String)) {
    if !std::mem::take(first) {
        out.push(',');
    }
    json_text::write_str(out, key);
    out.push(':');
    value(out);
}

/// The length of what `write` appends, escapes aside (and a little over with an envelope, or
/// when members are dropped): the frame's buffer is allocated once.
pub fn estimated_len(params: Option<&Params>, envelope: Option<&Envelope>) -> usize {
    let tree = params.map_or(0, |p| json_text::estimated_len(&p.tree));
    // `"name":"",` and the name.
    let name = params
        .and_then(|p| p.name.as_ref())
        .map_or(0, |name| name.len() + 10);
    // `,"key":` and the text.
    let text = params
        .and_then(|p| p.text.as_ref())
        .map_or(0, |(key, text)| key.len() + 4 + text.as_str().len());
    let meta = envelope.map_or(0, |e| r#"{,"_meta":{}}"#.len() + e.members().len());
    name + tree + text + meta
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn written(params: Option<&Params>, envelope: Option<&Envelope>) -> String {
        let mut out = String::new();
        write(&mut out, params, envelope);
        out
    }

    fn text(json: &str) -> ObjectText {
        ObjectText::new(json).unwrap()
    }

    #[test]
    fn a_tree_alone_is_written_as_serde_json_writes_it() {
        let tree = json!({"name": "t", "arguments": {"a": [1, "é\n"]}});
        let params = Params::from(tree.clone());
        assert_eq!(written(Some(&params), None), tree.to_string());
        assert_eq!(written(None, None), "");
        let len = estimated_len(Some(&params), None);
        assert!(len >= written(Some(&params), None).len() - 1, "one escape");
    }

    #[test]
    fn the_text_member_goes_in_as_it_is() {
        let spelled = r#"{ "b" : 1.50, "a":"\u00e9" }"#;
        for tree in [json!({"name": "t"}), json!({})] {
            let params = Params::from(tree.clone()).and_text("arguments", text(spelled));
            let out = written(Some(&params), None);
            assert!(out.contains(spelled), "the host's own spelling: {out}");
            let back: Value = serde_json::from_str(&out).unwrap();
            let mut expected = tree;
            expected["arguments"] = serde_json::from_str(spelled).unwrap();
            assert_eq!(back, expected);
            assert!(estimated_len(Some(&params), None) >= out.len());
        }
    }

    #[test]
    fn a_tree_member_of_the_same_name_wins() {
        let params = Params::from(json!({"arguments": 1})).and_text("arguments", text("{}"));
        assert_eq!(written(Some(&params), None), r#"{"arguments":1}"#);
        let mut params = Params::named("kept out");
        params.tree["name"] = json!("tree");
        assert_eq!(written(Some(&params), None), r#"{"name":"tree"}"#);
    }

    #[test]
    fn a_name_goes_first_escaped_and_the_rest_follows() {
        let params = Params::named("a\"b\u{7}é");
        let out = written(Some(&params), None);
        assert_eq!(out, r#"{"name":"a\"b\u0007é"}"#);
        assert!(
            estimated_len(Some(&params), None) >= out.len() - 5,
            "escapes aside"
        );
        let mut params = Params::named("t").and_text("arguments", text(r#"{"x": 1}"#));
        params.tree["task"] = json!({});
        let out = written(Some(&params), None);
        assert_eq!(out, r#"{"name":"t","task":{},"arguments":{"x": 1}}"#);
        assert!(estimated_len(Some(&params), None) >= out.len());
        let envelope = Envelope::new("2026-07-28", &json!({"name": "c"}), &json!({}));
        let back: Value =
            serde_json::from_str(&written(Some(&Params::named("t")), Some(&envelope))).unwrap();
        assert_eq!(back["name"], "t");
        assert_eq!(back["_meta"][envelope::PROTOCOL_VERSION_KEY], "2026-07-28");
    }

    #[test]
    fn with_an_envelope_the_text_and_the_meta_are_both_there() {
        let envelope = Envelope::new("2026-07-28", &json!({"name": "c"}), &json!({}));
        let tree = json!({"name": "t", "_meta": {"progressToken": 3}});
        let params = Params::from(tree).and_text("arguments", text(r#"{"x":"y"}"#));
        let out = written(Some(&params), Some(&envelope));
        let back: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(back["arguments"], json!({"x": "y"}));
        assert_eq!(back["name"], "t");
        assert_eq!(back["_meta"]["progressToken"], 3);
        assert_eq!(back["_meta"][envelope::PROTOCOL_VERSION_KEY], "2026-07-28");
        assert!(estimated_len(Some(&params), Some(&envelope)) >= out.len());
        let bare: Value = serde_json::from_str(&written(None, Some(&envelope))).unwrap();
        assert_eq!(bare["_meta"][envelope::CLIENT_INFO_KEY]["name"], "c");
    }
}
