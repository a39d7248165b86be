//! Connecting, pinging and closing idle stdio clients hands no work to the library's pools: a
//! caller alone reads its own answers, and the reactor watches the rest, so no `mcpc-io` or
//! `mcpc-pool` thread is started for them (each hand-off is a thread woken, or started, and a
//! wait for it, paid by every connect and close of a host with many servers). One test in its
//! own process: the pools' threads live on for seconds after their last work. Linux: threads
//! are read from /proc.
#![cfg(target_os = "linux")]

mod common;

use common::thread_names::library_threads;
use common::*;
use mcpc::{ClientOptions, RequestOptions};

#[test]
fn idle_clients_connect_ping_and_close_without_a_pool_thread() {
    let clients: Vec<_> = (0..20)
        .map(|_| connect_with(config(&[]), ClientOptions::default()))
        .collect();
    for client in &clients {
        client.ping(&RequestOptions::default()).expect("ping");
    }
    for client in clients {
        client.close();
    }
    let pooled: Vec<String> = library_threads()
        .into_iter()
        .filter(|name| name.starts_with("mcpc-io") || name.starts_with("mcpc-pool"))
        .collect();
    assert!(
        pooled.is_empty(),
        "pool threads were started for idle clients: {pooled:?} (all: {:?})",
        library_threads()
    );
}
