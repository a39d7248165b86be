//! What a client costs in threads: an idle stdio client has three (the stdout reader, the
//! stderr reader and the dispatcher of cancel notices); the callback thread starts with the
//! first callback; close ends them all. Alone in its own test binary, so that no other test's
//! threads come and go while it counts.

mod common;

use common::*;
use mcpc::handlers::{Callbacks, Progress};
use mcpc::{ClientOptions, RequestOptions};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

/// The thread count once it has settled on `want` (threads end a moment after being joined
/// by the kernel's reckoning), or what it is after 5 s.
fn threads_settled(want: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(5);
    while threads() != want && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    threads()
}

#[test]
fn an_idle_stdio_client_has_three_threads_and_the_callback_thread_starts_with_the_first_callback() {
    let before = threads();
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    let options = ClientOptions {
        callbacks: Callbacks {
            on_progress: Some(Arc::new(move |_: &Progress| {
                counter.fetch_add(1, Ordering::Relaxed);
            })),
            ..Callbacks::default()
        },
        ..ClientOptions::default()
    };
    let client = connect_with(config(&[]), options);
    client.ping(&RequestOptions::default()).unwrap();
    assert_eq!(threads_settled(before + 3), before + 3, "idle client");

    // A call whose server reports progress: the client-wide callback runs on a new thread.
    let opts = RequestOptions {
        progress_token: Some(json!("t")),
        ..RequestOptions::default()
    };
    client
        .call_tool("progress", Some(json!({"steps": 2})), &opts)
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while seen.load(Ordering::Relaxed) < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(seen.load(Ordering::Relaxed), 2, "progress callbacks run");
    assert_eq!(threads_settled(before + 4), before + 4, "with callbacks");

    client.close();
    assert_eq!(threads_settled(before), before, "after close");
}
