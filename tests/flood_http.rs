//! An HTTP server that sends pings as fast as it can on the standalone GET stream, for 10 s, to
//! an idle client: memory stays bounded, the client still answers its own calls, close stays
//! quick. Alone in its test binary so that the memory figures are this test's only.

mod common;

use common::flood::{status_kib, survive};
use common::http_server::HttpServer;
use mcpc::ConnectMode;

#[test]
fn a_ping_flood_on_the_standalone_stream_cannot_exhaust_memory() {
    let server = HttpServer::start("flood_http", &["--flood", "ping", "--flood-secs", "10"]);
    let baseline = status_kib("VmRSS");
    let client = server.connect(ConnectMode::Legacy);
    survive("HTTP standalone ping flood", client, baseline);
}
