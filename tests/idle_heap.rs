//! What an idle client holds on the heap (issue 33): a host keeps many servers connected and
//! idle, so a buffer, queue or setup that a connection allocates up front, before it needs it,
//! or copies when it could share it, is paid once per server. This binary counts every live
//! heap byte (its own global allocator), connects clients that answer one request and go idle,
//! and bounds the growth per client. In a test binary of its own, its tests one at a time, so
//! that nothing else allocates while one counts.

mod common;

use common::http_server::HttpServer;
use common::*;
use mcpc::{Client, ClientOptions, ConnectMode, HttpTransportKind, RequestOptions};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// The system allocator, counting the bytes it has handed out and not had back.
struct Counting;

static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is passed to the system allocator unchanged; only counts are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is the system allocator's.
        let block = unsafe { System.alloc(layout) };
        if !block.is_null() {
            LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        block
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(block, layout) };
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as above.
        let moved = unsafe { System.realloc(block, layout, new_size) };
        if !moved.is_null() {
            LIVE_BYTES.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const CLIENTS: usize = 50;
/// Per idle stdio client, in bytes. Its connection state, the 4 KiB stdout buffer, the
/// server's initialize result and its stderr tail fit well under it; a queue or buffer
/// allocated at its full size for every connection does not.
const MAX_HEAP_PER_STDIO_CLIENT: isize = 24 * 1024;
/// Per idle HTTP client (modern era, its connection kept alive), in bytes: a copy of the TLS
/// roots per client (about 24 KB) does not fit.
const MAX_HEAP_PER_HTTP_CLIENT: isize = 32 * 1024;
/// Per idle HTTP client of the handshake era, its standalone GET stream open and parked, in
/// bytes: the stream's reader and its connection, but no read buffer of the connection's
/// usual size (32 KiB) held while nothing is unread.
const MAX_HEAP_PER_HANDSHAKE_CLIENT: isize = 40 * 1024;

/// Per idle client of the 2024-11-05 HTTP+SSE transport, its event stream open and parked, in
/// bytes: as for the handshake era's standalone stream.
const MAX_HEAP_PER_HTTP_SSE_CLIENT: isize = 40 * 1024;

/// The tests count the whole process's heap: one at a time.
static COUNTING: Mutex<()> = Mutex::new(());

/// The heap bytes each of `CLIENTS` clients made by `connect` holds once idle; the first one
/// made starts what the process shares (the reactor, the pools) and is not counted.
fn heap_per_idle_client(connect: impl Fn() -> Client) -> isize {
    let _alone = COUNTING.lock().unwrap_or_else(|e| e.into_inner());
    let first = connect();
    std::thread::sleep(Duration::from_millis(200));
    let before = LIVE_BYTES.load(Ordering::Relaxed);
    let clients: Vec<_> = (0..CLIENTS).map(|_| connect()).collect();
    // What the requests left behind settles (answers written, buffers given back).
    std::thread::sleep(Duration::from_millis(200));
    let per_client = (LIVE_BYTES.load(Ordering::Relaxed) - before) / CLIENTS as isize;
    drop(clients);
    drop(first);
    per_client
}

#[test]
fn an_idle_stdio_client_holds_a_few_kib_of_heap() {
    let per_client = heap_per_idle_client(|| {
        let client = connect(&[]);
        client.ping(&RequestOptions::default()).unwrap();
        client
    });
    report_figure(&format!(
        "idle_heap: an idle stdio client holds {per_client} heap bytes ({CLIENTS} clients)"
    ));
    eprintln!("idle_heap: {per_client} heap bytes per idle stdio client");
    assert!(
        per_client <= MAX_HEAP_PER_STDIO_CLIENT,
        "{per_client} heap bytes per idle stdio client, over {MAX_HEAP_PER_STDIO_CLIENT}"
    );
}

#[test]
fn an_idle_http_client_shares_the_tls_roots() {
    let server = HttpServer::start("idle_heap_http", &["--modern"]);
    let per_client = heap_per_idle_client(|| {
        let client = server.connect(ConnectMode::Modern);
        client.discover(&RequestOptions::default()).unwrap();
        client
    });
    report_figure(&format!(
        "idle_heap: an idle HTTP client (modern era) holds {per_client} heap bytes ({CLIENTS} clients)"
    ));
    eprintln!("idle_heap: {per_client} heap bytes per idle HTTP client (modern era)");
    assert!(
        per_client <= MAX_HEAP_PER_HTTP_CLIENT,
        "{per_client} heap bytes per idle HTTP client, over {MAX_HEAP_PER_HTTP_CLIENT}"
    );
}

#[test]
fn an_idle_handshake_era_http_client_holds_no_read_buffer_for_its_standalone_stream() {
    let server = HttpServer::start("idle_heap_http_handshake", &[]);
    let per_client = heap_per_idle_client(|| {
        let client = server.connect(ConnectMode::Legacy);
        client.ping(&RequestOptions::default()).unwrap();
        client
    });
    report_figure(&format!(
        "idle_heap: an idle HTTP client (handshake era, standalone stream open) holds \
         {per_client} heap bytes ({CLIENTS} clients)"
    ));
    eprintln!("idle_heap: {per_client} heap bytes per idle HTTP client (handshake era)");
    assert!(
        per_client <= MAX_HEAP_PER_HANDSHAKE_CLIENT,
        "{per_client} heap bytes per idle handshake-era HTTP client, over \
         {MAX_HEAP_PER_HANDSHAKE_CLIENT}"
    );
}

#[test]
fn an_idle_http_sse_client_holds_no_read_buffer_for_its_event_stream() {
    let server = HttpServer::start("idle_heap_http_sse", &["--sse"]);
    let per_client = heap_per_idle_client(|| {
        let mut config = server.config();
        config.transport = HttpTransportKind::LegacySse;
        let client = Client::http(config, ClientOptions::default());
        client.connect().expect("connect over HTTP+SSE");
        client.ping(&RequestOptions::default()).unwrap();
        client
    });
    report_figure(&format!(
        "idle_heap: an idle HTTP+SSE client (2024-11-05, event stream open) holds {per_client} \
         heap bytes ({CLIENTS} clients)"
    ));
    eprintln!("idle_heap: {per_client} heap bytes per idle HTTP+SSE client");
    assert!(
        per_client <= MAX_HEAP_PER_HTTP_SSE_CLIENT,
        "{per_client} heap bytes per idle HTTP+SSE client, over {MAX_HEAP_PER_HTTP_SSE_CLIENT}"
    );
}
