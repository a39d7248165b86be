//! Two hundred idle stdio clients in one process (issue 33): what they hold grows with the
//! work in flight, not with their number. Their stdout, stderr and exit are watched by the
//! process's one reactor thread, so the library threads stay a handful; each holds a few
//! descriptors and KiB. Then everything that holds for one client holds with 200 sharing the
//! reactor: pings in turns and 50 at once, a notification flood on some, a cancel that wakes
//! its caller at once, and close, bounded. In a test binary of its own, so that no other test's
//! threads, descriptors or memory come and go while it counts.

mod common;

use common::thread_names::library_threads;
use common::*;
use mcpc::handlers::{Callbacks, LogMessage};
use mcpc::{CancellationToken, Client, ClientOptions, RequestOptions, Status};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CLIENTS: usize = 200;
/// The first clients' servers flood them with log notifications after connecting.
const FLOODED: usize = 5;
const FLOOD_COUNT: usize = 2000;

/// Every library thread (all are named `mcpc-...`): the reactor, the shared pools and workers.
/// None belongs to one connection.
fn io_threads() -> Vec<String> {
    library_threads()
}

/// How many threads go by each name.
fn by_name(names: &[String]) -> std::collections::BTreeMap<&str, usize> {
    let mut counts = std::collections::BTreeMap::new();
    for name in names {
        *counts.entry(name.as_str()).or_insert(0) += 1;
    }
    counts
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    // SAFETY: sysconf takes a constant and has no memory effects.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
    pages * page / 1024
}

fn none() -> RequestOptions {
    RequestOptions::default()
}

/// Runs `each` on every client from `threads` threads at once, each taking every
/// `threads`-th client; returns when all have finished.
fn on_all_at_once(clients: &Arc<Vec<Client>>, threads: usize, each: fn(&Client)) {
    let workers: Vec<_> = (0..threads)
        .map(|first| {
            let clients = clients.clone();
            std::thread::spawn(move || {
                for client in clients.iter().skip(first).step_by(threads) {
                    each(client);
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("no panic");
    }
}

#[test]
fn two_hundred_idle_stdio_clients_share_the_reactor_and_hold_little_each() {
    let fds_before = open_fds();
    let rss_before = rss_kib();
    let flood_seen = Arc::new(AtomicUsize::new(0));
    let connect_started = Instant::now();
    let clients: Vec<Client> = (0..CLIENTS)
        .map(|n| {
            let count = FLOOD_COUNT.to_string();
            let args: &[&str] = match n < FLOODED {
                true => &["--flood", "notifications/message", "--flood-count", &count],
                false => &[],
            };
            let seen = flood_seen.clone();
            let options = ClientOptions {
                callbacks: Callbacks {
                    on_message: Some(Arc::new(move |_: &LogMessage| {
                        seen.fetch_add(1, Ordering::Relaxed);
                    })),
                    ..Callbacks::default()
                },
                ..ClientOptions::default()
            };
            connect_with(config(args), options)
        })
        .collect();
    let connect_time = connect_started.elapsed();
    let clients = Arc::new(clients);
    let pids: Vec<u32> = clients.iter().map(|c| c.server_pid().unwrap()).collect();

    // The flood reaches its clients while the others sit idle.
    let deadline = Instant::now() + Duration::from_secs(60);
    while flood_seen.load(Ordering::Relaxed) < FLOODED * FLOOD_COUNT / 2 {
        assert!(
            Instant::now() < deadline,
            "the floods were not read: {} notifications seen",
            flood_seen.load(Ordering::Relaxed)
        );
        std::thread::sleep(Duration::from_millis(10));
    }

    // Idle: count what the clients hold.
    for client in clients.iter() {
        client.ping(&none()).unwrap();
    }
    std::thread::sleep(Duration::from_millis(200));
    let io = io_threads();
    let fds = open_fds() - fds_before;
    let rss = rss_kib().saturating_sub(rss_before);
    let fds_per_client = fds as f64 / CLIENTS as f64;
    let kib_per_client = rss as f64 / CLIENTS as f64;
    report_figure(&format!(
        "many_stdio_clients: {CLIENTS} idle clients: {} library I/O threads in all, {fds_per_client:.2} descriptors and {kib_per_client:.0} KiB RSS per client, connect all {:.2} s",
        io.len(),
        connect_time.as_secs_f64()
    ));
    eprintln!(
        "{CLIENTS} idle clients: io threads {:?}, {fds_per_client:.2} fds/client, {kib_per_client:.0} KiB/client",
        by_name(&io)
    );
    assert!(
        io.len() <= 16,
        "{} library threads with {CLIENTS} idle clients: {:?}",
        io.len(),
        by_name(&io)
    );
    assert!(
        fds <= 5 * CLIENTS,
        "{fds_per_client:.2} descriptors per idle client"
    );
    // Twice what was measured here (40 KiB in a debug build; 92 KiB when each client still
    // had a dispatcher thread, 180 KiB with three threads).
    assert!(
        kib_per_client <= 2.0 * 40.0,
        "{kib_per_client:.0} KiB per idle client"
    );

    // Pings in turns, then 50 in flight at once.
    for client in clients.iter() {
        client.ping(&none()).unwrap();
    }
    on_all_at_once(&clients, 50, |client| {
        for _ in 0..5 {
            client.ping(&none()).unwrap();
        }
    });

    // A cancel wakes its caller at once, with 200 clients on the reactor.
    let token = CancellationToken::new();
    let canceller = {
        let token = token.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            token.cancel(Some("enough"))
        })
    };
    let started = Instant::now();
    let error = clients[CLIENTS / 2]
        .call_tool(
            "slow",
            Some(json!({"ms": 60_000})),
            &RequestOptions::with_cancellation(&token),
        )
        .unwrap_err();
    assert_eq!(error.status, Status::Cancelled);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the cancel took {:?}",
        started.elapsed()
    );
    assert!(canceller.join().unwrap());
    // The other clients are unaffected, in turns and at once.
    clients[CLIENTS / 2].ping(&none()).unwrap();
    on_all_at_once(&clients, 50, |client| {
        client.ping(&none()).unwrap();
    });

    // Close all, bounded, leaving no server and no descriptor behind.
    let closing = Instant::now();
    on_all_at_once(&clients, 8, |client| client.close());
    let close_time = closing.elapsed();
    assert!(
        close_time < Duration::from_secs(120),
        "closing {CLIENTS} clients took {close_time:?}"
    );
    report_figure(&format!(
        "many_stdio_clients: close all {CLIENTS} from 8 threads {:.2} s",
        close_time.as_secs_f64()
    ));
    for pid in pids {
        assert!(!process_exists(pid), "server {pid} outlived close");
    }
    drop(clients);
    let deadline = Instant::now() + Duration::from_secs(10);
    while open_fds() > fds_before + 8 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        open_fds() <= fds_before + 8,
        "{} descriptors left after closing every client",
        open_fds() - fds_before
    );
}
