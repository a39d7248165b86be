//! Host callbacks run on a shared pool with a cap on its threads (64). A host may block that
//! many callbacks at once, on as many clients: other clients' answers to their servers must
//! still go out (they run on a pool of their own), or a server that waits for one would never
//! answer the call that made it ask. In a test binary of its own: it fills the callback pool.

mod common;

use common::*;
use mcpc::handlers::{Callbacks, LogMessage};
use mcpc::{Client, ClientOptions, RequestOptions};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The callback pool's cap (`pool::MAX_THREADS`): every thread of it is blocked.
const BLOCKED: usize = 64;

#[test]
fn answers_to_the_server_go_out_while_every_callback_thread_is_blocked() {
    let (release_tx, release) = crossbeam_channel::bounded::<()>(0);
    let blocked = Arc::new(AtomicUsize::new(0));
    let clients: Vec<Client> = (0..BLOCKED)
        .map(|_| {
            let (release, blocked) = (release.clone(), blocked.clone());
            let on_message = move |_: &LogMessage| {
                blocked.fetch_add(1, Ordering::SeqCst);
                // Until the test ends (the sender is dropped), 30 s at most.
                let _ = release.recv_timeout(Duration::from_secs(30));
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
    for client in &clients {
        let notify = json!({"kind": "notify", "params": {"level": "info", "data": "block"}});
        client
            .call_tool("fault", Some(notify), &RequestOptions::default())
            .unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while blocked.load(Ordering::SeqCst) < BLOCKED && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        blocked.load(Ordering::SeqCst),
        BLOCKED,
        "every callback blocks"
    );

    // The server asks this client for its roots and answers the call only once it has the
    // client's answer (an error here: the client has no roots handler).
    let asking = connect(&[]);
    let asked = asking.call_tool(
        "ask_client",
        Some(json!({"method": "roots/list"})),
        &RequestOptions::with_timeout(Duration::from_secs(10)),
    );
    drop(release_tx);
    let answer = asked.expect("the server got the client's answer while callbacks were blocked");
    assert!(text(&answer).contains("\"id\""), "{answer}");
    asking.close();
    clients.iter().for_each(|client| client.close());
}
