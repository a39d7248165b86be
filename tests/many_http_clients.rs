//! Two hundred idle HTTP clients in one process, in each era: what they cost in library threads
//! and resident memory, and that notifications to all of them reach each client's callbacks in
//! order. Idle clients hold no thread of their own for cancel notices, callbacks or deadlines
//! (those run on the process's shared pools and its one watchdog), so the count of library
//! threads does not grow with the number of clients. In a test binary of its own, so that no
//! other test's threads or allocations move the counts; the tests take turns (`SERIAL`).

mod common;

use common::flood::{flood_every_client, status_kib};
use common::http_server::HttpServer;
use common::report_figure;
use common::thread_names::library_threads;
use mcpc::handlers::{Callbacks, LogMessage};
use mcpc::{Client, ClientOptions, ConnectMode};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

const CLIENTS: usize = 200;
/// The most library threads 200 idle clients may hold in all (a thread per client fails it).
const MAX_LIBRARY_THREADS: usize = 16;
/// Resident memory per idle client, KiB, in each era: twice what this test measured (debug
/// build, 2026-12-05: 40 KiB modern, 137 KiB handshake era, most of that its stream's worker
/// thread; before idle connections gave their buffers back, 295 and 385 KiB).
const MAX_KIB_PER_MODERN_CLIENT: u64 = 2 * 40;
const MAX_KIB_PER_HANDSHAKE_CLIENT: u64 = 2 * 140;
/// Notifications each client gets.
const NOTICES: u64 = 20;
/// How long thread counts may take to settle: idle HTTP workers stay 5 s for the next call,
/// idle pool threads 2 s.
const SETTLE: Duration = Duration::from_secs(20);

/// How many library threads there are of each name.
fn threads_by_name() -> BTreeMap<String, usize> {
    let mut by_name = BTreeMap::new();
    for name in library_threads() {
        *by_name.entry(name).or_default() += 1;
    }
    by_name
}

/// Waits (up to `SETTLE`) until `count` of the library's threads is at most `bound`; returns it.
fn settled(bound: usize, count: impl Fn(&[String]) -> usize) -> usize {
    let deadline = Instant::now() + SETTLE;
    loop {
        let now = count(&library_threads());
        if now <= bound || Instant::now() > deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The `data` of each notifications/message a client heard, in the order its callback ran.
type Heard = Arc<Mutex<Vec<u64>>>;

fn client(server: &HttpServer, mode: ConnectMode, heard: &Heard) -> Client {
    let heard = heard.clone();
    let options = ClientOptions {
        mode,
        callbacks: Callbacks {
            on_message: Some(Arc::new(move |message: &LogMessage| {
                heard.lock().unwrap().push(message.data.as_u64().unwrap());
            })),
            ..Callbacks::default()
        },
        ..ClientOptions::default()
    };
    let client = Client::http(server.config(), options);
    client.connect().expect("connect over HTTP");
    client
}

/// Connects `CLIENTS` clients in `mode`, checks what they hold once idle (threads counted by
/// `count`, at most `bound`; resident memory, at most `max_kib` per client), then has the server send each of them `NOTICES` notifications
/// and checks each client heard them all, in order.
fn many_clients(
    name: &str,
    mode: ConnectMode,
    (bound, count): (usize, fn(&[String]) -> usize),
    max_kib: u64,
) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = HttpServer::start(name, &["--modern"]);
    // One client first, so that what the library sets up once per process is in the baseline.
    let first = client(&server, mode, &Heard::default());
    first.close();
    drop(first);
    settled(0, |threads| threads.len());
    let baseline_kib = status_kib("VmRSS");

    let heard: Vec<Heard> = (0..CLIENTS).map(|_| Heard::default()).collect();
    let clients: Vec<Client> = heard.iter().map(|h| client(&server, mode, h)).collect();
    let threads = settled(bound, count);
    let kib_per_client = status_kib("VmRSS").saturating_sub(baseline_kib) / CLIENTS as u64;
    report_figure(&format!(
        "many_http_clients {name}: {CLIENTS} idle clients, {threads} library threads counted, \
         {kib_per_client} KiB RSS per client"
    ));
    assert!(
        threads <= bound,
        "{name}: {threads} library threads for {CLIENTS} idle clients: {:?}",
        threads_by_name()
    );
    assert!(
        kib_per_client <= max_kib,
        "{name}: {kib_per_client} KiB per idle client"
    );

    // Each client asks the server for a run of notifications, from a few threads at once.
    flood_every_client(&clients, NOTICES);
    // The last callbacks may run a moment after their call returned.
    let deadline = Instant::now() + Duration::from_secs(10);
    let all_heard = || {
        heard
            .iter()
            .all(|h| h.lock().unwrap().len() >= NOTICES as usize)
    };
    while !all_heard() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let expected: Vec<u64> = (0..NOTICES).collect();
    for (n, heard) in heard.iter().enumerate() {
        assert_eq!(*heard.lock().unwrap(), expected, "{name}: client {n}");
    }
    clients.iter().for_each(|client| client.close());
}

#[test]
fn two_hundred_idle_modern_http_clients_share_a_few_threads() {
    many_clients(
        "many_http_modern",
        ConnectMode::Modern,
        (MAX_LIBRARY_THREADS, |threads| threads.len()),
        MAX_KIB_PER_MODERN_CLIENT,
    );
}

/// In the handshake era each client keeps its standalone GET stream open, and a worker thread
/// (`mcpc-http`) blocked reading it: those stay, one per client, until the stream moves to a
/// shared reactor. The threads counted are all the others (and `mcpc-http` ones past one per
/// client).
#[test]
fn two_hundred_idle_handshake_era_http_clients_share_a_few_threads_besides_their_streams() {
    many_clients(
        "many_http_handshake",
        ConnectMode::Legacy,
        (MAX_LIBRARY_THREADS, |threads| {
            let streams = threads.iter().filter(|name| *name == "mcpc-http").count();
            threads.len() - streams + streams.saturating_sub(CLIENTS)
        }),
        MAX_KIB_PER_HANDSHAKE_CLIENT,
    );
}
