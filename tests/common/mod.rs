//! Shared helpers for the integration tests: start our test server, read its log.
#![allow(dead_code)]

pub mod child_process;
pub mod flood;
pub mod hostile_sse;
pub mod http_peer;
pub mod http_server;
pub mod neighbours;
pub mod ports;
#[cfg(target_os = "linux")]
pub mod processes;
#[cfg(target_os = "linux")]
pub mod sockets;
pub mod tasks;
pub mod thread_names;

use mcpc::{Client, ClientOptions, StdioConfig};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::{Duration, Instant};

/// The path of our test server (the workspace package `tests/server`), built on first use in
/// the profile these tests were built in, or `$MCPC_TEST_SERVER` when set. With
/// `MCPC_TEST_NEIGHBOURS`, its first use also starts the neighbours (`neighbours`).
pub static SERVER: LazyLock<String> = LazyLock::new(|| {
    let server = build_test_server();
    neighbours::start_if_asked(&server);
    server
});

fn build_test_server() -> String {
    if let Some(path) = std::env::var_os("MCPC_TEST_SERVER") {
        return path.into_string().expect("MCPC_TEST_SERVER is UTF-8");
    }
    // Cargo names itself to the tests it runs; the package is another member of the workspace,
    // so `cargo test` does not build its binary for us.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = std::process::Command::new(cargo);
    command
        .args([
            "build",
            "--quiet",
            "--message-format=json",
            "-p",
            "mcpc-test-server",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if !cfg!(debug_assertions) {
        command.arg("--release");
    }
    let output = command
        .output()
        .expect("run cargo to build the test server");
    assert!(
        output.status.success(),
        "building mcpc-test-server failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find_map(|message| message["executable"].as_str().map(str::to_owned))
        .expect("cargo reported no mcpc-test-server executable")
}

/// A fresh log file path for one test.
pub fn log_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpc-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.log"));
    let _ = std::fs::remove_file(&path);
    path
}

pub fn config(args: &[&str]) -> StdioConfig {
    let mut argv = vec![SERVER.clone()];
    argv.extend(args.iter().map(|s| s.to_string()));
    StdioConfig::new(argv)
}

/// A connected client for the test server run with `args`.
pub fn connect(args: &[&str]) -> Client {
    connect_with(config(args), ClientOptions::default())
}

pub fn connect_with(config: StdioConfig, options: ClientOptions) -> Client {
    let client = Client::stdio(config, options);
    client.connect().expect("connect to the test server");
    client
}

/// A connected client whose server logs every line it reads to `log`.
pub fn connect_logged(log: &Path, extra: &[&str]) -> Client {
    let mut args = vec!["--log", log.to_str().unwrap()];
    args.extend_from_slice(extra);
    connect(&args)
}

/// The lines the server has read so far, parsed.
pub fn read_log(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or(Value::String(l.to_owned())))
        .collect()
}

/// Waits (up to 5 s) until `done` holds for the log, and returns the log then.
pub fn wait_for_log(log: &Path, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let lines = read_log(log);
        if done(&lines) || Instant::now() > deadline {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

pub fn is_method(line: &Value, method: &str) -> bool {
    line.get("method").and_then(Value::as_str) == Some(method)
}

/// The barrier that ends a negative check ("nothing else arrived"): a ping, answered, so the
/// server has read and logged everything the client wrote before it (it logs each line before
/// handling it). Returns the log then.
pub fn log_after_ping(client: &Client, log: &Path) -> Vec<Value> {
    client
        .ping(&mcpc::RequestOptions::default())
        .expect("the barrier ping");
    read_log(log)
}

/// The `notifications/cancelled` lines of a log.
pub fn cancels(lines: &[Value]) -> Vec<&Value> {
    lines
        .iter()
        .filter(|l| is_method(l, "notifications/cancelled"))
        .collect()
}

/// The position of the request with this id in the log.
pub fn request_index(lines: &[Value], id: i64) -> Option<usize> {
    lines
        .iter()
        .position(|l| l.get("method").is_some() && l.get("id").and_then(Value::as_i64) == Some(id))
}

/// The text of the first content item of a tool result.
pub fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// Whether a process with this pid still exists (zombies count as gone for us: they are reaped
/// by close, and kill(pid, 0) fails once they are).
#[cfg(unix)]
pub fn process_exists(pid: u32) -> bool {
    unsafe { libc::kill(pid as libc::pid_t, 0) == 0 }
}

/// Waits (up to `bound` after `since`) until `pid` is gone; how long after `since` it was seen
/// gone. On unix kill(pid, 0) fails only once a child is reaped too (a zombie still takes
/// signals), so for our own children "gone" is "gone and reaped".
pub fn gone_within(pid: u32, since: Instant, bound: Duration) -> Option<Duration> {
    while since.elapsed() < bound {
        if !process_exists(pid) {
            return Some(since.elapsed());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

/// Whether a process with this pid is still running (Windows: its handle is not signalled).
#[cfg(windows)]
pub fn process_exists(pid: u32) -> bool {
    use windows_sys::Win32::Foundation::{CloseHandle, WAIT_TIMEOUT};
    use windows_sys::Win32::System::Threading::{
        OpenProcess, WaitForSingleObject, PROCESS_SYNCHRONIZE,
    };
    // SAFETY: opens, waits on (without waiting) and closes a process handle of our own.
    unsafe {
        let process = OpenProcess(PROCESS_SYNCHRONIZE, 0, pid);
        if process.is_null() {
            return false;
        }
        let running = WaitForSingleObject(process, 0) == WAIT_TIMEOUT;
        CloseHandle(process);
        running
    }
}

/// Where scripts/install-peers.sh put the real MCP servers, or None (the test then skips,
/// unless MCPC_REQUIRE_PEERS is set, as scripts/test.sh does: then a missing peer fails).
pub fn peers_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("MCPC_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".cache/peers"));
    let ready = dir.join("venv/bin/python").exists()
        && dir
            .join("node/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
            .exists();
    if ready {
        return Some(dir);
    }
    skip(&format!(
        "the peer servers are not installed in {} (run scripts/install-peers.sh)",
        dir.display()
    ));
    None
}

/// Says a test did not run for `reason` (the caller then returns): a failure under
/// MCPC_REQUIRE_PEERS=1 (scripts/test.sh), where every part must run, a skip otherwise.
pub fn skip(reason: &str) {
    assert!(
        std::env::var_os("MCPC_REQUIRE_PEERS").is_none(),
        "did not run: {reason} (MCPC_REQUIRE_PEERS is set: every part must run)"
    );
    eprintln!("skipped: {reason}");
}

/// argv for the Python `mcp` 2.3.0 server of tests/peers.
pub fn python_server(peers: &Path) -> Vec<String> {
    vec![
        peers.join("venv/bin/python").to_string_lossy().into_owned(),
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/peers/python_server.py")
            .to_string_lossy()
            .into_owned(),
    ]
}

/// argv for @modelcontextprotocol/server-everything over stdio.
pub fn everything_server(peers: &Path) -> Vec<String> {
    let script =
        peers.join("node/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    vec![
        "node".into(),
        script.to_string_lossy().into_owned(),
        "stdio".into(),
    ]
}

/// Records a figure for the reliability report (docs/reliability.md, written by
/// scripts/reliability-report.py): one line appended to `$MCPC_REPORT_DIR/figures.txt` when the
/// test run sets that variable (scripts/test.sh does), nothing otherwise.
pub fn report_figure(line: &str) {
    use std::io::Write;
    let Some(dir) = std::env::var_os("MCPC_REPORT_DIR") else {
        return;
    };
    let path = Path::new(&dir).join("figures.txt");
    let _ = std::fs::create_dir_all(&dir);
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        // A run beside neighbours says so, at the end (the report matches figures by prefix).
        let beside = match std::env::var("MCPC_TEST_NEIGHBOURS") {
            Ok(count) => format!(" (beside {count} neighbour clients)"),
            Err(_) => String::new(),
        };
        let _ = writeln!(file, "{line}{beside}"); // one write of one line: O_APPEND keeps lines whole
    }
}

/// Takes a result from the C API: its status and message; frees it.
///
/// # Safety
/// `result` came from a request function of the C API and was not freed yet.
pub unsafe fn take_result(result: *mut mcpc::ffi::mcp_result) -> (mcpc::ffi::mcp_status, String) {
    use mcpc::ffi::{mcp_result_free, mcp_result_message, mcp_result_status};
    assert!(!result.is_null(), "request functions never return NULL");
    let status = mcp_result_status(result);
    let message = std::ffi::CStr::from_ptr(mcp_result_message(result))
        .to_string_lossy()
        .into_owned();
    mcp_result_free(result);
    (status, message)
}
