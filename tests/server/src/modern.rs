//! The 2026-07-28 ("modern") era, switched on by `--modern`. There is no
//! handshake: the client may call `server/discover`, and every request says
//! who the client is in an envelope in `params._meta`. A request that carries
//! the envelope is answered the modern way: the envelope is checked, and the
//! result is stamped with `resultType` and our own `_meta`. One without it is
//! answered as in the handshake era, unless `--modern-only` refuses it.

use std::sync::atomic::Ordering;

use serde_json::{json, Value};

use crate::args::{Args, DiscoverMode};
use crate::methods::{self, capabilities, server_info, INSTRUCTIONS};
use crate::{tools, Reply, Request, RpcError, Server};

const MODERN_VERSION: &str = "2026-07-28";
const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
const UNSUPPORTED_VERSION: i64 = -32022;

/// The methods whose results the modern era lets clients cache: the lists,
/// and reading a resource.
const CACHEABLE_METHODS: [&str; 5] = [
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "prompts/list",
    "resources/read",
];

/// Answers one request under `--modern`.
pub fn handle(server: &Server, request: &Request) -> Reply {
    let params = &request.params;
    if server.args.modern_only && request.method == "initialize" {
        return Err(unsupported_version(
            &server.args,
            &params["protocolVersion"],
        ));
    }
    let Some(version) = protocol_version(params) else {
        if server.args.modern_only {
            let message = format!("missing {PROTOCOL_VERSION_KEY}");
            return Err(RpcError::invalid_params(message));
        }
        return methods::dispatch(server, request);
    };

    // Whatever the version: this exercises the client's retry.
    if request.rejected {
        return Err(unsupported_version(&server.args, version));
    }
    let accepted = version
        .as_str()
        .is_some_and(|version| supported_versions(&server.args).contains(&version));
    if !accepted {
        return Err(unsupported_version(&server.args, version));
    }
    if params["_meta"].get(CLIENT_CAPABILITIES_KEY).is_none() {
        let message = format!("missing {CLIENT_CAPABILITIES_KEY}");
        return Err(RpcError::invalid_params(message));
    }
    match request.method.as_str() {
        // The modern era dropped ping.
        "ping" => Err(RpcError::new(-32601, "Method not found: ping")),
        // Shaped by `discover` itself, broken shapes included.
        "server/discover" => methods::dispatch(server, request),
        method => methods::dispatch(server, request)
            .map(|result| stamp(result, method, server.args.ttl_ms)),
    }
}

/// Decides, as the request arrives, whether `--reject-first` refuses it. Run
/// on the reading thread, so that "the first N" means the first N to arrive.
pub fn take_rejection(server: &Server, params: &Value) -> bool {
    server.args.modern
        && protocol_version(params).is_some()
        && server
            .rejections_left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
}

/// The version in the request's envelope; its presence makes a request modern.
fn protocol_version(params: &Value) -> Option<&Value> {
    params.get("_meta")?.get(PROTOCOL_VERSION_KEY)
}

fn supported_versions(args: &Args) -> Vec<&str> {
    match &args.supported_versions {
        Some(versions) => versions.iter().map(String::as_str).collect(),
        None => vec![MODERN_VERSION],
    }
}

fn unsupported_version(args: &Args, requested: &Value) -> RpcError {
    RpcError::new(UNSUPPORTED_VERSION, "Unsupported protocol version").with_data(json!({
        "supported": supported_versions(args),
        "requested": requested,
    }))
}

/// What every modern result says about the server, in its `_meta`.
fn server_meta() -> Value {
    json!({ SERVER_INFO_KEY: server_info() })
}

/// Adds the modern result fields; results that are not objects are left as they are.
fn stamp(mut result: Value, method: &str, ttl_ms: u64) -> Value {
    let Value::Object(fields) = &mut result else {
        return result;
    };
    // Interim results (`input_required`) already say what they are, and are
    // not to be cached.
    let interim = fields.contains_key("resultType");
    fields.entry("resultType").or_insert("complete".into());
    if !interim && CACHEABLE_METHODS.contains(&method) {
        fields.insert("ttlMs".into(), ttl_ms.into());
        fields.insert("cacheScope".into(), "private".into());
    }
    fields.entry("_meta").or_insert_with(|| json!({}))[SERVER_INFO_KEY] = server_info();
    result
}

/// Answers `server/discover` as `--discover` says.
pub fn discover(server: &Server, request: &Request) -> Reply {
    match server.args.discover {
        DiscoverMode::Ok => Ok(json!({
            "resultType": "complete",
            "supportedVersions": supported_versions(&server.args),
            "capabilities": capabilities(),
            "instructions": INSTRUCTIONS,
            "ttlMs": 0,
            "cacheScope": "private",
            "_meta": server_meta(),
        })),
        DiscoverMode::Malformed => Ok(json!({})),
        DiscoverMode::NotObject => Ok(json!("x")),
        DiscoverMode::Silent => tools::never(request),
        DiscoverMode::Error => Err(RpcError::new(-32603, "discover failed")),
    }
}
