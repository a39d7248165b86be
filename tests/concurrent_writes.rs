//! Many callers writing to one stdio server at once: frames from concurrent callers leave
//! together (one sender writes what the others queued meanwhile), and yet every request reaches
//! the server whole, exactly once, and every answer goes to the caller that asked. Checked with
//! answers that differ per call (each caller's own text), so a frame torn, lost, sent twice or
//! answered to the wrong caller fails the test, and with a server that stops reading for a
//! while, so that frames pile up behind a full pipe and are written in batches.

mod common;

use common::*;
use mcpc::RequestOptions;
use serde_json::json;
use std::sync::{mpsc, Arc};
use std::time::Duration;

const CALLERS: usize = 16;

/// Runs `calls` echo calls on each of CALLERS threads, each with its own text of `size` bytes,
/// and checks every answer. `started` hears from each thread before its first call.
fn callers(client: &Arc<mcpc::Client>, calls: usize, size: usize, started: mpsc::Sender<()>) {
    let threads: Vec<_> = (0..CALLERS)
        .map(|caller| {
            let client = client.clone();
            let started = started.clone();
            std::thread::spawn(move || {
                let _ = started.send(());
                let opts = RequestOptions::with_timeout(Duration::from_secs(60));
                for call in 0..calls {
                    let mut text = format!("caller {caller} call {call} ");
                    let fill = (b'a' + (caller + call) as u8 % 26) as char;
                    text.extend(std::iter::repeat_n(fill, size.saturating_sub(text.len())));
                    let result = client
                        .call_tool("echo", Some(json!({ "text": text })), &opts)
                        .unwrap_or_else(|e| panic!("caller {caller} call {call}: {e}"));
                    assert_eq!(
                        common::text(&result),
                        text,
                        "caller {caller} call {call} got someone else's answer"
                    );
                }
            })
        })
        .collect();
    drop(started);
    for thread in threads {
        thread.join().expect("a caller failed");
    }
}

#[test]
fn concurrent_callers_each_get_their_own_answers() {
    let client = Arc::new(connect(&[]));
    let (started, _) = mpsc::channel();
    callers(&client, 50, 16 * 1024, started);
    client.ping(&RequestOptions::default()).expect("still fine");
}

#[test]
fn frames_queued_behind_a_full_pipe_reach_the_server_whole_and_once() {
    let log = log_path("concurrent_writes_stalled");
    let hold = log.with_extension("hold");
    std::fs::write(&hold, b"").unwrap();
    let client = Arc::new(connect(&[
        "--log",
        log.to_str().unwrap(),
        "--stall-reading-while",
        hold.to_str().unwrap(),
    ]));
    // 16 callers with 20 KiB frames: the pipe (64 KiB) is full after a few, and the rest wait
    // in the queue while the server reads nothing.
    let (started, heard) = mpsc::channel();
    let running = {
        let client = client.clone();
        std::thread::spawn(move || callers(&client, 5, 20 * 1024, started))
    };
    for _ in 0..CALLERS {
        heard
            .recv_timeout(Duration::from_secs(30))
            .expect("every caller starts");
    }
    std::fs::remove_file(&hold).unwrap();
    running.join().expect("every call answered right");

    client
        .ping(&RequestOptions::default())
        .expect("the barrier: the server read everything before it");
    let lines = read_log(&log);
    let torn: Vec<_> = lines.iter().filter(|line| !line.is_object()).collect();
    assert!(
        torn.is_empty(),
        "lines that are not whole JSON: {}",
        torn.len()
    );
    let calls: Vec<_> = lines
        .iter()
        .filter(|line| is_method(line, "tools/call"))
        .collect();
    assert_eq!(calls.len(), CALLERS * 5, "each request read exactly once");
    let mut ids: Vec<_> = calls.iter().map(|line| line["id"].as_i64()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), CALLERS * 5, "no request twice");
}
