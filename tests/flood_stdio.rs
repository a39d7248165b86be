//! A stdio server that sends pings as fast as it can, for 10 s, to an idle client: the client's
//! memory stays bounded (the answers it cannot write in time are dropped, see
//! `mcpc::engine::limits`), it still answers its own calls, and close stays quick. Alone in its
//! test binary so that the memory figures are this test's only.

mod common;

use common::flood::{status_kib, survive};

#[test]
fn a_ping_flood_over_stdio_cannot_exhaust_memory() {
    let baseline = status_kib("VmRSS");
    let client = common::connect(&["--flood", "ping", "--flood-secs", "10"]);
    survive("stdio ping flood", client, baseline);
}
