//! Neighbours: with `MCPC_TEST_NEIGHBOURS=N`, a test binary also holds N clients of their own
//! test servers for its whole run, so its tests meet a reactor and pools shared with N other
//! connections, as in a host with many servers (issue 33): a few neighbours are kept busy
//! (two threads call the same ones at once, so their answers are routed by the reactor, and
//! every request writes a stderr line), and one neighbour after another is closed and replaced
//! (registrations come and go while the tests run). scripts/test.sh runs the fault, hostile
//! and cancellation tests so.
//!
//! A neighbour's call that fails is a defect the tests around it caused or suffered: the
//! process aborts with a message, so the test binary fails.

use mcpc::{Client, ClientOptions, RequestOptions, StdioConfig};
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// The neighbours kept busy, of the N.
const BUSY: usize = 8;
/// Two callers of the busy neighbours, each pausing this long between calls.
const CALL_PAUSE: Duration = Duration::from_millis(2);
/// One idle neighbour is closed and replaced every this many calls of a caller.
const REPLACE_EVERY: usize = 50;

static STARTED: OnceLock<()> = OnceLock::new();

/// Starts the neighbours once per process, servers of `server`, when `MCPC_TEST_NEIGHBOURS`
/// asks for some. Called when the test server is first needed (`SERVER`), so a test binary's
/// neighbours start with its first test that uses it.
pub fn start_if_asked(server: &str) {
    STARTED.get_or_init(|| {
        let count = match std::env::var("MCPC_TEST_NEIGHBOURS") {
            Ok(value) => value
                .parse::<usize>()
                .expect("MCPC_TEST_NEIGHBOURS is a number"),
            Err(_) => return,
        };
        if count == 0 {
            return;
        }
        let clients: Vec<Mutex<Arc<Client>>> = (0..count)
            .map(|n| Mutex::new(neighbour(server, n)))
            .collect();
        let clients = Arc::new(clients);
        for caller in 0..2 {
            let (clients, server) = (clients.clone(), server.to_owned());
            std::thread::Builder::new()
                .name(format!("test-neighbours-{caller}"))
                .spawn(move || keep_busy(&server, &clients, caller))
                .expect("start a neighbours' caller");
        }
        eprintln!("(this test binary runs beside {count} neighbour clients: MCPC_TEST_NEIGHBOURS)");
    });
}

/// Neighbour `n`: a connected client; odd ones in the modern era, the rest in the legacy one.
fn neighbour(server: &str, n: usize) -> Arc<Client> {
    let mut args = vec![server.to_owned(), "--stderr-every-request".to_owned()];
    if n % 2 == 1 {
        args.push("--modern".to_owned());
    }
    let client = Client::stdio(StdioConfig::new(args), ClientOptions::default());
    if let Err(error) = client.connect() {
        fail(&format!("neighbour {n} did not connect: {error}"));
    }
    Arc::new(client)
}

/// Calls the busy neighbours one after another (the other caller does too, so they often have
/// two calls in flight), and now and then closes an idle neighbour and starts another.
fn keep_busy(server: &str, clients: &[Mutex<Arc<Client>>], caller: usize) {
    let none = RequestOptions::default();
    let idle = clients.len().saturating_sub(BUSY);
    for round in 0.. {
        let n = round % BUSY.min(clients.len());
        // Cloned out of the lock, so both callers can be in a call on it at once.
        let client = clients[n].lock().unwrap().clone();
        let echo = serde_json::json!({ "text": "neighbour" });
        if let Err(error) = client.call_tool("echo", Some(echo), &none) {
            fail(&format!("a call to busy neighbour {n} failed: {error}"));
        }
        if round % REPLACE_EVERY == caller && idle > 0 {
            let n = BUSY + (round / REPLACE_EVERY + caller * 7) % idle;
            let fresh = neighbour(server, n);
            let old = std::mem::replace(&mut *clients[n].lock().unwrap(), fresh);
            old.close();
        }
        std::thread::sleep(CALL_PAUSE);
    }
}

fn fail(what: &str) -> ! {
    // Not `eprintln!`: the test harness captures that, and abort loses what it captured.
    let _ = writeln!(std::io::stderr(), "MCPC_TEST_NEIGHBOURS: {what}");
    std::process::abort();
}
