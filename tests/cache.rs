//! The list cache: pages with a ttlMs are served from it while fresh (all-pages walks too),
//! a bypass asks the server, a list_changed drops them, and pages without a ttl are never kept.

mod common;

use common::*;
use mcpc::handlers::{Callbacks, ListKind};
use mcpc::{CancellationToken, Client, ClientOptions, Listen, RequestOptions};
use serde_json::json;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn count(log: &Path, method: &str) -> usize {
    read_log(log)
        .iter()
        .filter(|l| is_method(l, method))
        .count()
}

#[test]
fn fresh_pages_come_from_the_cache_and_a_bypass_asks_the_server() {
    let log = log_path("cache_fresh");
    let client = connect_logged(&log, &["--modern", "--ttl-ms", "60000", "--page-size", "2"]);
    let none = RequestOptions::default();
    let tools = client.tools(&none).unwrap();
    let pages = count(&log, "tools/list");
    assert!(pages >= 2, "a walk of several pages ({pages})");
    assert_eq!(client.tools(&none).unwrap(), tools);
    assert_eq!(
        client.list_tools(None, &none).unwrap()["tools"],
        json!(tools[..2])
    );
    let prompts = client.prompts(&none).unwrap();
    client.prompts(&none).unwrap();
    client.resources(&none).unwrap();
    client.resources(&none).unwrap();
    client.resource_templates(&none).unwrap();
    client.resource_templates(&none).unwrap();
    let lines = log_after_ping_modern(&client, &log);
    assert_eq!(
        lines("tools/list"),
        pages,
        "the second walk was served from the cache"
    );
    assert_eq!(lines("prompts/list"), 1);
    assert_eq!(lines("resources/list"), 1);
    assert_eq!(lines("resources/templates/list"), 1);
    assert!(!prompts.is_empty());

    let bypass = RequestOptions {
        bypass_cache: true,
        ..RequestOptions::default()
    };
    client.list_tools(None, &bypass).unwrap();
    let lines = log_after_ping_modern(&client, &log);
    assert_eq!(lines("tools/list"), pages + 1);
}

/// The log once a request the server answers after everything before it was read.
fn log_after_ping_modern<'a>(client: &Client, log: &'a Path) -> impl Fn(&str) -> usize + 'a {
    client
        .request("test/listeners", None, &RequestOptions::default())
        .unwrap();
    move |method| count(log, method)
}

#[test]
fn a_list_change_drops_the_cached_pages_of_its_kind() {
    let log = log_path("cache_invalidate");
    let changed = Arc::new(Mutex::new(Vec::new()));
    let seen = changed.clone();
    let callbacks = Callbacks {
        on_list_changed: Some(Arc::new(move |kind: ListKind| {
            seen.lock().unwrap().push(kind)
        })),
        ..Callbacks::default()
    };
    let client = Arc::new(connect_with(
        config(&[
            "--modern",
            "--ttl-ms",
            "60000",
            "--log",
            log.to_str().unwrap(),
        ]),
        ClientOptions {
            callbacks,
            ..ClientOptions::default()
        },
    ));
    let none = RequestOptions::default();
    client.tools(&none).unwrap();
    client.prompts(&none).unwrap();
    let token = CancellationToken::new();
    let listening = {
        let (client, opts) = (client.clone(), RequestOptions::with_cancellation(&token));
        let listen = Listen {
            tools_list_changed: true,
            ..Listen::default()
        };
        std::thread::spawn(move || client.listen(&listen, &opts))
    };
    wait_for_log(&log, |l| {
        l.iter().any(|l| is_method(l, "subscriptions/listen"))
    });
    // The listen may not be registered at the server yet: emit until it hears.
    let deadline = Instant::now() + Duration::from_secs(10);
    while changed.lock().unwrap().is_empty() {
        assert!(Instant::now() < deadline);
        client
            .request(
                "test/emit",
                Some(json!({"events": [{"kind": "tools"}]})),
                &none,
            )
            .unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    client.tools(&none).unwrap();
    client.prompts(&none).unwrap();
    let lines = log_after_ping_modern(&client, &log);
    assert_eq!(lines("tools/list"), 2, "asked again after the change");
    assert_eq!(lines("prompts/list"), 1, "another kind's pages stay");
    token.cancel(None);
    listening.join().unwrap().unwrap_err();
}

#[test]
fn pages_without_a_ttl_are_never_kept() {
    for args in [&["--modern"][..], &[][..]] {
        let log = log_path("cache_no_ttl");
        let mut args = args.to_vec();
        args.extend(["--log", log.to_str().unwrap()]);
        let client = connect(&args);
        let none = RequestOptions::default();
        client.tools(&none).unwrap();
        client.tools(&none).unwrap();
        let lists = log_after_ping_modern(&client, &log);
        assert_eq!(lists("tools/list"), 2, "{args:?}");
    }
}

/// The same over Streamable HTTP in the modern era: a fresh page is served from the cache (the
/// server gets one POST per list), a bypass asks again.
#[test]
fn over_http_fresh_pages_come_from_the_cache_and_a_bypass_asks_the_server() {
    use common::http_server::{posts_of, HttpServer};
    let server = HttpServer::start("cache_http", &["--modern", "--ttl-ms", "60000"]);
    let client = server.connect(mcpc::ConnectMode::Modern);
    let none = RequestOptions::default();
    let tools = client.tools(&none).unwrap();
    assert_eq!(client.tools(&none).unwrap(), tools);
    client.prompts(&none).unwrap();
    client.prompts(&none).unwrap();
    let lists = |method| posts_of(&server.requests(), method).len();
    assert_eq!(
        lists("tools/list"),
        1,
        "the second walk came from the cache"
    );
    assert_eq!(lists("prompts/list"), 1);
    let bypass = RequestOptions {
        bypass_cache: true,
        ..RequestOptions::default()
    };
    client.list_tools(None, &bypass).unwrap();
    assert_eq!(lists("tools/list"), 2, "a bypass asks the server");
}

/// A server whose list pages are 6 MiB each, kept for a minute; each answer says how many
/// `tools/list` it has served, so a page from the cache is told from a fresh one.
const LARGE_PAGES_SERVER: &str = r#"
import json, sys
served = 0
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method, id = msg.get("method"), msg["id"]
    if method == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "large pages", "version": "1"}}
    elif method == "tools/list":
        served += 1
        cursor = (msg.get("params") or {}).get("cursor")
        tool = {"name": "t-%s" % cursor, "description": "x" * (6 * 1024 * 1024),
                "inputSchema": {"type": "object"}}
        result = {"tools": [tool], "ttlMs": 60000, "_meta": {"served": served}}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id, "result": result}) + "\n")
    sys.stdout.flush()
"#;

/// The cache holds at most 16 MiB of pages: of three pages of 6 MiB, the third is not kept
/// (the next ask for it goes to the server) while the first two still are. Before, every
/// page was kept, whatever their size or number, for as long as the server's `ttlMs` said.
#[test]
fn the_cache_is_bounded_in_bytes() {
    let argv: Vec<String> = vec!["python3".into(), "-c".into(), LARGE_PAGES_SERVER.into()];
    let client = Client::stdio(mcpc::StdioConfig::new(argv), ClientOptions::default());
    client.connect().unwrap();
    let none = RequestOptions::default();
    let served = |cursor: &str| {
        let page = client.list_tools(Some(cursor), &none).unwrap();
        page["_meta"]["served"].as_u64().unwrap()
    };
    let first: Vec<u64> = ["a", "b", "c"].map(served).to_vec();
    assert_eq!(first, [1, 2, 3]);
    assert_eq!(served("a"), 1, "the first page is kept");
    assert_eq!(served("b"), 2, "the second page is kept");
    assert_eq!(served("c"), 4, "the third page, past 16 MiB, was not kept");
    client.close();
}
