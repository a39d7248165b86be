//! A stdio server starts from a descriptor table of its own: it inherits its three pipes and
//! nothing of the host's, not even a descriptor the host forgot to mark close-on-exec, however
//! many the host holds. (Linux: servers are started by the `mcpc-spawn` thread, whose table
//! holds only the standard three and its socket to the process.) A test binary of its own: it
//! opens descriptors.

#![cfg(target_os = "linux")]

mod common;

use common::*;
use mcpc::{ClientOptions, StdioConfig};
use std::os::fd::{FromRawFd, OwnedFd};

/// A pipe whose ends are inherited by a process started the ordinary way (no close-on-exec).
fn inheritable_pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: pipe writes two new descriptors into the array we own.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: two descriptors pipe just opened, owned by nobody else.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

#[test]
fn a_server_inherits_only_its_pipes_whatever_the_host_holds() {
    let leaky = inheritable_pipe();
    // Many more, as a host with many connections holds (close-on-exec, as Rust opens them).
    let many: Vec<std::fs::File> = (0..500)
        .map(|_| std::fs::File::open("/dev/null").unwrap())
        .collect();
    let listing = std::env::temp_dir().join(format!("mcpc-spawn-table-{}", std::process::id()));
    // The server lists the descriptors it was started with (those of `ls`, which has the
    // same, plus the directory it reads), then becomes the test server.
    let script = format!(
        "ls /proc/self/fd > '{}'; exec '{}'",
        listing.display(),
        SERVER.as_str()
    );
    let config = StdioConfig::new(vec!["sh".into(), "-c".into(), script]);
    for _ in 0..3 {
        let client = connect_with(config.clone(), ClientOptions::default());
        client.close();
        let inherited: Vec<u32> = std::fs::read_to_string(&listing)
            .unwrap()
            .split_whitespace()
            .map(|fd| fd.parse().unwrap())
            .collect();
        // 0, 1 and 2, and the one `ls` opened for the directory.
        assert!(
            inherited.len() <= 4 && inherited.starts_with(&[0, 1, 2]),
            "the server started with descriptors {inherited:?}"
        );
    }
    let _ = std::fs::remove_file(&listing);
    drop((leaky, many));
}

/// The thread that starts servers ends after a while without work, and a new one starts the
/// next server.
#[test]
fn the_spawner_thread_ends_when_idle_and_comes_back_for_the_next_server() {
    let spawners = || {
        common::thread_names::library_threads()
            .iter()
            .filter(|name| *name == "mcpc-spawn")
            .count()
    };
    connect(&[]).close();
    assert_eq!(spawners(), 1, "no mcpc-spawn thread started the server");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while spawners() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the mcpc-spawn thread never ended"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let client = connect(&[]);
    client
        .ping(&mcpc::RequestOptions::default())
        .expect("a ping to a server started by a new thread");
    assert_eq!(spawners(), 1);
    client.close();
}
