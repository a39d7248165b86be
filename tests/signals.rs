//! Signals and the host: writing to a server that closed its stdin never kills the host with
//! SIGPIPE (checked in a child process whose SIGPIPE has the default action, as a C host's
//! has; Rust programs ignore it), on this kernel and on one without `RWF_NOSIGNAL` (a seccomp
//! filter refuses the flag as a kernel before 6.18 does), and close signals the server's whole
//! process group, so a child the server forked into its group is gone too.

mod common;

use common::*;
use mcpc::{Client, ClientOptions, RequestOptions, Status, StdioConfig};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A scratch directory of this test process.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpc-signals-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A server that answers the handshake, then at the first ping closes its stdin, answers the
/// ping (so the client knows) and stays alive without reading.
const CLOSES_STDIN: &str = r#"
import json, os, sys, time
def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n"); sys.stdout.flush()
while True:
    line = sys.stdin.readline()
    if not line:
        break
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {
            "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {},
            "serverInfo": {"name": "closes-stdin", "version": "1"}}})
    elif msg.get("method") == "ping":
        os.close(0)
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
        time.sleep(30)
        break
"#;

/// Runs this test binary's test `name` in a child process with `MCPC_SIGNALS_CHILD=mode`; its
/// output is captured (so it does not mix with this run's), and returned with its status.
fn run_child(name: &str, mode: &str) -> (std::process::ExitStatus, String) {
    run_child_on(name, mode, Kernel::This)
}

/// The kernel a child process sees: this one, or one without `RWF_NOSIGNAL` (Linux before
/// 6.18), made by a seccomp filter that refuses `pwritev2` as such a kernel refuses the flag.
#[derive(Clone, Copy, Debug)]
enum Kernel {
    This,
    WithoutNoSignal,
}

fn run_child_on(name: &str, mode: &str, kernel: Kernel) -> (std::process::ExitStatus, String) {
    let mut command = std::process::Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", name, "--test-threads=1", "--nocapture"])
        .env("MCPC_SIGNALS_CHILD", mode);
    if let Kernel::WithoutNoSignal = kernel {
        command.env("MCPC_SIGNALS_OLD_KERNEL", "1");
    }
    let output = command.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status, text)
}

/// Makes this thread, and every thread and process it starts from now on, see `pwritev2`
/// fail with EOPNOTSUPP, as a kernel without `RWF_NOSIGNAL` answers that flag; and checks
/// that it does.
fn refuse_pwritev2() {
    let statement = |code: u32, jt: u8, jf: u8, k: u32| libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    };
    let filter = [
        // The system call's number, at offset 0 of seccomp_data.
        statement(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0, 0, 0),
        statement(
            libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
            0,
            1,
            libc::SYS_pwritev2 as u32,
        ),
        statement(
            libc::BPF_RET | libc::BPF_K,
            0,
            0,
            libc::SECCOMP_RET_ERRNO | libc::EOPNOTSUPP as u32,
        ),
        statement(libc::BPF_RET | libc::BPF_K, 0, 0, libc::SECCOMP_RET_ALLOW),
    ];
    let program = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr() as *mut libc::sock_filter,
    };
    unsafe {
        assert_eq!(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
        assert_eq!(
            libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &program as *const libc::sock_fprog
            ),
            0,
            "seccomp: {}",
            std::io::Error::last_os_error()
        );
        let mut fds = [0; 2];
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
        let byte = [0u8];
        let slice = libc::iovec {
            iov_base: byte.as_ptr() as *mut libc::c_void,
            iov_len: 1,
        };
        assert_eq!(libc::pwritev2(fds[1], &slice, 1, -1, 0), -1);
        assert_eq!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::EOPNOTSUPP)
        );
        libc::close(fds[0]);
        libc::close(fds[1]);
    }
    println!("sigpipe child: pwritev2 refused");
}

/// In the child: SIGPIPE back to its default action (death), then either a write through the
/// library to a server whose stdin is closed ("library"), or, as the canary that shows this
/// harness sees a SIGPIPE death, a plain write to a pipe nobody reads ("raw").
#[test]
fn sigpipe_child() {
    let Ok(mode) = std::env::var("MCPC_SIGNALS_CHILD") else {
        return; // run by the tests below only
    };
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    if std::env::var_os("MCPC_SIGNALS_OLD_KERNEL").is_some() {
        refuse_pwritev2();
    }
    // A host that promised SIGPIPE is ignored ("promised"); one that ignores it to connect and
    // then breaks the promise ("promise-broken-later", which must die: the proof that the
    // library's writes no longer hold the signal off); one that promised without ignoring it
    // ("false-promise", which connect must refuse).
    let promised = mode.starts_with("promise") || mode == "false-promise";
    if mode.starts_with("promise") {
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    }
    // A host that blocks SIGPIPE on its thread ("blocked"), and one that also has a SIGPIPE of
    // its own pending ("blocked-pending"): the library must consume the one its write raises,
    // and only that one.
    let host_blocks = mode.starts_with("blocked");
    if host_blocks {
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGPIPE);
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            if mode == "blocked-pending" {
                libc::pthread_kill(libc::pthread_self(), libc::SIGPIPE);
            }
        }
    }
    if mode == "raw" {
        let mut fds = [0; 2];
        unsafe {
            assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
            libc::close(fds[0]);
            libc::write(fds[1], b"x".as_ptr().cast(), 1);
        }
        return;
    }
    let dir = scratch("sigpipe");
    let script = dir.join("server.py");
    std::fs::write(&script, CLOSES_STDIN).unwrap();
    let mut config = StdioConfig::new(vec![
        "python3".to_string(),
        script.to_string_lossy().into_owned(),
    ]);
    config.sigpipe_ignored = promised;
    let client = Client::stdio(config, ClientOptions::default());
    if mode == "false-promise" {
        let error = client.connect().unwrap_err();
        assert_eq!(error.status, Status::InvalidArgument, "{error}");
        println!("sigpipe child: refused: {}", error.message);
        return;
    }
    client.connect().unwrap();
    client.ping(&RequestOptions::default()).unwrap(); // the server's stdin is closed now
    if mode == "promise-broken-later" {
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    // Each of these writes to a pipe nobody reads: EPIPE, and a SIGPIPE the library must keep
    // from the host.
    for _ in 0..3 {
        let error = client
            .call_tool(
                "echo",
                None,
                &RequestOptions::with_timeout(Duration::from_secs(5)),
            )
            .unwrap_err();
        assert_eq!(error.status, Status::TransportError, "{error}");
    }
    client.close();
    let _ = std::fs::remove_dir_all(&dir);
    if host_blocks {
        let pending = unsafe {
            let mut pending: libc::sigset_t = std::mem::zeroed();
            libc::sigpending(&mut pending);
            libc::sigismember(&pending, libc::SIGPIPE) == 1
        };
        println!("sigpipe child: SIGPIPE pending afterwards: {pending}");
        if pending {
            // The host's own: take it, so that unblocking below does not end the test.
            unsafe {
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, libc::SIGPIPE);
                let zero = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                libc::sigtimedwait(&set, std::ptr::null_mut(), &zero);
            }
        }
    }
    println!("sigpipe child: survived");
}

#[test]
fn writing_to_a_server_that_closed_its_stdin_never_kills_the_host() {
    if std::env::var_os("MCPC_SIGNALS_CHILD").is_some() {
        return;
    }
    // The canary first: a SIGPIPE with the default action does kill the child, and we see it.
    let (canary, output) = run_child("sigpipe_child", "raw");
    assert_eq!(
        canary.signal(),
        Some(libc::SIGPIPE),
        "the canary: {canary:?}\n{output}"
    );
    for kernel in [Kernel::This, Kernel::WithoutNoSignal] {
        let (status, output) = run_child_on("sigpipe_child", "library", kernel);
        assert_eq!(
            status.signal(),
            None,
            "{kernel:?}: the host was killed by a signal: {status:?}\n{output}"
        );
        assert!(status.success(), "{kernel:?}: {status:?}\n{output}");
        assert!(output.contains("sigpipe child: survived"), "{output}");
        if let Kernel::WithoutNoSignal = kernel {
            assert!(output.contains("pwritev2 refused"), "{output}");
        }
        // A host that blocks SIGPIPE: the library's write left nothing pending...
        let (status, output) = run_child_on("sigpipe_child", "blocked", kernel);
        assert!(status.success(), "{kernel:?}: {status:?}\n{output}");
        assert!(
            output.contains("SIGPIPE pending afterwards: false"),
            "{kernel:?}: the library left its SIGPIPE pending: {output}"
        );
        // ...and kept the host's own pending one.
        let (status, output) = run_child_on("sigpipe_child", "blocked-pending", kernel);
        assert!(status.success(), "{kernel:?}: {status:?}\n{output}");
        assert!(
            output.contains("SIGPIPE pending afterwards: true"),
            "{kernel:?}: the library took the host's pending SIGPIPE: {output}"
        );
    }
}

#[test]
fn a_host_that_ignores_sigpipe_can_say_so_and_writes_skip_the_mask() {
    if std::env::var_os("MCPC_SIGNALS_CHILD").is_some() {
        return;
    }
    // The promise kept: writes fail with EPIPE, the host lives.
    let (status, output) = run_child("sigpipe_child", "promised");
    assert!(status.success(), "{status:?}\n{output}");
    assert!(output.contains("sigpipe child: survived"), "{output}");
    // The promise broken after connecting: nothing holds the signal off any more, so the
    // write kills the host. Without the option the same host survives (the test above).
    // Whatever the kernel: the option means a plain write, with neither mask nor flag.
    for kernel in [Kernel::This, Kernel::WithoutNoSignal] {
        let (status, output) = run_child_on("sigpipe_child", "promise-broken-later", kernel);
        assert_eq!(
            status.signal(),
            Some(libc::SIGPIPE),
            "{kernel:?}: the library still holds SIGPIPE off: {status:?}\n{output}"
        );
    }
    // A promise that does not hold when connecting is refused.
    let (status, output) = run_child("sigpipe_child", "false-promise");
    assert!(status.success(), "{status:?}\n{output}");
    assert!(
        output.contains("sigpipe child: refused: sigpipe_ignored is set"),
        "{output}"
    );
}

/// Whether `pid` is a live process (a zombie is not: it has ended, it only waits to be reaped).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

fn wait_for_file(path: &Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if text.ends_with('\n') {
                return text;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{} never written",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn close_signals_the_servers_whole_process_group() {
    if std::env::var_os("MCPC_SIGNALS_CHILD").is_some() {
        return;
    }
    // The server forks a child into its own process group (a background job of sh, its
    // stdio away from the server's pipes), then becomes our test server; the child ignores
    // stdin EOF like a worker would, and only a signal ends it.
    let dir = scratch("group");
    let pidfile = dir.join("child.pid");
    let script = format!(
        "sleep 1000 </dev/null >/dev/null 2>&1 & echo $! > '{}.tmp' && mv '{0}.tmp' '{0}'\nexec '{}'\n",
        pidfile.display(),
        SERVER.as_str()
    );
    let config = StdioConfig::new(vec!["sh".to_string(), "-c".into(), script]);
    let client = Client::stdio(config, ClientOptions::default());
    client.connect().unwrap();
    let server = client.server_pid().unwrap();
    let child: u32 = wait_for_file(&pidfile).trim().parse().unwrap();
    assert!(alive(child), "the forked child runs");
    let pgid = |pid: u32| unsafe { libc::getpgid(pid as libc::pid_t) };
    assert_eq!(
        pgid(child),
        pgid(server),
        "the child is in the server's group"
    );
    let start = Instant::now();
    client.close();
    let closed_in = start.elapsed();
    let deadline = Instant::now() + Duration::from_secs(10);
    while (alive(server) || alive(child)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    common::report_figure(&format!(
        "close with a forked child in the server's process group: close returned in {:.0} ms; server gone: {}, child gone: {}",
        closed_in.as_secs_f64() * 1e3,
        !alive(server),
        !alive(child)
    ));
    assert!(!alive(server), "the server outlived close");
    assert!(
        !alive(child),
        "the child in the server's group outlived close"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
