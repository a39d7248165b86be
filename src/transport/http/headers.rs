//! The headers of each HTTP request: content negotiation, the host's own headers, the session
//! and version of the legacy era, and the routing headers mirrored from the body (`Mcp-Method`,
//! `Mcp-Name`, and in the modern era `Mcp-Param-*` for tools whose schemas declare them).

use crate::error::{Error, Result};
use crate::protocol::{header_value, mcp_header, methods};
use serde_json::Value;
use std::collections::HashMap;

pub use super::message_info::MessageInfo;

pub const ACCEPT_BOTH: &str = "application/json, text/event-stream";
pub const ACCEPT_SSE: &str = "text/event-stream";
pub const SESSION_ID: &str = "Mcp-Session-Id";
pub const PROTOCOL_VERSION: &str = "MCP-Protocol-Version";
pub const LAST_EVENT_ID: &str = "Last-Event-ID";
const METHOD: &str = "Mcp-Method";
const NAME: &str = "Mcp-Name";
const PARAM_PREFIX: &str = "Mcp-Param-";

/// Headers the transport sets itself; the host may not set them.
const RESERVED: [&str; 7] = [
    "accept",
    "content-type",
    "mcp-session-id",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "last-event-id",
];

/// Headers that shape the HTTP exchange itself (framing, the connection, the 100-continue
/// handshake, a protocol switch). The HTTP client owns them: a host's value would corrupt the
/// framing or stall every request (`Expect: 100-continue` waits a second for a reply that an
/// MCP server never sends).
const EXCHANGE: [&str; 10] = [
    "connection",
    "content-length",
    "expect",
    "host",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// The longest value, as sent, of a header mirrored from the body (`Mcp-Name`, `Mcp-Param-*`):
/// servers commonly cap a header line at 8 to 16 KiB. A longer one refuses the request.
pub const MAX_MIRRORED_VALUE_BYTES: usize = 8 * 1024;
/// The most header bytes (names, values, separators) one request may carry, the host's and
/// ours together; far below what the HTTP client can buffer (128 KiB).
pub const MAX_HEADER_BYTES: usize = 64 * 1024;

/// The longest session id (`Mcp-Session-Id`) a server may hand out. It goes back in every
/// request's headers, so a longer one would leave the host's headers no room in
/// [`MAX_HEADER_BYTES`]: it is the server's fault, and connect fails with PROTOCOL_ERROR.
pub const MAX_SESSION_ID_BYTES: usize = 8 * 1024;

/// At most this many tools' header declarations are remembered.
const MAX_TOOLS: usize = 1000;

pub type Headers = Vec<(String, String)>;

/// Checks the host's extra headers: RFC 9110 names, values without control characters (so no
/// CR or LF), and none of the headers the transport sets itself.
pub fn check_extra(headers: &[(String, String)]) -> Result<()> {
    for (name, value) in headers {
        if name.is_empty() || !name.bytes().all(is_token_char) {
            return Err(Error::invalid(format!(
                "{name:?} is not a valid HTTP header name"
            )));
        }
        let lower = name.to_ascii_lowercase();
        if EXCHANGE.contains(&lower.as_str()) {
            return Err(Error::invalid(format!(
                "the header {name} changes the HTTP exchange itself; the transport manages it"
            )));
        }
        if RESERVED.contains(&lower.as_str()) || lower.starts_with("mcp-param-") {
            return Err(Error::invalid(format!(
                "the header {name} is set by the transport itself"
            )));
        }
        if value.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f) {
            return Err(Error::invalid(format!(
                "the value of header {name} contains a control character (CR, LF, NUL...)"
            )));
        }
    }
    let total = size(headers);
    if total > MAX_HEADER_BYTES {
        return Err(Error::invalid(format!(
            "the extra headers take {total} bytes, over the limit of {MAX_HEADER_BYTES} bytes \
             for all the headers of a request"
        )));
    }
    Ok(())
}

/// Checks, before anything is sent, that a request's headers fit: each mirrored value within
/// [`MAX_MIRRORED_VALUE_BYTES`], all of them within [`MAX_HEADER_BYTES`]. Values are never
/// quoted in the message (they may be secrets).
pub fn check_size(base: &Headers, routing: &Headers) -> Result<()> {
    if let Some((name, value)) = routing
        .iter()
        .find(|(_, value)| value.len() > MAX_MIRRORED_VALUE_BYTES)
    {
        return Err(Error::invalid(format!(
            "the {name} header mirrored from the request would take {} bytes, over the limit \
             of {MAX_MIRRORED_VALUE_BYTES} bytes per mirrored header value; nothing was sent",
            value.len()
        )));
    }
    let total = size(base) + size(routing);
    if total > MAX_HEADER_BYTES {
        return Err(Error::invalid(format!(
            "the request's headers would take {total} bytes, over the limit of \
             {MAX_HEADER_BYTES} bytes; nothing was sent"
        )));
    }
    Ok(())
}

/// Bytes on the wire: `name: value` and CRLF.
fn size(headers: &[(String, String)]) -> usize {
    headers
        .iter()
        .map(|(name, value)| name.len() + value.len() + 4)
        .sum()
}

/// RFC 9110 `tchar`.
fn is_token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The routing headers of a request or notification POST.
pub fn routing(info: &MessageInfo, tools: Option<&ToolHeaders>) -> Headers {
    let mut headers = Headers::new();
    if let Some(method) = &info.method {
        headers.push((METHOD.into(), header_value::encode(method)));
    }
    if let Some(name) = info.name() {
        headers.push((NAME.into(), header_value::encode(name)));
    }
    if let (Some(tools), true) = (tools, info.is(methods::TOOLS_CALL)) {
        headers.extend(tools.params_for(info));
    }
    headers
}

/// The `x-mcp-header` declarations of the tools seen in `tools/list` results (modern era).
#[derive(Debug, Default)]
pub struct ToolHeaders {
    /// Tool name -> (header name, property path) for each declaration.
    tools: HashMap<String, Vec<(String, Vec<String>)>>,
}

impl ToolHeaders {
    /// Learns from one `tools/list` page. A complete listing (asked without a cursor, answered
    /// without a next one) replaces what was known; a page adds to it.
    pub fn learn(&mut self, request_params: Option<&Value>, result: &Value) {
        let asked_with_cursor = request_params.is_some_and(|p| p.get("cursor").is_some());
        let has_next = result.get("nextCursor").is_some_and(|c| !c.is_null());
        if !asked_with_cursor && !has_next {
            self.tools.clear();
        }
        let Some(tools) = result.get("tools").and_then(Value::as_array) else {
            return;
        };
        for tool in tools {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            // An invalid declaration makes the whole tool mirror nothing.
            let declared = match mcp_header::check_tool(tool) {
                Ok(()) => declarations(tool.get("inputSchema")),
                Err(_) => Vec::new(),
            };
            if declared.is_empty() {
                self.tools.remove(name);
            } else if self.tools.len() < MAX_TOOLS || self.tools.contains_key(name) {
                self.tools.insert(name.to_owned(), declared);
            }
        }
    }

    /// The `Mcp-Param-*` headers for a `tools/call`.
    fn params_for(&self, info: &MessageInfo) -> Headers {
        // The tree of the params is built only for a tool that declares headers.
        let Some(declared) = info.tool_name().and_then(|name| self.tools.get(name)) else {
            return Headers::new();
        };
        let Some(params) = info.params() else {
            return Headers::new();
        };
        let arguments = params.get("arguments");
        declared
            .iter()
            .filter_map(|(header, path)| {
                let value = path
                    .iter()
                    .try_fold(arguments?, |node, key| node.get(key))?;
                let rendered = header_value::render_param(value)?;
                Some((format!("{PARAM_PREFIX}{header}"), rendered))
            })
            .collect()
    }
}

/// Every `x-mcp-header` reachable through `properties` keys, with its path. Only called on
/// schemas that `mcp_header::check_tool` accepted.
fn declarations(schema: Option<&Value>) -> Vec<(String, Vec<String>)> {
    fn walk(node: &Value, path: &mut Vec<String>, found: &mut Vec<(String, Vec<String>)>) {
        let Some(properties) = node.get("properties").and_then(Value::as_object) else {
            return;
        };
        for (key, property) in properties {
            path.push(key.clone());
            if let Some(header) = property.get("x-mcp-header").and_then(Value::as_str) {
                found.push((header.to_owned(), path.clone()));
            }
            walk(property, path, found);
            path.pop();
        }
    }
    let mut found = Vec::new();
    if let Some(schema) = schema {
        walk(schema, &mut Vec::new(), &mut found);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn info(frame: Value) -> MessageInfo {
        MessageInfo::parse(&frame.to_string()).unwrap()
    }

    fn header<'a>(headers: &'a Headers, name: &str) -> Option<&'a str> {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn method_and_name_are_mirrored_and_encoded() {
        let call = info(json!({"id": 1, "method": "tools/call", "params": {"name": "echo"}}));
        let headers = routing(&call, None);
        assert_eq!(header(&headers, "Mcp-Method"), Some("tools/call"));
        assert_eq!(header(&headers, "Mcp-Name"), Some("echo"));

        let read = info(json!({"id": 1, "method": "resources/read", "params": {"uri": "a\r\nb"}}));
        assert_eq!(
            header(&routing(&read, None), "Mcp-Name"),
            Some("=?base64?YQ0KYg==?=")
        );
        let list = info(json!({"id": 1, "method": "tools/list"}));
        assert_eq!(header(&routing(&list, None), "Mcp-Name"), None);
        let poll = info(json!({"id": 1, "method": "tasks/get", "params": {"taskId": "t-1"}}));
        assert_eq!(header(&routing(&poll, None), "Mcp-Name"), Some("t-1"));
    }

    #[test]
    fn envelope_version_is_read_from_meta() {
        let probe = info(json!({"id": 1, "method": "server/discover",
            "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}));
        assert_eq!(probe.envelope_version(), Some("2026-07-28"));
        assert_eq!(info(json!({"method": "x"})).envelope_version(), None);
    }

    #[test]
    fn extra_headers_are_checked() {
        let ok = vec![("Authorization".to_owned(), "Bearer abc\tdef".to_owned())];
        assert!(check_extra(&ok).is_ok());
        for (name, value) in [
            ("X-Evil", "a\r\nInjected: 1"),
            ("X-Evil", "nul\0"),
            ("Bad Name", "v"),
            ("", "v"),
            ("Bad:Name", "v"),
            ("mcp-session-id", "forged"),
            ("Content-Length", "3"),
            ("expect", "100-continue"),
            ("Upgrade", "websocket"),
            ("TE", "trailers"),
            ("Mcp-Param-Region", "x"),
        ] {
            let headers = vec![(name.to_owned(), value.to_owned())];
            assert!(check_extra(&headers).is_err(), "{name:?}: {value:?}");
        }
    }

    fn listing(tools: Value, next: Option<&str>) -> Value {
        let mut result = json!({ "tools": tools });
        if let Some(next) = next {
            result["nextCursor"] = next.into();
        }
        result
    }

    fn tool(name: &str, properties: Value) -> Value {
        json!({"name": name, "inputSchema": {"type": "object", "properties": properties}})
    }

    #[test]
    fn params_are_mirrored_for_declared_tools_only() {
        let mut tools = ToolHeaders::default();
        tools.learn(
            None,
            &listing(
                json!([
                    tool(
                        "geo",
                        json!({
                            "region": {"type": "string", "x-mcp-header": "Region"},
                            "opts": {"type": "object", "properties": {
                                "n": {"type": "integer", "x-mcp-header": "Count"}}},
                            "plain": {"type": "string"}
                        })
                    ),
                    tool(
                        "bad",
                        json!({"r": {"type": "number", "x-mcp-header": "Ratio"}})
                    ),
                ]),
                None,
            ),
        );
        let call = |name: &str, arguments: Value| {
            let frame = json!({"id": 1, "method": "tools/call",
                "params": {"name": name, "arguments": arguments}});
            routing(&info(frame), Some(&tools))
        };
        let headers = call(
            "geo",
            json!({"region": "eu\nwest", "opts": {"n": 3}, "plain": "x"}),
        );
        assert_eq!(
            header(&headers, "Mcp-Param-Region"),
            Some("=?base64?ZXUKd2VzdA==?=")
        );
        assert_eq!(header(&headers, "Mcp-Param-Count"), Some("3"));
        assert_eq!(headers.len(), 4, "{headers:?}");
        // Absent and null values leave the header out.
        let headers = call("geo", json!({"region": null}));
        assert_eq!(header(&headers, "Mcp-Param-Region"), None);
        // A tool with an invalid declaration mirrors nothing.
        assert_eq!(
            header(&call("bad", json!({"r": 1.5})), "Mcp-Param-Ratio"),
            None
        );
        // Not a tools/call: nothing.
        let other = info(json!({"id": 1, "method": "prompts/get", "params": {"name": "geo"}}));
        assert_eq!(routing(&other, Some(&tools)).len(), 2);
    }

    #[test]
    fn a_complete_listing_replaces_and_pages_add() {
        let mut tools = ToolHeaders::default();
        let geo = tool(
            "geo",
            json!({"region": {"type": "string", "x-mcp-header": "Region"}}),
        );
        let sky = tool(
            "sky",
            json!({"color": {"type": "string", "x-mcp-header": "Color"}}),
        );
        tools.learn(None, &listing(json!([geo]), Some("c1")));
        tools.learn(Some(&json!({"cursor": "c1"})), &listing(json!([sky]), None));
        assert_eq!(tools.tools.len(), 2);
        tools.learn(None, &listing(json!([]), None));
        assert!(tools.tools.is_empty());
    }
}
