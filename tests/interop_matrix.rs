//! The interop matrix: every operation against MCP servers nobody here wrote, over stdio,
//! Streamable HTTP and the 2024-11-05 HTTP+SSE transport, in each protocol era the server speaks
//! over it. Python `mcp` 2.3.0 (both eras; it
//! says on stderr when a cancel reaches it) and `@modelcontextprotocol/server-everything`
//! (handshake era only), installed by scripts/install-peers.sh.
//!
//! Every cell must pass. With MCPC_INTEROP_MATRIX_OUT set, the table is also written there as
//! Markdown: scripts/interop-matrix.sh writes docs/interop.md that way.

mod common;

use common::http_peer::HttpPeer;
use common::*;
use mcpc::handlers::{Callbacks, ListKind};
use mcpc::{
    CancellationToken, Client, ClientOptions, ConnectMode, HttpConfig, Listen, RequestOptions,
    Status, StderrMode, StdioConfig,
};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The columns of the table, in order.
const OPERATIONS: [&str; 9] = [
    "connect", "list", "tools", "resource", "prompt", "complete", "progress", "cancel", "listen",
];

#[derive(Clone, Copy, PartialEq)]
enum Peer {
    Python,
    Everything,
}

#[derive(Clone, Copy, PartialEq)]
enum Transport {
    Stdio,
    Http,
    /// The 2024-11-05 HTTP+SSE transport, which the client finds by itself.
    Sse,
}

/// One row of the matrix.
struct Row {
    peer: Peer,
    transport: Transport,
    modern: bool,
}

impl Row {
    fn server(&self) -> &'static str {
        match self.peer {
            Peer::Python => "Python `mcp` 2.3.0",
            Peer::Everything => "server-everything 2026.8.31",
        }
    }
    fn transport(&self) -> &'static str {
        match self.transport {
            Transport::Stdio => "stdio",
            Transport::Http => "Streamable HTTP",
            Transport::Sse => "HTTP+SSE (2024-11-05)",
        }
    }
    fn era(&self) -> &'static str {
        if self.modern {
            "2026-07-28"
        } else {
            "2025-11-25"
        }
    }
}

/// A running peer: the client connected to it (None until connect succeeds), its stderr lines,
/// and for HTTP the server process. The process is killed when this is dropped.
struct Session {
    client: Option<Arc<Client>>,
    stderr: Arc<Mutex<Vec<String>>>,
    /// What the listen callbacks heard, as short strings.
    heard: Arc<Mutex<Vec<String>>>,
    server: Option<HttpPeer>,
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            client.close();
        }
        drop(self.server.take()); // killed after the client is closed
    }
}

/// Starts the row's server (HTTP: a process of its own; stdio: the client starts it).
fn start(row: &Row, peers: &Path) -> Result<(Session, Client), String> {
    let stderr = Arc::new(Mutex::new(Vec::new()));
    let heard = Arc::new(Mutex::new(Vec::new()));
    let options = ClientOptions {
        mode: if row.modern {
            ConnectMode::Modern
        } else {
            ConnectMode::Legacy
        },
        callbacks: listen_callbacks(&heard),
        ..ClientOptions::default()
    };
    if row.transport == Transport::Stdio {
        let argv = match row.peer {
            Peer::Python => python_server(peers),
            Peer::Everything => everything_server(peers), // ends with "stdio"
        };
        let mut config = StdioConfig::new(argv);
        config.stderr = StderrMode::Callback({
            let stderr = stderr.clone();
            Arc::new(move |line: &str| stderr.lock().unwrap().push(line.to_owned()))
        });
        let session = Session {
            client: None,
            stderr,
            heard,
            server: None,
        };
        return Ok((session, Client::stdio(config, options)));
    }

    let peer = match (row.peer, row.transport) {
        (Peer::Python, Transport::Sse) => HttpPeer::python_sse(peers)?,
        (Peer::Everything, Transport::Sse) => HttpPeer::everything_sse(peers)?,
        (Peer::Python, _) => HttpPeer::python(peers)?,
        (Peer::Everything, _) => HttpPeer::everything(peers)?,
    };
    let url = peer.url.clone();
    let session = Session {
        client: None,
        stderr: peer.stderr.clone(),
        heard,
        server: Some(peer),
    };
    Ok((session, Client::http(HttpConfig::new(&url), options)))
}

fn none() -> RequestOptions {
    RequestOptions::default()
}

/// Fails with `what` (and the value that showed it) unless `holds`.
fn check(holds: bool, what: &str, value: &dyn std::fmt::Display) -> Result<(), String> {
    if holds {
        Ok(())
    } else {
        Err(format!("{what}: {value}"))
    }
}

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Runs one operation; the Ok text is a short note for the details below the table.
fn run(row: &Row, operation: &str, client: &Client, session: &Session) -> Result<String, String> {
    let python = row.peer == Peer::Python;
    let fail = |e: mcpc::Error| e.to_string();
    match operation {
        "list" => {
            let tools = client.tools(&none()).map_err(fail)?;
            let resources = client.resources(&none()).map_err(fail)?;
            let templates = client.resource_templates(&none()).map_err(fail)?;
            let prompts = client.prompts(&none()).map_err(fail)?;
            let counts = [tools.len(), resources.len(), templates.len(), prompts.len()];
            check(
                counts.iter().all(|&n| n > 0),
                "an empty list",
                &format!("{counts:?}"),
            )?;
            // Whether the server pages its tools: its first page is not all of them, and the
            // walk above must then have followed every `nextCursor`.
            let first = client.list_tools(None, &none()).map_err(fail)?;
            let on_first = first["tools"].as_array().map_or(0, Vec::len);
            let paged = first.get("nextCursor").is_some_and(|c| !c.is_null());
            if python {
                check(
                    paged && on_first < tools.len(),
                    "the paging peer did not page",
                    &first,
                )?;
            }
            let pages = if paged {
                format!("tools in pages of {on_first}, all {} walked", tools.len())
            } else {
                "one page each (the server does not page)".to_owned()
            };
            Ok(format!(
                "{} tools, {} resources, {} templates, {} prompts; {pages}",
                counts[0], counts[1], counts[2], counts[3]
            ))
        }
        "tools" => {
            let (name, args, want) = if python {
                ("add", json!({"a": 2, "b": 40}), "42")
            } else {
                ("get-sum", json!({"a": 2, "b": 40}), "42")
            };
            let result = client.call_tool(name, Some(args), &none()).map_err(fail)?;
            check(text(&result).contains(want), "wrong sum", &result)?;
            Ok(format!("{name} → {}", text(&result)))
        }
        "resource" => {
            let uri = if python {
                "peer://greeting".to_owned()
            } else {
                let resources = client.resources(&none()).map_err(fail)?;
                let first = resources.first().ok_or("no resources")?;
                first["uri"].as_str().unwrap_or_default().to_owned()
            };
            let read = client.read_resource(&uri, &none()).map_err(fail)?;
            check(
                read["contents"][0]["uri"] == uri.as_str(),
                "wrong contents",
                &read,
            )?;
            Ok(format!("read {uri}"))
        }
        "prompt" => {
            let (name, args, want) = if python {
                ("greet", json!({"name": "Ada"}), "Ada")
            } else {
                (
                    "args-prompt",
                    json!({"city": "Paris", "state": "Texas"}),
                    "Paris",
                )
            };
            let prompt = client.get_prompt(name, Some(args), &none()).map_err(fail)?;
            check(
                prompt["messages"].to_string().contains(want),
                "wrong prompt",
                &prompt,
            )?;
            Ok(name.to_owned())
        }
        "complete" => {
            let (name, argument, want) = if python {
                ("greet", json!({"name": "name", "value": "A"}), "Ada")
            } else {
                (
                    "completable-prompt",
                    json!({"name": "department", "value": "E"}),
                    "Engineering",
                )
            };
            let done = client
                .complete(
                    json!({"type": "ref/prompt", "name": name}),
                    argument,
                    None,
                    &none(),
                )
                .map_err(fail)?;
            let values = &done["completion"]["values"];
            check(values[0] == want, "wrong completion", &done)?;
            Ok(format!("{name} → {values}"))
        }
        "progress" => {
            let seen = Arc::new(Mutex::new(Vec::new()));
            let opts = RequestOptions {
                on_progress: Some({
                    let seen = seen.clone();
                    Arc::new(move |p: &mcpc::handlers::Progress| {
                        seen.lock().unwrap().push((p.progress, p.total))
                    })
                }),
                ..none()
            };
            let (tool, args) = slow_tool(python, 0.5);
            client.call_tool(tool, Some(args), &opts).map_err(fail)?;
            // Progress comes on the callback thread; the last may trail the result a little.
            let deadline = Instant::now() + Duration::from_secs(2);
            let last = loop {
                let last = seen.lock().unwrap().last().copied();
                if matches!(last, Some((p, Some(t))) if p >= t) || Instant::now() > deadline {
                    break last;
                }
                std::thread::sleep(Duration::from_millis(10));
            };
            let count = seen.lock().unwrap().len();
            check(
                matches!(last, Some((p, Some(t))) if p >= t),
                "progress never reached its total",
                &format!("{:?}", seen.lock().unwrap()),
            )?;
            Ok(format!("{count} notifications"))
        }
        "cancel" => cancel(python, client, session),
        "listen" => listen(row, session),
        _ => unreachable!("{operation}"),
    }
}

/// A tool that runs for about `seconds`, reporting progress.
fn slow_tool(python: bool, seconds: f64) -> (&'static str, Value) {
    if python {
        ("slow", json!({ "seconds": seconds }))
    } else {
        (
            "trigger-long-running-operation",
            json!({"duration": seconds, "steps": 5}),
        )
    }
}

/// Cancels a slow call from another thread: the caller must be back at once, the server must
/// show that the cancel arrived where it can (Python logs `slow cancelled request=<id>`), and
/// the connection must go on working.
fn cancel(python: bool, client: &Client, session: &Session) -> Result<String, String> {
    let token = CancellationToken::new();
    let canceller = {
        let token = token.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(700));
            token.cancel(Some("interop matrix"));
            Instant::now()
        })
    };
    let (tool, args) = slow_tool(python, 10.0);
    let outcome = client.call_tool(tool, Some(args), &RequestOptions::with_cancellation(&token));
    let returned = Instant::now();
    let cancelled = canceller.join().unwrap();
    let error = match outcome {
        Ok(result) => return Err(format!("the call finished: {result}")),
        Err(error) => error,
    };
    check(error.status == Status::Cancelled, "not cancelled", &error)?;
    let lag = returned.saturating_duration_since(cancelled);
    check(
        lag < Duration::from_millis(500),
        "the caller was late",
        &format!("{lag:?}"),
    )?;

    let seen_by_server = if python {
        let id = error.request_id.ok_or("no request id")?;
        let needle = format!("slow cancelled request={id}");
        let deadline = Instant::now() + Duration::from_secs(3);
        while !session
            .stderr
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains(&needle))
        {
            if Instant::now() > deadline {
                return Err(format!(
                    "the server never logged `{needle}`: {:?}",
                    session.stderr.lock().unwrap()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        format!("server logged `{needle}`")
    } else {
        NO_EVIDENCE.to_owned()
    };
    // The connection goes on working.
    let (name, args) = if python {
        ("add", json!({"a": 1, "b": 1}))
    } else {
        ("get-sum", json!({"a": 1, "b": 1}))
    };
    let after = client
        .call_tool(name, Some(args), &none())
        .map_err(|e| e.to_string())?;
    check(text(&after).contains('2'), "the next call failed", &after)?;
    // No timings in the note: the page is regenerated, and should change only when behaviour does.
    Ok(format!("caller back at once; {seen_by_server}"))
}

/// Records what a listen hears: `ack <filter>`, `list <kind>`, `updated <uri>`.
fn listen_callbacks(heard: &Arc<Mutex<Vec<String>>>) -> Callbacks {
    let (a, b, c) = (heard.clone(), heard.clone(), heard.clone());
    Callbacks {
        on_list_changed: Some(Arc::new(move |kind: ListKind| {
            a.lock().unwrap().push(format!("list {}", kind.name()))
        })),
        on_resource_updated: Some(Arc::new(move |uri: &str| {
            b.lock().unwrap().push(format!("updated {uri}"))
        })),
        on_notification: Some(Arc::new(move |method: &str, params: Option<&Value>| {
            if method == "notifications/subscriptions/acknowledged" {
                let filter = params.map_or(Value::Null, |p| p["notifications"].clone());
                c.lock().unwrap().push(format!("ack {filter}"));
            }
        })),
        ..Callbacks::default()
    }
}

/// Waits (up to 10 s) until the listen callbacks heard something starting with `prefix`.
fn heard(session: &Session, prefix: &str) -> Result<String, String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let found = session
            .heard
            .lock()
            .unwrap()
            .iter()
            .find(|e| e.starts_with(prefix))
            .cloned();
        if let Some(found) = found {
            return Ok(found);
        }
        if Instant::now() > deadline {
            return Err(format!(
                "never heard `{prefix}`: {:?}",
                session.heard.lock().unwrap()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A listen for tools list changes and one resource's updates, on a thread of its own: its
/// acknowledgement must arrive (the server's in the modern era, the library's after
/// resources/subscribe in the handshake era); the Python server is then made to change
/// (`touch`) and the notices must arrive; then the listen is cancelled: the caller must be back
/// at once and, where the server can show it (Python, modern), the cancel must reach the
/// server's listen. The connection goes on working.
fn listen(row: &Row, session: &Session) -> Result<String, String> {
    let client = session.client.clone().ok_or("not connected")?;
    let python = row.peer == Peer::Python;
    let uri = if python {
        "peer://greeting".to_owned()
    } else {
        let resources = client.resources(&none()).map_err(|e| e.to_string())?;
        let first = resources.first().ok_or("no resources")?;
        first["uri"].as_str().unwrap_or_default().to_owned()
    };
    let wanted = Listen {
        tools_list_changed: true,
        resource_uris: vec![uri.clone()],
        ..Listen::default()
    };
    let token = CancellationToken::new();
    let listening = {
        let (client, opts) = (client.clone(), RequestOptions::with_cancellation(&token));
        std::thread::spawn(move || client.listen(&wanted, &opts))
    };
    let outcome = (|| {
        let ack = heard(session, "ack")?;
        let mut notes = vec![ack];
        if python {
            let args = json!({"uri": uri, "legacy": !row.modern});
            client
                .call_tool("touch", Some(args), &none())
                .map_err(|e| e.to_string())?;
            notes.push(heard(session, "list tools")?);
            if row.modern {
                // The Python server honours resources/subscribe only in the modern era.
                notes.push(heard(session, "updated")?);
            }
        }
        Ok::<_, String>(notes)
    })();
    let cancelled = Instant::now();
    token.cancel(Some("interop matrix"));
    let ended = listening.join().unwrap();
    let lag = cancelled.elapsed();
    let notes = outcome?;
    match ended {
        Err(e) if e.status == Status::Cancelled => {}
        other => return Err(format!("the listen did not end as cancelled: {other:?}")),
    }
    check(
        lag < Duration::from_millis(500),
        "the caller was late",
        &format!("{lag:?}"),
    )?;
    let seen_by_server = if python && row.modern {
        let needle = "listen cancelled request=";
        let deadline = Instant::now() + Duration::from_secs(3);
        while !session
            .stderr
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains(needle))
        {
            if Instant::now() > deadline {
                return Err(format!(
                    "the server never logged `{needle}`: {:?}",
                    session.stderr.lock().unwrap()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        "server logged `listen cancelled`".to_owned()
    } else {
        NO_EVIDENCE.to_owned()
    };
    let (name, args) = if python {
        ("add", json!({"a": 1, "b": 1}))
    } else {
        ("get-sum", json!({"a": 1, "b": 1}))
    };
    client
        .call_tool(name, Some(args), &none())
        .map_err(|e| e.to_string())?;
    Ok(format!(
        "heard {}; cancelled at once; {seen_by_server}",
        notes.join(", ")
    ))
}

/// The note of a cancel cell whose server shows nothing: only the client's side is checked.
const NO_EVIDENCE: &str = "no server-side evidence: the server gives no sign of a cancel";

/// Runs a row: connect, then every operation on that connection. One result per column.
fn run_row(row: &Row, peers: &Path) -> Vec<Result<String, String>> {
    let (mut session, client) = match start(row, peers) {
        Ok(started) => started,
        Err(e) => return vec![Err(e); OPERATIONS.len()],
    };
    let connected = client.connect().map_err(|e| e.to_string()).and_then(|_| {
        let version = client.protocol_version().unwrap_or_default();
        check(version == row.era(), "negotiated", &version)?;
        let server = client.server_implementation().unwrap_or_default();
        Ok(format!("{} {}", server["name"], server["version"]).replace('"', ""))
    });
    let client = Arc::new(client);
    session.client = Some(client.clone());
    let mut results = vec![connected.clone()];
    for operation in &OPERATIONS[1..] {
        results.push(match &connected {
            Ok(_) => run(row, operation, &client, &session),
            Err(_) => Err("not connected".to_owned()),
        });
    }
    results
}

/// The Markdown page: the table, then what each cell did.
fn markdown(rows: &[Row], results: &[Vec<Result<String, String>>]) -> String {
    let mut out = String::from(
        "# Interop matrix\n\n\
         Written by the test command (`scripts/test.sh` runs `tests/interop_matrix.rs`, which \
         writes build/interop.md, and fails when this committed copy differs from it; \
         `scripts/interop-matrix.sh` rewrites this copy); do not edit by hand. mcpc against MCP \
         servers nobody here wrote, over each transport, in each protocol \
         era the server speaks over it (server-everything speaks only the handshake era, and so \
         does the 2024-11-05 HTTP+SSE transport, which the client finds by itself: it is given \
         only the URL of the server's event stream). Each row is one \
         connection: connect, list everything (tools, resources, templates, prompts, all pages; \
         the Python server lists its tools one per page), \
         call a tool, read a resource, get a prompt, complete a prompt argument, a call with \
         progress, and a cancel from another thread (the caller must be back at once; the Python \
         server logs `slow cancelled request=<id>` when the cancel reaches it, and the test waits \
         for that line; server-everything has no such sign), followed by a call that must work; \
         then a listen (tools list changes and one resource's updates): its acknowledgement, the \
         notices the Python server is made to send (its `touch` tool), and its cancel (the Python \
         server logs `listen cancelled` in the modern era; a handshake-era listen sends nothing \
         to cancel).\n\n",
    );
    out.push_str("| Server | Transport | Era |");
    for operation in OPERATIONS {
        out.push_str(&format!(" {operation} |"));
    }
    out.push_str("\n|---|---|---|");
    out.push_str(&"---|".repeat(OPERATIONS.len()));
    out.push('\n');
    for (row, cells) in rows.iter().zip(results) {
        out.push_str(&format!(
            "| {} | {} | {} |",
            row.server(),
            row.transport(),
            row.era()
        ));
        for cell in cells {
            out.push_str(match cell {
                Ok(note) if note.contains(NO_EVIDENCE) => " ✅ pass (client side only) |",
                Ok(_) => " ✅ pass |",
                Err(_) => " ❌ FAIL |",
            });
        }
        out.push('\n');
    }
    out.push_str("\n## Details\n");
    for (row, cells) in rows.iter().zip(results) {
        out.push_str(&format!(
            "\n**{}, {}, {}**\n\n",
            row.server(),
            row.transport(),
            row.era()
        ));
        for (operation, cell) in OPERATIONS.iter().zip(cells) {
            match cell {
                Ok(note) => out.push_str(&format!("- {operation}: pass ({note})\n")),
                Err(why) => out.push_str(&format!("- {operation}: FAIL: {why}\n")),
            }
        }
    }
    out
}

#[test]
fn interop_matrix() {
    let Some(peers) = peers_dir() else { return };
    let mut rows = Vec::new();
    for transport in [Transport::Stdio, Transport::Http, Transport::Sse] {
        for modern in [false, true] {
            if !(modern && transport == Transport::Sse) {
                rows.push(Row {
                    peer: Peer::Python,
                    transport,
                    modern,
                });
            }
        }
        rows.push(Row {
            peer: Peer::Everything,
            transport,
            modern: false,
        });
    }
    let results: Vec<_> = rows.iter().map(|row| run_row(row, &peers)).collect();
    let page = markdown(&rows, &results);
    println!("{page}");
    if let Some(path) = std::env::var_os("MCPC_INTEROP_MATRIX_OUT") {
        std::fs::write(&path, &page).expect("write the interop matrix");
    }
    let failed = results
        .iter()
        .flatten()
        .filter(|cell| cell.is_err())
        .count();
    assert_eq!(
        failed, 0,
        "{failed} cells of the interop matrix failed:\n{page}"
    );
}
