//! No process of the server's process group outlives its client: when close (or free)
//! returns, every process the server started in its group has exited, whether the server
//! exited before close (a crash mid-call) or close ended it. The helper here holds 256 MiB, so
//! SIGKILL takes tens of milliseconds to end it (it gives its memory back): a close that only
//! sends the signal returns while the helper still runs. Linux: the group is read from /proc.
#![cfg(target_os = "linux")]

mod common;

use common::processes::live_members;
use common::*;
use mcpc::{Client, RequestOptions, Status};
use serde_json::json;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One helper at a time: each holds 256 MiB while it lives.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A connected test server with a 256 MiB helper in its process group: the client, the
/// group's id (the server's pid) and the helper's pid.
fn server_with_a_helper() -> (Client, u32, u32) {
    let client = connect(&[]);
    let pgid = client.server_pid().expect("a stdio server has a pid");
    let result = client
        .call_tool(
            "group_helper",
            Some(json!({ "mib": 256 })),
            &RequestOptions::default(),
        )
        .expect("the helper started");
    let helper: u32 = text(&result).parse().expect("a pid");
    let members = live_members(pgid);
    assert!(
        members.iter().any(|(pid, _)| *pid == helper),
        "the helper {helper} is in the server's group {pgid}: {members:?}"
    );
    (client, pgid, helper)
}

/// Ends `client` with `end` (close, or free) and checks no process of the group is left.
fn ends_with_no_process_of_the_group_left(
    what: &str,
    client: Client,
    pgid: u32,
    helper: u32,
    end: fn(Client),
) {
    let start = Instant::now();
    end(client);
    let took = start.elapsed();
    let left = live_members(pgid);
    // Kill what a failure left behind, so it does not outlive the test.
    for (pid, _) in &left {
        // SAFETY: kill has no memory effects.
        unsafe { libc::kill(*pid as libc::pid_t, libc::SIGKILL) };
    }
    report_figure(&format!(
        "{what}: returned after {} ms with no process of the server's group left (a 256 MiB helper)",
        took.as_millis()
    ));
    assert!(
        left.is_empty(),
        "{what}: left running in group {pgid} (helper {helper}): {left:?}"
    );
    assert!(took < Duration::from_secs(6), "{what} took {took:?}");
}

#[test]
fn close_leaves_no_process_of_the_group_after_the_server_exited_mid_call() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (client, pgid, helper) = server_with_a_helper();
    let error = client
        .call_tool("crash", None, &RequestOptions::default())
        .expect_err("the server exited");
    assert_eq!(error.status, Status::TransportError, "{error:?}");
    ends_with_no_process_of_the_group_left(
        "close after the server exited",
        client,
        pgid,
        helper,
        |c| c.close(),
    );
}

#[test]
fn free_leaves_no_process_of_the_group_after_the_server_exited_mid_call() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (client, pgid, helper) = server_with_a_helper();
    let error = client
        .call_tool("crash", None, &RequestOptions::default())
        .expect_err("the server exited");
    assert_eq!(error.status, Status::TransportError, "{error:?}");
    ends_with_no_process_of_the_group_left(
        "free after the server exited",
        client,
        pgid,
        helper,
        drop,
    );
}

#[test]
fn close_leaves_no_process_of_the_group_of_a_running_server() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (client, pgid, helper) = server_with_a_helper();
    ends_with_no_process_of_the_group_left(
        "close of a running server",
        client,
        pgid,
        helper,
        |c| c.close(),
    );
}

/// The server that exited is not reaped before close: until close has signalled its group,
/// its pid (the group's id) cannot be given to another process, so close's signals reach
/// only the server's own. It stays a zombie until then, and is gone after.
#[test]
fn an_exited_server_keeps_its_group_id_until_close() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (client, pgid, helper) = server_with_a_helper();
    let error = client
        .call_tool("crash", None, &RequestOptions::default())
        .expect_err("the server exited");
    assert_eq!(error.status, Status::TransportError, "{error:?}");
    let stat = std::fs::read_to_string(format!("/proc/{pgid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.trim_start().chars().next());
    assert_eq!(
        state,
        Some(Some('Z')),
        "the server {pgid} was reaped before close: {stat:?}"
    );
    ends_with_no_process_of_the_group_left(
        "close after the server exited (kept unreaped until then)",
        client,
        pgid,
        helper,
        |c| c.close(),
    );
    assert!(
        !std::path::Path::new(&format!("/proc/{pgid}")).exists(),
        "reaped by close"
    );
}
