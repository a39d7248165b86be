//! The MCP methods other than `tools/call`: the handshake, the paginated
//! lists, resources, prompts and completion. The modern era's additions are
//! in `modern.rs`.

use serde_json::{json, Value};

use crate::args::Args;
use crate::rounds::{self, Confirmation};
use crate::{listen, modern, tools, Reply, Request, RpcError, Server};

/// Answers one request from the client (on the request's own thread).
pub fn handle(server: &Server, request: &Request) -> Reply {
    if server.args.modern {
        return modern::handle(server, request);
    }
    dispatch(server, request)
}

/// Routes a request by its method, the same way in both eras.
pub fn dispatch(server: &Server, request: &Request) -> Reply {
    let params = &request.params;
    let list = |key, items| list_page(&server.args, key, items, params);
    match request.method.as_str() {
        "initialize" if server.args.silent_initialize => tools::never(request),
        "initialize" => Ok(initialize(server, params)),
        "server/discover" if server.args.modern => modern::discover(server, request),
        "ping" => Ok(json!({})),
        "tools/list" => list("tools", tools::definitions(&server.args)),
        "tools/call" => tools::call(server, request),
        "resources/list" => list("resources", resources()),
        "resources/templates/list" => list("resourceTemplates", resource_templates()),
        "resources/read" => read_resource(params),
        "prompts/list" => list("prompts", prompts()),
        "prompts/get" => get_prompt(params),
        "completion/complete" => Ok(complete(params)),
        "tasks/get" | "tasks/update" | "tasks/cancel" => crate::tasks::handle(request),
        "tasks/result" => crate::tasks::result(server, request),
        // Listening and notices on demand (listen.rs).
        "subscriptions/listen" if server.args.modern => listen::listen(server, request),
        "resources/subscribe" => listen::subscribe(params, true),
        "resources/unsubscribe" => listen::subscribe(params, false),
        "logging/setLevel" => listen::set_level(params),
        "test/emit" => listen::emit(server, params),
        "test/listeners" => listen::listeners(),
        other => Err(RpcError::new(-32601, format!("Method not found: {other}"))),
    }
}

/// Protocol versions whose offer we accept as they are.
const KNOWN_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
const LATEST_VERSION: &str = "2025-11-25";
pub const INSTRUCTIONS: &str = "Test server for mcpc.";

pub fn capabilities() -> Value {
    json!({
        "tools": { "listChanged": true },
        "resources": { "subscribe": true, "listChanged": true },
        "prompts": { "listChanged": true },
        "completions": {},
        "logging": {},
    })
}

pub fn server_info() -> Value {
    json!({ "name": "mcpc-test-server", "version": "0.1.0" })
}

fn initialize(server: &Server, params: &Value) -> Value {
    if server.args.notify_before_init {
        // Out of order on purpose: the client must cope with early notifications.
        server.notify("notifications/tools/list_changed", None);
        server.notify(
            "notifications/message",
            Some(json!({ "level": "info", "data": "starting" })),
        );
    }
    let offered = params["protocolVersion"].as_str();
    let version = match (&server.args.protocol_version, offered) {
        (Some(forced), _) => forced.as_str(),
        (None, Some(offered)) if KNOWN_VERSIONS.contains(&offered) => offered,
        _ => LATEST_VERSION,
    };
    let mut capabilities = capabilities();
    if server.args.legacy_tasks {
        capabilities["tasks"] = json!({ "cancel": {}, "requests": { "tools": { "call": {} } } });
    }
    json!({
        "protocolVersion": version,
        "capabilities": capabilities,
        "serverInfo": server_info(),
        "instructions": INSTRUCTIONS,
    })
}

/// Answers one page of a list method, under `key`, as the flags say:
/// everything at once by default, `--page-size` items per page with cursors
/// `c<offset>`, or the broken cursors of `--repeat-cursor` and `--endless-pages`.
fn list_page(args: &Args, key: &str, items: Vec<Value>, params: &Value) -> Reply {
    let cursor = params["cursor"].as_str();
    let size = args.page_size.unwrap_or(items.len());
    let (offset, next_cursor) = if args.endless_pages {
        let page = cursor.map_or(Ok(0), |cursor| parse_cursor(cursor, "p"))?;
        (0, Some(format!("p{}", page + 1)))
    } else if args.repeat_cursor {
        (0, Some("same".to_owned()))
    } else {
        let offset = cursor.map_or(Ok(0), |cursor| parse_cursor(cursor, "c"))?;
        let end = offset + size;
        (offset, (end < items.len()).then(|| format!("c{end}")))
    };

    let page: Vec<Value> = items.into_iter().skip(offset).take(size).collect();
    let mut result = json!({ key: page });
    if let Some(next_cursor) = next_cursor {
        result["nextCursor"] = next_cursor.into();
    }
    Ok(result)
}

/// Our cursors are a letter followed by a number, e.g. "c4".
fn parse_cursor(cursor: &str, prefix: &str) -> Result<usize, RpcError> {
    cursor
        .strip_prefix(prefix)
        .and_then(|number| number.parse().ok())
        .ok_or_else(|| RpcError::invalid_params(format!("Invalid cursor: {cursor}")))
}

fn resources() -> Vec<Value> {
    vec![
        json!({ "uri": "test://hello", "name": "hello", "mimeType": "text/plain" }),
        json!({ "uri": "test://big", "name": "big", "mimeType": "text/plain" }),
    ]
}

fn resource_templates() -> Vec<Value> {
    vec![json!({ "uriTemplate": "test://items/{id}", "name": "item" })]
}

fn read_resource(params: &Value) -> Reply {
    let Some(uri) = params["uri"].as_str() else {
        return Err(RpcError::invalid_params("Missing uri"));
    };
    let text = match uri {
        // Unlisted, like the prompt `confirm_prompt`: the lists stay as tests count them.
        "test://confirm" => {
            return Ok(match rounds::confirmation(params, "Proceed?")? {
                Confirmation::Ask(interim) => interim,
                Confirmation::Answered(_) => {
                    json!({ "contents": [{ "uri": uri, "text": "confirmed" }] })
                }
            })
        }
        "test://hello" => "Hello, world".to_owned(),
        // Listed, so it must be readable too: 100 000 bytes.
        "test://big" => "x".repeat(100_000),
        _ => match uri.strip_prefix("test://items/") {
            Some(item) if !item.is_empty() => format!("item {item}"),
            _ => {
                return Err(
                    RpcError::new(-32002, "Resource not found").with_data(json!({ "uri": uri }))
                )
            }
        },
    };
    Ok(json!({ "contents": [{ "uri": uri, "mimeType": "text/plain", "text": text }] }))
}

fn prompts() -> Vec<Value> {
    vec![json!({
        "name": "greet",
        "description": "Greets someone",
        "arguments": [{ "name": "name", "required": true }],
    })]
}

fn get_prompt(params: &Value) -> Reply {
    match params["name"].as_str().unwrap_or_default() {
        "greet" => greet(params),
        "confirm_prompt" => confirm_prompt(params),
        name => Err(RpcError::invalid_params(format!("Unknown prompt: {name}"))),
    }
}

fn greet(params: &Value) -> Reply {
    let Some(who) = params["arguments"]["name"].as_str() else {
        return Err(RpcError::invalid_params("Missing required argument: name"));
    };
    Ok(json!({
        "description": "Greets someone",
        "messages": [{
            "role": "user",
            "content": { "type": "text", "text": format!("Hello, {who}!") },
        }],
    }))
}

/// Asks the client to confirm first, like the tool `confirm`.
fn confirm_prompt(params: &Value) -> Reply {
    let question = params["arguments"]["question"]
        .as_str()
        .unwrap_or("Proceed?");
    Ok(match rounds::confirmation(params, question)? {
        Confirmation::Ask(interim) => interim,
        Confirmation::Answered(_) => json!({
            "messages": [{ "role": "user", "content": { "type": "text", "text": "confirmed" } }],
        }),
    })
}

/// Completes any argument of any reference from one fixed word list.
fn complete(params: &Value) -> Value {
    let prefix = params["argument"]["value"].as_str().unwrap_or_default();
    let values: Vec<&str> = ["alpha", "beta", "gamma", "gamut"]
        .into_iter()
        .filter(|word| word.starts_with(prefix))
        .collect();
    json!({ "completion": { "values": values, "total": values.len(), "hasMore": false } })
}
