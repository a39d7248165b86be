//! Two hundred stdio clients in one process: none holds a thread for its cancel notices or its
//! callbacks (`mcpc-dispatch`, `mcpc-callbacks` in earlier versions): those run on the shared
//! pools (`mcpc-io`, `mcpc-pool`), which stay bounded while every client is flooded with notifications at
//! once, delivers each client's notifications in order, and keeps going for the others while
//! one client's callback is blocked. The stdio reader threads are not counted here. In a test
//! binary of its own, so that no other test's threads move the counts.

mod common;

use common::flood::flood_every_client;
use common::thread_names::threads_named_any;
use common::*;
use mcpc::handlers::{Callbacks, LogMessage};
use mcpc::{Client, ClientOptions};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const CLIENTS: usize = 200;
const NOTICES: u64 = 50;
/// The most threads the callbacks and notices of 200 clients may use at once: the two shared
/// pools' caps (`pool::MAX_THREADS` each).
const MAX_SHARED_THREADS: usize = 2 * 64;

/// Threads that run callbacks and cancel notices: the shared pools', and the per-client ones
/// of earlier versions.
fn callback_threads() -> usize {
    threads_named_any(&["mcpc-pool", "mcpc-io", "mcpc-dispatch", "mcpc-callbacks"])
}

fn per_client_threads() -> usize {
    threads_named_any(&["mcpc-dispatch", "mcpc-callbacks"])
}

#[test]
fn two_hundred_stdio_clients_share_the_pool_for_callbacks_in_order() {
    let heard: Vec<Arc<Mutex<Vec<u64>>>> = (0..CLIENTS).map(|_| Arc::default()).collect();
    // Client 0's first callback blocks until every other client heard everything (or 30 s).
    let others_done = Arc::new(AtomicBool::new(false));
    let clients: Vec<Client> = heard
        .iter()
        .enumerate()
        .map(|(n, heard)| {
            let (heard, others_done) = (heard.clone(), others_done.clone());
            let on_message = move |message: &LogMessage| {
                let mut heard_now = heard.lock().unwrap();
                heard_now.push(message.data.as_u64().unwrap());
                let first = heard_now.len() == 1;
                drop(heard_now);
                if n == 0 && first {
                    let deadline = Instant::now() + Duration::from_secs(30);
                    while !others_done.load(Ordering::Acquire) && Instant::now() < deadline {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                }
            };
            let options = ClientOptions {
                callbacks: Callbacks {
                    on_message: Some(Arc::new(on_message)),
                    ..Callbacks::default()
                },
                ..ClientOptions::default()
            };
            connect_with(config(&[]), options)
        })
        .collect();
    assert_eq!(
        per_client_threads(),
        0,
        "idle clients hold no dispatcher or callback thread of their own"
    );

    // Every client asks for a flood of notifications, from a few threads at once, while the
    // threads running callbacks are counted.
    let most = Arc::new(AtomicUsize::new(0));
    let flooding = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (most, flooding) = (most.clone(), flooding.clone());
        std::thread::spawn(move || {
            while flooding.load(Ordering::Acquire) {
                most.fetch_max(callback_threads(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    flood_every_client(&clients, NOTICES);
    let expected: Vec<u64> = (0..NOTICES).collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    let others_heard_all = || heard[1..].iter().all(|h| *h.lock().unwrap() == expected);
    while !others_heard_all() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let blocked_meanwhile = heard[0].lock().unwrap().len();
    others_done.store(true, Ordering::Release);
    flooding.store(false, Ordering::Release);
    sampler.join().unwrap();
    for (n, heard) in heard.iter().enumerate().skip(1) {
        assert_eq!(*heard.lock().unwrap(), expected, "client {n}");
    }
    assert_eq!(
        blocked_meanwhile, 1,
        "client 0's callbacks waited behind its blocked one"
    );
    while heard[0].lock().unwrap().len() < NOTICES as usize && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        *heard[0].lock().unwrap(),
        expected,
        "client 0, once unblocked"
    );
    let most = most.load(Ordering::Relaxed);
    report_figure(&format!(
        "many_stdio_callbacks: at most {most} threads ran the callbacks of {CLIENTS} flooded \
         stdio clients"
    ));
    assert!(
        most <= MAX_SHARED_THREADS,
        "{most} threads ran callbacks and notices for {CLIENTS} clients"
    );
    clients.iter().for_each(|client| client.close());
}
