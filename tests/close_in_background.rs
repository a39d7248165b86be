//! Close in the background (`StdioConfig::close_in_background`, C
//! `mcp_client_options_set_close_in_background`): close returns without waiting for the
//! server's exit, and the library still ends the server with the bounded sequence (stdin
//! closed, SIGTERM to its group after the grace, SIGKILL after another), kills what is left of
//! its group and reaps it, after the client is freed: no process and no zombie is left. The
//! servers here resist as long as they can (they ignore their stdin's end, SIGTERM, or leave a
//! helper in their group). Linux: processes are read from /proc.
#![cfg(target_os = "linux")]

mod common;

use common::processes::live_members;
use common::*;
use mcpc::{Client, ClientOptions, RequestOptions, StderrMode, StdioConfig};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The grace close gives the server at each step (`CLOSE_GRACE`).
const GRACE: Duration = Duration::from_secs(2);

fn in_background(mut config: StdioConfig) -> StdioConfig {
    config.close_in_background = true;
    config
}

/// Closes and frees `client`: how long that took.
fn close_and_free(client: Client) -> Duration {
    let start = Instant::now();
    client.close();
    drop(client);
    start.elapsed()
}

/// A server that ignores its stdin's end and SIGTERM: close returns at once, the server still
/// runs then, and only SIGKILL (after two graces) ends it; it is reaped after the client was
/// freed. A close that waits takes the two graces (over 4 s).
#[test]
fn close_returns_at_once_and_a_server_that_resists_is_killed_after_two_graces() {
    let client = connect_with(
        in_background(config(&["--ignore-stdin-eof", "--ignore-sigterm"])),
        ClientOptions::default(),
    );
    let pid = client.server_pid().unwrap();
    let closed_at = Instant::now();
    let took = close_and_free(client);
    assert!(took < Duration::from_secs(1), "close took {took:?}");
    assert!(
        process_exists(pid),
        "the server {pid} was ended before its grace"
    );
    let gone = gone_within(pid, closed_at, Duration::from_secs(15))
        .unwrap_or_else(|| panic!("the server {pid} is still there (or unreaped) after 15 s"));
    assert!(
        gone >= 2 * GRACE - Duration::from_millis(100),
        "the server was killed after {gone:?}, before its two graces"
    );
    report_figure(&format!(
        "close in background: returned after {} ms; a server ignoring stdin's end and SIGTERM killed and reaped {} ms after",
        took.as_millis(),
        gone.as_millis()
    ));
}

/// A server that ignores its stdin's end but leaves on SIGTERM gets it after one grace.
#[test]
fn a_server_that_ignores_its_stdin_end_gets_sigterm_after_the_grace() {
    let client = connect_with(
        in_background(config(&["--ignore-stdin-eof"])),
        ClientOptions::default(),
    );
    let pid = client.server_pid().unwrap();
    let closed_at = Instant::now();
    close_and_free(client);
    let gone = gone_within(pid, closed_at, Duration::from_secs(15))
        .unwrap_or_else(|| panic!("the server {pid} is still there (or unreaped) after 15 s"));
    assert!(
        gone >= GRACE - Duration::from_millis(100) && gone < 2 * GRACE,
        "the server left {gone:?} after close: SIGTERM comes after one grace"
    );
}

/// A helper the server started in its group is killed once the server has gone, though the
/// client was freed long before.
#[test]
fn the_servers_group_is_ended_in_the_background() {
    let client = connect_with(in_background(config(&[])), ClientOptions::default());
    let pgid = client.server_pid().unwrap();
    let helper: u32 = text(
        &client
            .call_tool(
                "group_helper",
                Some(json!({ "mib": 1 })),
                &RequestOptions::default(),
            )
            .expect("the helper started"),
    )
    .parse()
    .expect("a pid");
    assert!(live_members(pgid).iter().any(|(pid, _)| *pid == helper));
    let closed_at = Instant::now();
    close_and_free(client);
    let mut left = live_members(pgid);
    while !left.is_empty() && closed_at.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
        left = live_members(pgid);
    }
    for (pid, _) in &left {
        // SAFETY: kill has no memory effects.
        unsafe { libc::kill(*pid as libc::pid_t, libc::SIGKILL) };
    }
    assert!(
        left.is_empty(),
        "left running in the server's group {pgid} (helper {helper}): {left:?}"
    );
}

/// Once close returns no stderr callback runs, though the server (a shell whose helper writes
/// a line every 5 ms, ignoring its stdin's end) goes on writing for seconds.
#[test]
fn no_stderr_callback_runs_after_close_returns() {
    let script = format!(
        "(while :; do echo tick >&2; sleep 0.005; done) & exec '{}' --ignore-stdin-eof",
        SERVER.as_str()
    );
    let lines = Arc::new(AtomicUsize::new(0));
    let mut config = StdioConfig::new(["sh", "-c", &script]);
    config.stderr = StderrMode::Callback({
        let lines = lines.clone();
        Arc::new(move |_| {
            lines.fetch_add(1, Ordering::SeqCst);
        })
    });
    let client = connect_with(in_background(config), ClientOptions::default());
    let pid = client.server_pid().unwrap();
    let start = Instant::now();
    while lines.load(Ordering::SeqCst) < 5 && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(lines.load(Ordering::SeqCst) >= 5, "the stderr lines arrive");
    let closed_at = Instant::now();
    close_and_free(client);
    let at_close = lines.load(Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        lines.load(Ordering::SeqCst),
        at_close,
        "a stderr callback ran after close returned"
    );
    assert!(
        gone_within(pid, closed_at, Duration::from_secs(15)).is_some(),
        "the server {pid} is still there (or unreaped)"
    );
}

/// The server's stderr stays open after close until it has gone: a server that writes its
/// last line as it leaves is not killed by SIGPIPE (here the shell's `echo` would be, and the
/// file after it never written).
#[test]
fn a_server_writing_as_it_leaves_is_not_killed_by_sigpipe() {
    let marker = log_path("close_in_background_marker");
    let script = format!(
        "'{}'; sleep 0.2; echo leaving >&2; echo done > '{}'",
        SERVER.as_str(),
        marker.display()
    );
    let client = connect_with(
        in_background(StdioConfig::new(["sh", "-c", &script])),
        ClientOptions::default(),
    );
    let pid = client.server_pid().unwrap();
    let closed_at = Instant::now();
    close_and_free(client);
    assert!(
        gone_within(pid, closed_at, Duration::from_secs(15)).is_some(),
        "the shell {pid} is still there (or unreaped)"
    );
    assert_eq!(
        std::fs::read_to_string(&marker).ok().as_deref(),
        Some("done\n"),
        "the shell did not finish: its last write to stderr killed it"
    );
}

/// Two hundred clients closed one after another: each close returns without waiting for its
/// server, and every server is gone and reaped soon after (none is left a zombie).
#[test]
fn two_hundred_servers_closed_in_the_background_leave_no_zombie() {
    const N: usize = 200;
    let clients: Vec<Client> = (0..N)
        .map(|_| connect_with(in_background(config(&[])), ClientOptions::default()))
        .collect();
    let pids: Vec<u32> = clients.iter().map(|c| c.server_pid().unwrap()).collect();
    let start = Instant::now();
    for client in clients {
        close_and_free(client);
    }
    let took = start.elapsed();
    for &pid in &pids {
        assert!(
            gone_within(pid, start, Duration::from_secs(20)).is_some(),
            "the server {pid} is still there (or unreaped) 20 s after close"
        );
    }
    report_figure(&format!(
        "close in background: {N} stdio clients closed and freed in {} ms",
        took.as_millis()
    ));
}
