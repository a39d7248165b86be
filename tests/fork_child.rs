//! A child forked (without exec) after the library started its threads has none of them; the
//! library must not hang there: connect and requests fail at once with NOT_SUPPORTED, saying
//! why. The child reports over a pipe and leaves with `_exit` (no destructor may end the
//! parent's server); the parent bounds the wait, so a hang fails instead of hanging.
#![cfg(unix)]

mod common;

use common::*;
use mcpc::{Client, ClientOptions, RequestOptions, Status};
use std::io::Read;
use std::os::fd::FromRawFd;
use std::time::{Duration, Instant};

/// What the child saw: the status of a ping on the parent's client, and of a connect of a new
/// client, as `Status` numbers (0 for OK).
fn in_the_child(client: &Client) -> [u8; 2] {
    let ping = match client.ping(&RequestOptions::default()) {
        Ok(_) => 0,
        Err(e) => e.status as u8,
    };
    let fresh = Client::stdio(config(&[]), ClientOptions::default());
    let connect = match fresh.connect() {
        Ok(_) => 0,
        Err(e) => e.status as u8,
    };
    std::mem::forget(fresh);
    [ping, connect]
}

#[test]
fn a_forked_child_gets_not_supported_at_once() {
    let client = connect(&[]);
    client
        .ping(&RequestOptions::default())
        .expect("ping in the parent");
    let mut fds = [0; 2];
    // SAFETY: a pipe into an array of two descriptors we own from here.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: the child only calls the library, writes to the pipe and leaves with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork");
    if pid == 0 {
        let seen = in_the_child(&client);
        // SAFETY: writes two bytes from our buffer, then ends the child without unwinding.
        unsafe {
            libc::write(fds[1], seen.as_ptr().cast(), 2);
            libc::_exit(0);
        }
    }
    // SAFETY: the write end is ours to close; the read end becomes the File's.
    unsafe { libc::close(fds[1]) };
    let mut from_child = unsafe { std::fs::File::from_raw_fd(fds[0]) };
    let started = Instant::now();
    let reader = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let _ = from_child.read_to_end(&mut seen);
        seen
    });
    while !reader.is_finished() && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    if !reader.is_finished() {
        // SAFETY: kill has no memory effects; the child is ours.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let mut status = 0;
    // SAFETY: reaps our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    let seen = reader.join().unwrap();
    let not_supported = Status::NotSupported as u8;
    assert_eq!(
        seen,
        vec![not_supported, not_supported],
        "the child's ping and connect (statuses; nothing: it hung and was killed after 10 s)"
    );
    client
        .ping(&RequestOptions::default())
        .expect("the parent's client still works");
}
