//! What the client declares it can do, and URL-mode elicitation. The unlisted
//! tool `client_capabilities` returns the capabilities the request's envelope
//! (modern) declares; `url_elicit` sends `notifications/elicitation/complete`
//! for an elicitation, then fails with -32042 (URL elicitation required),
//! whose data lists that elicitation.

use serde_json::{json, Value};

use crate::tools::text_result;
use crate::{Reply, Request, RpcError, Server};

const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
const URL_ELICITATION_REQUIRED: i64 = -32042;

pub fn client_capabilities(request: &Request) -> Reply {
    let capabilities = request.params["_meta"][CLIENT_CAPABILITIES_KEY].clone();
    Ok(json!({
        "content": [{ "type": "text", "text": capabilities.to_string() }],
        "structuredContent": { "capabilities": capabilities },
    }))
}

pub fn url_elicit(server: &Server, args: &Value) -> Reply {
    let id = args["elicitation_id"].as_str().unwrap_or("elicit-1");
    if args["complete_first"].as_bool().unwrap_or(true) {
        server.notify(
            "notifications/elicitation/complete",
            Some(json!({ "elicitationId": id })),
        );
    }
    if args["succeed"].as_bool() == Some(true) {
        return Ok(text_result("authorized"));
    }
    Err(RpcError::new(
        URL_ELICITATION_REQUIRED,
        "This request requires more information.",
    )
    .with_data(json!({ "elicitations": [{
        "mode": "url",
        "elicitationId": id,
        "url": "https://example.com/connect?elicitation=".to_owned() + id,
        "message": "Authorize access to continue.",
    }]})))
}
