//! `x-mcp-header` annotations on tool input schemas (SEP-2243): a modern client must drop
//! tools whose annotations are invalid and keep the rest.

use serde_json::Value;
use std::collections::HashSet;

const ANNOTATION: &str = "x-mcp-header";

/// The most bytes the header names one tool declares may take, `Mcp-Param-` included. Each
/// goes into every call of the tool, and all of a request's headers share 64 KiB: past this, the
/// server's annotations would fail the host's calls, so the annotation is invalid.
pub const MAX_DECLARED_NAME_BYTES: usize = 8 * 1024;
const PARAM_PREFIX_LEN: usize = "Mcp-Param-".len();

/// Checks a tool's `inputSchema` annotations; the error says what is wrong.
pub fn check_tool(tool: &Value) -> Result<(), String> {
    let Some(schema) = tool.get("inputSchema") else {
        return Ok(());
    };
    let mut names = HashSet::new();
    walk(schema, true, &mut names)?;
    let taken: usize = names.iter().map(|name| PARAM_PREFIX_LEN + name.len()).sum();
    match taken > MAX_DECLARED_NAME_BYTES {
        true => Err(format!(
            "its {ANNOTATION} names take {taken} bytes as headers, over the limit of \
             {MAX_DECLARED_NAME_BYTES} bytes for one tool"
        )),
        false => Ok(()),
    }
}

/// `reachable`: the node can be reached from the root through `properties` keys alone.
fn walk(node: &Value, reachable: bool, names: &mut HashSet<String>) -> Result<(), String> {
    match node {
        Value::Object(map) => {
            if let Some(name) = map.get(ANNOTATION) {
                check_annotation(name, map.get("type"), reachable, names)?;
            }
            for (key, child) in map {
                match (key.as_str(), child) {
                    ("properties", Value::Object(properties)) => {
                        for property in properties.values() {
                            walk(property, reachable, names)?;
                        }
                    }
                    // Anything else (items, anyOf, $defs, ...) leaves the properties-only path.
                    _ => walk(child, false, names)?,
                }
            }
            Ok(())
        }
        Value::Array(items) => items.iter().try_for_each(|item| walk(item, false, names)),
        _ => Ok(()),
    }
}

fn check_annotation(
    name: &Value,
    property_type: Option<&Value>,
    reachable: bool,
    names: &mut HashSet<String>,
) -> Result<(), String> {
    let Some(name) = name.as_str() else {
        return Err(format!("{ANNOTATION} must be a string, got {name}"));
    };
    if name.is_empty() || !name.bytes().all(is_token_char) {
        return Err(format!("{ANNOTATION} {name:?} is not a valid header name"));
    }
    if !names.insert(name.to_ascii_lowercase()) {
        return Err(format!("{ANNOTATION} {name:?} is used twice"));
    }
    if !reachable {
        return Err(format!(
            "{ANNOTATION} {name:?} is not on a top-level-reachable property"
        ));
    }
    match property_type.and_then(Value::as_str) {
        Some("string" | "integer" | "boolean") => Ok(()),
        other => Err(format!(
            "{ANNOTATION} {name:?} is on a property of type {}, not string, integer or boolean",
            other.unwrap_or("(none)")
        )),
    }
}

/// RFC 9110 `tchar`.
fn is_token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(properties: Value) -> Value {
        json!({"name": "t", "inputSchema": {"type": "object", "properties": properties}})
    }

    #[test]
    fn valid_annotations_pass() {
        let t = tool(json!({
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "Count"},
            "nested": {"type": "object", "properties": {"flag": {"type": "boolean", "x-mcp-header": "Flag"}}},
            "plain": {"type": "number"}
        }));
        assert_eq!(check_tool(&t), Ok(()));
        assert_eq!(check_tool(&json!({"name": "no schema"})), Ok(()));
    }

    #[test]
    fn invalid_annotations_fail() {
        let cases = [
            json!({"r": {"type": "number", "x-mcp-header": "Ratio"}}),
            json!({"r": {"type": "string", "x-mcp-header": ""}}),
            json!({"r": {"type": "string", "x-mcp-header": "Bad Name"}}),
            json!({"r": {"type": "string", "x-mcp-header": "Bad\nName"}}),
            json!({"r": {"type": "string", "x-mcp-header": 7}}),
            json!({"a": {"type": "string", "x-mcp-header": "Same"}, "b": {"type": "string", "x-mcp-header": "same"}}),
            json!({"list": {"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}}}),
            json!({"u": {"anyOf": [{"type": "string", "x-mcp-header": "U"}]}}),
            json!({"w": {"type": "string", "x-mcp-header": "W".repeat(MAX_DECLARED_NAME_BYTES)}}),
        ];
        for properties in cases {
            assert!(
                check_tool(&tool(properties.clone())).is_err(),
                "{properties}"
            );
        }
    }
}
