//! Runs one ignored test of this test binary in a child process, within a time bound, so a
//! test can read its real stderr (inside the harness, output and panic messages are captured).

use std::io::Read;
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What the child wrote, and whether its test passed.
pub struct ChildRun {
    pub passed: bool,
    pub stdout: String,
    pub stderr: String,
}

/// Runs the ignored test `name` with `env` set. Fails (after killing the child) if it has not
/// ended within `bound`: a hang must fail, not hang the suite.
pub fn run_ignored_test(name: &str, env: &[(&str, String)], bound: Duration) -> ChildRun {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            name,
            "--ignored",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        // Built once, by this process.
        .env("MCPC_TEST_SERVER", super::SERVER.as_str())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run this test binary again");
    let stdout = drain(child.stdout.take().unwrap());
    let stderr = drain(child.stderr.take().unwrap());
    let deadline = Instant::now() + bound;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    let Some(status) = status else {
        panic!("{name} did not end within {bound:?}; killed.\n{stdout}\n{stderr}");
    };
    ChildRun {
        passed: status.success() && stdout.contains("1 passed"),
        stdout,
        stderr,
    }
}

fn drain(mut from: impl Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = from.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}
