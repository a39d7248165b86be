//! What the HTTP transport needs to know about an outgoing message (its method, what the
//! routing headers mirror, the envelope's version), read from the frame it is about to send.
//!
//! The frame was encoded a moment ago by the engine; most of it is a request's params, often a
//! tool's arguments. One pass of `protocol::scan` finds the few members wanted and skips the
//! rest without building anything; the params are parsed into a tree only when something must
//! look deeper (a tool whose schema declares headers, a `tools/list` whose result is learned).
//! A frame the scan does not read plainly (a member name spelled with escapes, say) is parsed
//! whole, as before.

use crate::error::{Error, Result};
use crate::protocol::envelope::PROTOCOL_VERSION_KEY;
use crate::protocol::scan::Scan;
use serde_json::Value;
use std::cell::OnceCell;

/// Nesting allowed in a frame read by the scan (serde_json's own limit); deeper goes to the
/// general parser, which refuses it.
const MAX_DEPTH: usize = 127;

#[derive(Debug, Default)]
pub struct MessageInfo {
    pub method: Option<String>,
    /// `params.name`, `params.uri` and `params.taskId`, each when a string.
    name: Option<String>,
    uri: Option<String>,
    task_id: Option<String>,
    /// `params._meta[PROTOCOL_VERSION_KEY]`, when a string.
    version: Option<String>,
    /// The params' text, for [`MessageInfo::params`].
    params_text: Option<Box<str>>,
    params: OnceCell<Option<Value>>,
}

impl MessageInfo {
    pub fn parse(frame: &str) -> Result<MessageInfo> {
        match scan_frame(frame) {
            Some(info) => Ok(info),
            None => parse_tree(frame),
        }
    }

    pub fn is(&self, method: &str) -> bool {
        self.method.as_deref() == Some(method)
    }

    /// The modern envelope's protocol version, when the message carries one.
    pub fn envelope_version(&self) -> Option<&str> {
        self.version.as_deref()
    }

    /// What `Mcp-Name` mirrors: `params.name`, else `params.uri`, else (the tasks extension's
    /// `tasks/*`) `params.taskId`, when a string.
    pub fn name(&self) -> Option<&str> {
        [&self.name, &self.uri, &self.task_id]
            .into_iter()
            .find_map(Option::as_deref)
    }

    /// `params.name`, when a string: a `tools/call`'s tool.
    pub fn tool_name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The params as a tree, built on first use.
    pub fn params(&self) -> Option<&Value> {
        self.params
            .get_or_init(|| {
                let text = self.params_text.as_deref()?;
                serde_json::from_str(text).ok()
            })
            .as_ref()
    }
}

/// The general parser's reading, for frames the scan leaves alone.
fn parse_tree(frame: &str) -> Result<MessageInfo> {
    let mut value: Value = serde_json::from_str(frame)
        .map_err(|e| Error::invalid(format!("the frame to send is not JSON: {e}")))?;
    let params = value.get_mut("params").map(Value::take);
    let string_at = |key: &str| {
        let value = params.as_ref()?.get(key)?;
        value.as_str().map(str::to_owned)
    };
    let version = params
        .as_ref()
        .and_then(|p| p.get("_meta")?.get(PROTOCOL_VERSION_KEY)?.as_str())
        .map(str::to_owned);
    Ok(MessageInfo {
        method: value
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned),
        name: string_at("name"),
        uri: string_at("uri"),
        task_id: string_at("taskId"),
        version,
        params_text: None,
        params: OnceCell::from(params),
    })
}

/// The scan's reading: `None` when the frame is anything but a plainly spelled object (then
/// the general parser decides, errors included).
fn scan_frame(frame: &str) -> Option<MessageInfo> {
    let mut scan = Scan::new(frame.as_bytes());
    let mut info = MessageInfo::default();
    scan.whitespace();
    members(&mut scan, MAX_DEPTH, |scan, name, depth| match name {
        b"method" => {
            info.method = string_value(scan, depth)?;
            Some(())
        }
        b"params" => {
            let start = scan.position();
            match scan.peek()? {
                b'{' => params(scan, depth, &mut info)?,
                _ => scan.value(depth)?,
            }
            // Both ends are at ASCII bytes (a value's first and the one after it).
            info.params_text = Some(frame.get(start..scan.position())?.into());
            Some(())
        }
        _ => scan.value(depth),
    })?;
    scan.whitespace();
    scan.at_end().then_some(info)
}

/// The members of `params` that are mirrored or read.
fn params(scan: &mut Scan, depth: usize, info: &mut MessageInfo) -> Option<()> {
    members(scan, depth, |scan, name, depth| {
        let slot = match name {
            b"name" => &mut info.name,
            b"uri" => &mut info.uri,
            b"taskId" => &mut info.task_id,
            b"_meta" if scan.peek()? == b'{' => {
                return members(scan, depth, |scan, name, depth| match name {
                    _ if name == PROTOCOL_VERSION_KEY.as_bytes() => {
                        info.version = string_value(scan, depth)?;
                        Some(())
                    }
                    _ => scan.value(depth),
                });
            }
            _ => return scan.value(depth),
        };
        *slot = string_value(scan, depth)?;
        Some(())
    })
}

/// An object whose member names are plain (no escapes): each member's value is left to
/// `member(scan, name, depth left)`, which must take it.
fn members<'a>(
    scan: &mut Scan<'a>,
    depth: usize,
    mut member: impl FnMut(&mut Scan<'a>, &[u8], usize) -> Option<()>,
) -> Option<()> {
    scan.members(depth, |scan, name, escaped, depth| match escaped {
        true => None,
        false => member(scan, name, depth),
    })
}

/// A value that is read only when it is a string (`None` inside for any other value, as the
/// tree's `as_str` would say); escapes are decoded by serde_json.
fn string_value(scan: &mut Scan, depth: usize) -> Option<Option<String>> {
    if scan.peek()? != b'"' {
        scan.value(depth)?;
        return Some(None);
    }
    let (body, escaped) = scan.string()?;
    if !escaped {
        return Some(Some(std::str::from_utf8(body).ok()?.to_owned()));
    }
    let mut quoted = Vec::with_capacity(body.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(body);
    quoted.push(b'"');
    serde_json::from_slice(&quoted).ok().map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Both readings of a frame agree on everything the transport asks.
    fn same(frame: &str) {
        let scanned = scan_frame(frame).expect("read by the scan");
        let tree = parse_tree(frame).unwrap();
        assert_eq!(scanned.method, tree.method, "{frame}");
        assert_eq!(scanned.name(), tree.name(), "{frame}");
        assert_eq!(
            scanned.envelope_version(),
            tree.envelope_version(),
            "{frame}"
        );
        assert_eq!(scanned.params(), tree.params(), "{frame}");
    }

    #[test]
    fn the_scan_reads_what_the_tree_reads() {
        for frame in [
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "x\"y", "name": "inner"}}}),
            json!({"id": 1, "method": "resources/read", "params": {"uri": "a\r\nb é"}}),
            json!({"id": 1, "method": "tasks/get", "params": {"taskId": "t-1", "name": 3}}),
            json!({"id": 1, "method": "tools/list"}),
            json!({"id": 1, "method": "server/discover", "params": {"_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "c"}}}}),
            json!({"id": 1, "method": "x", "params": [1, 2]}),
            json!({"method": "notifications/initialized"}),
            json!({"id": 1, "result": {"name": "not params"}}),
        ] {
            same(&frame.to_string());
        }
        // Spellings serde_json would not write: escapes, a duplicate member, whitespace.
        same(
            r#" { "method" : "tools/call" , "params" : { "name" : "a\u00e9\n" , "name" : "last" } } "#,
        );
        same(r#"{"method":"m","params":{"name":"\ud83d\ude00"}}"#);
    }

    #[test]
    fn what_the_scan_leaves_goes_to_the_general_parser() {
        // A member name spelled with an escape.
        let frame = r#"{"method":"m","params":{"n\u0061me":"x"}}"#;
        assert!(scan_frame(frame).is_none());
        assert_eq!(MessageInfo::parse(frame).unwrap().name(), Some("x"));
        // Not JSON: the general parser's error.
        let error = MessageInfo::parse(r#"{"method":"m""#).unwrap_err();
        assert!(
            error.message.starts_with("the frame to send is not JSON"),
            "{error}"
        );
    }
}
