//! Headers that would break the HTTP exchange are refused up front: the host's headers that
//! shape the exchange itself (`Expect: 100-continue` stalled every request by about a second),
//! and headers mirrored from tool arguments past the documented size limit (a 128 KiB one
//! failed with ureq's "output too small"). A refused call sends nothing to the server.

mod common;

use common::http_server::{posts_of, HttpServer};
use mcpc::ffi::*;
use mcpc::{Client, ClientOptions, ConnectMode, HttpConfig, RequestOptions, Status};
use serde_json::json;
use std::ffi::CString;

const MAX_HEADER_BYTES: usize = HttpConfig::MAX_HEADER_BYTES;
const MAX_MIRRORED_VALUE_BYTES: usize = HttpConfig::MAX_MIRRORED_VALUE_BYTES;

const EXCHANGE_HEADERS: [&str; 10] = [
    "Expect",
    "connection",
    "TRANSFER-ENCODING",
    "Content-Length",
    "Host",
    "Upgrade",
    "te",
    "Keep-Alive",
    "Proxy-Connection",
    "Trailer",
];

#[test]
fn headers_that_shape_the_exchange_are_refused_by_add_header() {
    for name in EXCHANGE_HEADERS {
        let mut config = HttpConfig::new("http://127.0.0.1:1/mcp");
        let error = config.add_header(name, "100-continue").unwrap_err();
        assert_eq!(error.status, Status::InvalidArgument, "{name}: {error}");
        assert!(error.message.contains(name), "{name}: {error}");
        assert!(config.headers.is_empty(), "{name} was kept");

        // The same through the C API: the setter refuses, and so does the connect.
        unsafe {
            let options = mcp_client_options_new();
            let c_name = CString::new(name).unwrap();
            let status =
                mcp_client_options_add_header(options, c_name.as_ptr(), c"100-continue".as_ptr());
            assert_eq!(status, mcp_status::InvalidArgument, "{name}");
            let client = mcp_client_new_http(c"http://127.0.0.1:1/mcp".as_ptr(), options);
            let result = mcp_client_connect(client);
            assert_eq!(
                mcp_result_status(result),
                mcp_status::InvalidArgument,
                "{name}"
            );
            let message = std::ffi::CStr::from_ptr(mcp_result_message(result)).to_string_lossy();
            assert!(message.contains(name), "{name}: {message}");
            mcp_result_free(result);
            mcp_client_free(client);
            mcp_client_options_free(options);
        }
    }
}

#[test]
fn exchange_headers_pushed_directly_fail_the_connect_and_send_nothing() {
    let server = HttpServer::start("header_limits_direct", &[]);
    let mut config = server.config();
    config
        .headers
        .push(("Expect".into(), "100-continue".into()));
    let client = Client::http(config, ClientOptions::default());
    let error = client.connect().unwrap_err();
    assert_eq!(error.status, Status::InvalidArgument, "{error}");
    assert!(error.message.contains("Expect"), "{error}");
    // A client of our own is the barrier: once it connected, the server has read everything
    // the refused one could have sent.
    server.connect(ConnectMode::Legacy).ping(&none()).unwrap();
    let posts = server
        .requests()
        .iter()
        .filter(|r| r["headers"]["expect"].is_string())
        .count();
    assert_eq!(posts, 0, "a request went out with Expect");
}

#[test]
fn the_extra_headers_as_a_whole_are_limited() {
    let mut config = HttpConfig::new("http://127.0.0.1:1/mcp");
    let half = "a".repeat(MAX_HEADER_BYTES / 2);
    config.add_header("X-One", &half).unwrap();
    let error = config.add_header("X-Two", &half).unwrap_err();
    assert_eq!(error.status, Status::InvalidArgument);
    assert!(
        error.message.contains(&MAX_HEADER_BYTES.to_string()),
        "{error}"
    );
    assert_eq!(config.headers.len(), 1);
}

fn none() -> RequestOptions {
    RequestOptions::default()
}

#[test]
fn an_oversized_mirrored_header_is_refused_before_sending() {
    let server = HttpServer::start("header_limits_mirrored", &["--modern"]);
    let client = server.connect(ConnectMode::Modern);
    // tools/list teaches the client that header_ok mirrors `region` into Mcp-Param-Region.
    client.tools(&none()).unwrap();

    // Right at the limit (a plain ASCII value goes out as it is): sent, and echoed.
    let at_limit = "r".repeat(MAX_MIRRORED_VALUE_BYTES);
    let result = client
        .call_tool("header_ok", Some(json!({"region": at_limit})), &none())
        .unwrap();
    assert!(result.to_string().contains(&at_limit[..100]));

    for size in [MAX_MIRRORED_VALUE_BYTES + 1, 200 * 1024] {
        let region = format!("big-{}", "r".repeat(size - 4));
        assert_eq!(region.len(), size);
        let started = std::time::Instant::now();
        let Err(error) = client.call_tool("header_ok", Some(json!({"region": region})), &none())
        else {
            panic!("a {size}-byte mirrored value was sent");
        };
        assert_eq!(error.status, Status::InvalidArgument, "{size}: {error}");
        assert!(
            error
                .message
                .contains(&MAX_MIRRORED_VALUE_BYTES.to_string())
                && error.message.contains("Mcp-Param-Region"),
            "{size}: {error}"
        );
        assert!(
            !error.message.contains(&region[..50]),
            "the value is quoted"
        );
        let took = started.elapsed();
        assert!(took < std::time::Duration::from_secs(5), "{took:?}");
        common::report_figure(&format!(
            "header limits: a {size}-byte mirrored header value refused before sending in {} us",
            took.as_micros()
        ));
    }

    // The client still works, and this listing is the barrier: every request made before it has
    // been read by the server.
    client.tools(&none()).unwrap();
    let requests = server.requests();
    let calls = posts_of(&requests, "tools/call");
    assert_eq!(calls.len(), 1, "a refused call reached the server");
    assert!(requests.iter().all(|r| !r.to_string().contains("big-")));
}

#[test]
fn an_oversized_tool_name_is_refused_before_sending() {
    // Mcp-Name mirrors the tool name in every era.
    let server = HttpServer::start("header_limits_name", &[]);
    let client = server.connect(ConnectMode::Legacy);
    let name = format!("huge-{}", "n".repeat(MAX_MIRRORED_VALUE_BYTES));
    let error = client.call_tool(&name, None, &none()).unwrap_err();
    assert_eq!(error.status, Status::InvalidArgument, "{error}");
    assert!(error.message.contains("Mcp-Name"), "{error}");
    client.ping(&none()).unwrap();
    assert!(posts_of(&server.requests(), "tools/call").is_empty());
}
