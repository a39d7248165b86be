//! A server that floods log notifications of 1 MiB each, for 10 s, at a slow callback, over
//! stdio and over the HTTP standalone stream: the callback queue is bounded in bytes as well
//! as in events (1,024 events of 1 MiB would be 1 GiB), so memory stays bounded and close
//! stays quick. Alone in its test binary so that the memory figures are this test's only; the
//! two floods run one after the other.

mod common;

use common::flood::{status_kib, survive};
use common::http_server::HttpServer;
use mcpc::handlers::{Callbacks, LogMessage};
use mcpc::{Client, ClientOptions, ConnectMode};
use std::sync::Arc;
use std::time::Duration;

const NOTIFICATION_BYTES: &str = "1048576";

fn slow_callback(mode: ConnectMode) -> ClientOptions {
    ClientOptions {
        mode,
        callbacks: Callbacks {
            on_message: Some(Arc::new(|message: &LogMessage| {
                assert_eq!(message.data.as_str().map(str::len), Some(1024 * 1024));
                std::thread::sleep(Duration::from_millis(20));
            })),
            ..Callbacks::default()
        },
        ..ClientOptions::default()
    }
}

#[test]
fn large_notifications_flooding_a_slow_callback_cannot_exhaust_memory() {
    let flood = [
        "--flood",
        "notifications/message",
        "--flood-bytes",
        NOTIFICATION_BYTES,
        "--flood-secs",
        "10",
    ];

    let baseline = status_kib("VmRSS");
    let client = common::connect_with(common::config(&flood), slow_callback(ConnectMode::Auto));
    survive(
        "stdio flood of 1 MiB notifications, slow callback",
        client,
        baseline,
    );

    let server = HttpServer::start("flood_large_notifications", &flood);
    let baseline = status_kib("VmRSS");
    let client = Client::http(server.config(), slow_callback(ConnectMode::Legacy));
    client.connect().unwrap();
    survive(
        "HTTP standalone flood of 1 MiB notifications, slow callback",
        client,
        baseline,
    );
}
