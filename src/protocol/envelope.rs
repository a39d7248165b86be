//! The modern era's per-request envelope: `params._meta` carries the protocol version, the
//! client's identity and its capabilities on every request (never on notifications).

use super::json_text;
use serde_json::Value;
use std::sync::Arc;

pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
pub const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// The `_meta` keys the envelope owns: a caller's entries of these names are dropped.
const RESERVED: [&str; 3] = [
    PROTOCOL_VERSION_KEY,
    CLIENT_INFO_KEY,
    CLIENT_CAPABILITIES_KEY,
];

/// What every modern request says about the client. It never changes for a connection, so its
/// `_meta` entries are encoded once, when the version is settled, and written as text into
/// each request as the request is encoded (`jsonrpc::encode_request`): no per-request copy of
/// the client's info and capabilities, no map insertions, no re-encoding. Cloning is cheap.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope(Arc<Stamp>);

#[derive(Debug, PartialEq)]
struct Stamp {
    protocol_version: String,
    /// The reserved entries as JSON object members: `"key":value,"key":value,...`.
    members: String,
}

impl Envelope {
    pub fn new(protocol_version: &str, client_info: &Value, client_capabilities: &Value) -> Self {
        let mut members = String::new();
        for (i, (key, value)) in [
            (PROTOCOL_VERSION_KEY, &Value::from(protocol_version)),
            (CLIENT_INFO_KEY, client_info),
            (CLIENT_CAPABILITIES_KEY, client_capabilities),
        ]
        .into_iter()
        .enumerate()
        {
            if i > 0 {
                members.push(',');
            }
            json_text::write_str(&mut members, key);
            members.push(':');
            json_text::write_value(&mut members, value);
        }
        Envelope(Arc::new(Stamp {
            protocol_version: protocol_version.to_owned(),
            members,
        }))
    }

    pub fn protocol_version(&self) -> &str {
        &self.0.protocol_version
    }

    /// The reserved entries as JSON object members, for `params::write`.
    pub fn members(&self) -> &str {
        &self.0.members
    }
}

/// Whether `key` is one of the `_meta` keys the envelope owns.
pub fn is_reserved(key: &str) -> bool {
    RESERVED.contains(&key)
}

/// The server's implementation info from a result: `_meta[serverInfo]`, else `serverInfo`.
pub fn server_info(result: &Value) -> Option<&Value> {
    result
        .get("_meta")
        .and_then(|meta| meta.get(SERVER_INFO_KEY))
        .or_else(|| result.get("serverInfo"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::params::{self, Params};
    use serde_json::{json, Map};

    fn envelope() -> Envelope {
        Envelope::new(
            "2026-07-28",
            &json!({"name": "c \"quoted\"", "version": "1"}),
            &json!({"elicitation": {"form": {}}, "extensions": {"x/y": {"z": [1, 2.5, null]}}}),
        )
    }

    fn stamped(params: Option<&Value>) -> Value {
        let mut out = String::new();
        let params = params.map(|p| Params::from(p.clone()));
        params::write(&mut out, params.as_ref(), Some(&envelope()));
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
    }

    /// What the stamp means, on values: the caller's params with the three reserved entries
    /// set in `_meta` (made an object when absent or not one).
    fn model(params: Option<&Value>) -> Value {
        let mut params = match params {
            Some(Value::Object(map)) => map.clone(),
            _ => Map::new(),
        };
        let mut meta = match params.remove("_meta") {
            Some(Value::Object(meta)) => meta,
            _ => Map::new(),
        };
        meta.insert(PROTOCOL_VERSION_KEY.into(), json!("2026-07-28"));
        meta.insert(
            CLIENT_INFO_KEY.into(),
            json!({"name": "c \"quoted\"", "version": "1"}),
        );
        meta.insert(
            CLIENT_CAPABILITIES_KEY.into(),
            json!({"elicitation": {"form": {}}, "extensions": {"x/y": {"z": [1, 2.5, null]}}}),
        );
        params.insert("_meta".into(), Value::Object(meta));
        Value::Object(params)
    }

    #[test]
    fn stamps_absent_and_empty_params() {
        for params in [None, Some(json!({})), Some(json!({"_meta": {}}))] {
            assert_eq!(
                stamped(params.as_ref()),
                model(params.as_ref()),
                "{params:?}"
            );
        }
        assert_eq!(stamped(None)["_meta"][PROTOCOL_VERSION_KEY], "2026-07-28");
        assert_eq!(envelope().protocol_version(), "2026-07-28");
    }

    #[test]
    fn keeps_caller_params_and_meta_but_reserved_keys_win() {
        let params = json!({"name": "t", "arguments": {"text": "é\n", "n": [1, {"a": null}]},
            "_meta": {
                "traceparent": "00-abc-01",
                "progressToken": 3,
                "io.modelcontextprotocol/protocolVersion": "1999-01-01",
                "io.modelcontextprotocol/clientInfo": {"name": "spoof"}
        }});
        let stamped = stamped(Some(&params));
        assert_eq!(stamped, model(Some(&params)));
        assert_eq!(stamped["_meta"]["traceparent"], "00-abc-01");
        assert_eq!(stamped["_meta"][CLIENT_INFO_KEY]["name"], "c \"quoted\"");
    }

    /// For what most requests carry (no escapes, no reserved keys of the caller's), the
    /// estimate is never short (one buffer, no regrowth) and at most a little long.
    #[test]
    fn the_length_estimate_fits_the_usual_requests() {
        let call = json!({"name": "echo", "arguments": {"text": "x".repeat(1024)}});
        let with_token = json!({"name": "echo", "_meta": {"progressToken": 7}});
        for params in [None, Some(&call), Some(&with_token)] {
            let params = params.map(|p| Params::from(p.clone()));
            let mut out = String::new();
            params::write(&mut out, params.as_ref(), Some(&envelope()));
            let estimate = params::estimated_len(params.as_ref(), Some(&envelope()));
            assert!(
                out.len() <= estimate && estimate <= out.len() + 48,
                "{estimate}: {out}"
            );
        }
    }

    #[test]
    fn a_meta_that_is_not_an_object_is_replaced() {
        let params = json!({"name": "t", "_meta": "nonsense"});
        assert_eq!(stamped(Some(&params)), model(Some(&params)));
    }

    #[test]
    fn server_info_prefers_meta() {
        let r =
            json!({"serverInfo": {"name": "top"}, "_meta": {SERVER_INFO_KEY: {"name": "meta"}}});
        assert_eq!(server_info(&r).unwrap()["name"], "meta");
        assert_eq!(
            server_info(&json!({"serverInfo": {"name": "top"}})).unwrap()["name"],
            "top"
        );
        assert!(server_info(&json!({})).is_none());
    }
}
