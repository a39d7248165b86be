//! The legacy standalone GET stream is open by the time `connect` returns, so what the server
//! sends on it straight after the handshake reaches the client. (Servers without an event store,
//! like the TypeScript SDK's, drop what they send for a standalone stream that is not open: the
//! conformance suite's elicitation scenario sends its `elicitation/create` there while handling
//! the first call.)

mod common;

use common::http_server::HttpServer;
use mcpc::ConnectMode;
use serde_json::json;

#[test]
fn the_standalone_stream_is_open_when_connect_returns() {
    for attempt in 0..5 {
        let server = HttpServer::start(
            &format!("http_standalone_open_{attempt}"),
            &["--standalone-delay-ms", "300"],
        );
        let client = server.connect(ConnectMode::Legacy);
        let reached = server.broadcast(&json!({
            "jsonrpc": "2.0",
            "method": "notifications/tools/list_changed"
        }));
        assert_eq!(
            reached, 1,
            "attempt {attempt}: the standalone stream was not open yet"
        );
        client.close();
    }
}
