//! Teardown leaves nothing behind: a thousand stdio connect/close cycles, and the process has
//! exactly the descriptors it had before and no server process is left. A test binary of its
//! own with this one test, so that no other test opens or closes descriptors while it counts.

mod common;

use common::*;

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

#[test]
fn a_thousand_connect_close_cycles_leak_no_descriptor_and_no_process() {
    // Warm up once, so lazily opened descriptors of the test harness are counted before.
    connect(&[]).close();
    let before = open_fds();
    let mut pids = Vec::new();
    for _ in 0..1000 {
        let client = connect(&[]);
        pids.push(client.server_pid().unwrap());
        client.close();
    }
    let after = open_fds();
    let alive: Vec<u32> = pids
        .into_iter()
        .filter(|&pid| process_exists(pid))
        .collect();
    common::report_figure(&format!(
        "teardown: 1000 stdio connect/close cycles: {before} descriptors open before, {after} after; {} of 1000 server processes left alive",
        alive.len()
    ));
    assert_eq!(after, before, "descriptors open before and after");
    assert!(alive.is_empty(), "servers still alive: {alive:?}");
}
