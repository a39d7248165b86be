//! What the client declares its handlers can do (URL-mode elicitation, sampling with tools, the
//! tasks extension), in both eras, and URL-mode elicitation's -32042 error and
//! `notifications/elicitation/complete`, over stdio and HTTP.

mod common;

use common::http_server::HttpServer;
use common::{config, log_path, read_log};
use mcpc::handlers::{HandlerError, RequestHandler};
use mcpc::{Client, ClientOptions, ConnectMode, RequestOptions, Status};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

fn answering() -> RequestHandler {
    Arc::new(|_| Ok::<Value, HandlerError>(json!({})))
}

fn with_handlers(mode: ConnectMode, url: bool, tools: bool, tasks: bool) -> ClientOptions {
    let mut options = ClientOptions {
        mode,
        elicitation_url: url,
        sampling_tools: tools,
        tasks,
        ..ClientOptions::default()
    };
    for method in ["elicitation/create", "sampling/createMessage"] {
        options
            .callbacks
            .request_handlers
            .insert(method.into(), answering());
    }
    options
}

/// The capabilities a modern request of this client declares, as the server read them.
fn modern_capabilities(options: ClientOptions) -> Value {
    let client = Client::stdio(config(&["--modern"]), options);
    client.connect().unwrap();
    let result = client
        .call_tool("client_capabilities", None, &RequestOptions::default())
        .unwrap();
    result["structuredContent"]["capabilities"].clone()
}

#[test]
fn modern_requests_declare_url_elicitation_sampling_tools_and_tasks_when_asked() {
    let caps = modern_capabilities(with_handlers(ConnectMode::Modern, true, true, true));
    assert_eq!(caps["elicitation"], json!({ "form": {}, "url": {} }));
    assert_eq!(caps["sampling"], json!({ "tools": {} }));
    assert_eq!(
        caps["extensions"],
        json!({ "io.modelcontextprotocol/tasks": {} })
    );

    let caps = modern_capabilities(with_handlers(ConnectMode::Modern, false, false, false));
    assert_eq!(caps["elicitation"], json!({ "form": {} }));
    assert_eq!(caps["sampling"], json!({}));
    assert!(caps.get("extensions").is_none());

    // Without a handler, the flags declare nothing.
    let options = ClientOptions {
        mode: ConnectMode::Modern,
        elicitation_url: true,
        sampling_tools: true,
        ..ClientOptions::default()
    };
    let caps = modern_capabilities(options);
    assert!(caps.get("elicitation").is_none() && caps.get("sampling").is_none());
}

#[test]
fn the_handshake_declares_url_elicitation_and_sampling_tools_but_no_extension() {
    let log = log_path("features-legacy");
    let client = Client::stdio(
        config(&["--log", log.to_str().unwrap()]),
        with_handlers(ConnectMode::Legacy, true, true, true),
    );
    client.connect().unwrap();
    let lines = read_log(&log);
    let caps =
        &lines.iter().find(|l| l["method"] == "initialize").unwrap()["params"]["capabilities"];
    assert_eq!(caps["elicitation"], json!({ "form": {}, "url": {} }));
    assert_eq!(caps["sampling"], json!({ "tools": {} }));
    assert!(caps.get("extensions").is_none(), "{caps}");
}

/// -32042 is URL_ELICITATION_REQUIRED with the elicitations in its data, and the
/// `notifications/elicitation/complete` sent before it reaches the notification callback.
fn url_elicitation_required(client_for: impl FnOnce(ClientOptions) -> Client) {
    let heard = Arc::new(Mutex::new(Vec::new()));
    let sink = heard.clone();
    let mut options = ClientOptions::default();
    options.callbacks.on_notification = Some(Arc::new(move |method: &str, params| {
        sink.lock()
            .unwrap()
            .push((method.to_owned(), params.cloned()));
    }));
    let client = client_for(options);
    let args = json!({ "elicitation_id": "e-7" });
    let e = client
        .call_tool("url_elicit", Some(args), &RequestOptions::default())
        .unwrap_err();
    assert_eq!(e.status, Status::UrlElicitationRequired);
    assert_eq!(e.status.name(), "URL_ELICITATION_REQUIRED");
    assert_eq!(e.code, Some(-32042));
    let elicitation = &e.data.as_ref().unwrap()["elicitations"][0];
    assert_eq!(elicitation["elicitationId"], "e-7");
    assert_eq!(
        elicitation["url"],
        "https://example.com/connect?elicitation=e-7"
    );
    // The notification went out before the error; the callback thread runs it in order, and
    // a later call (a barrier) has been answered after it.
    let _ = client.call_tool(
        "echo",
        Some(json!({"text": "x"})),
        &RequestOptions::default(),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while heard.lock().unwrap().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let heard = heard.lock().unwrap();
    assert_eq!(
        heard.as_slice(),
        &[(
            "notifications/elicitation/complete".to_owned(),
            Some(json!({ "elicitationId": "e-7" }))
        )]
    );
}

#[test]
fn url_elicitation_required_has_its_own_status_and_its_completion_reaches_the_host_stdio() {
    url_elicitation_required(|options| {
        let client = Client::stdio(config(&[]), options);
        client.connect().unwrap();
        client
    });
}

#[test]
fn url_elicitation_required_has_its_own_status_and_its_completion_reaches_the_host_http() {
    let server = HttpServer::start("features-url-http", &["--modern"]);
    url_elicitation_required(|options| {
        let client = Client::http(
            server.config(),
            ClientOptions {
                mode: ConnectMode::Modern,
                ..options
            },
        );
        client.connect().unwrap();
        client
    });
}
