//! The modern era's per-request envelope: `params._meta` carries the protocol version, the
//! client's identity and its capabilities on every request (never on notifications).

use serde_json::{Map, Value};

pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
pub const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// What every modern request says about the client.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    pub protocol_version: String,
    pub client_info: Value,
    pub client_capabilities: Value,
}

impl Envelope {
    /// Returns `params` with the envelope in `_meta`. The caller's `_meta` entries are kept;
    /// the reserved keys win. Absent params become an object, since `_meta` is required.
    pub fn stamp(&self, params: Option<Value>) -> Value {
        let mut params = match params {
            Some(Value::Object(map)) => map,
            _ => Map::new(),
        };
        let mut meta = match params.remove("_meta") {
            Some(Value::Object(meta)) => meta,
            _ => Map::new(),
        };
        meta.insert(
            PROTOCOL_VERSION_KEY.into(),
            Value::from(self.protocol_version.clone()),
        );
        meta.insert(CLIENT_INFO_KEY.into(), self.client_info.clone());
        meta.insert(
            CLIENT_CAPABILITIES_KEY.into(),
            self.client_capabilities.clone(),
        );
        params.insert("_meta".into(), Value::Object(meta));
        Value::Object(params)
    }
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
    use serde_json::json;

    fn envelope() -> Envelope {
        Envelope {
            protocol_version: "2026-07-28".into(),
            client_info: json!({"name": "c", "version": "1"}),
            client_capabilities: json!({}),
        }
    }

    #[test]
    fn stamps_absent_params() {
        let stamped = envelope().stamp(None);
        assert_eq!(
            stamped,
            json!({"_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {}
            }})
        );
    }

    #[test]
    fn keeps_caller_meta_but_reserved_keys_win() {
        let params = json!({"name": "t", "_meta": {
            "traceparent": "00-abc-01",
            "progressToken": 3,
            "io.modelcontextprotocol/protocolVersion": "1999-01-01"
        }});
        let stamped = envelope().stamp(Some(params));
        assert_eq!(stamped["name"], "t");
        assert_eq!(stamped["_meta"]["traceparent"], "00-abc-01");
        assert_eq!(stamped["_meta"]["progressToken"], 3);
        assert_eq!(stamped["_meta"][PROTOCOL_VERSION_KEY], "2026-07-28");
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
