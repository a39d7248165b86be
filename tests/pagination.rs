//! Pagination edge cases against a scripted server: an empty-string cursor is a cursor, a
//! repeated cursor ends the walk, and a cycle A→B→A stops after three pages.

use mcpc::BlockingTransport;
use mcpc::{Client, ClientOptions, ConnectMode, RequestOptions};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

/// Answers `tools/list` from a script: cursor → (tool name, next cursor).
struct Pages {
    script: Vec<(Option<&'static str>, &'static str, Option<&'static str>)>,
    cursors_seen: Arc<Mutex<Vec<Option<String>>>>,
}

impl BlockingTransport for Pages {
    fn round_trip(&self, request: &str, on_sent: &mut dyn FnMut()) -> mcpc::Result<String> {
        on_sent();
        let request: Value = serde_json::from_str(request).unwrap();
        let id = request["id"].clone();
        let result = match request["method"].as_str().unwrap() {
            "initialize" => {
                json!({"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "pages", "version": "1"}})
            }
            "tools/list" => {
                let cursor = request["params"]["cursor"].as_str().map(str::to_owned);
                self.cursors_seen.lock().unwrap().push(cursor.clone());
                let (_, tool, next) = self
                    .script
                    .iter()
                    .find(|(c, _, _)| c.map(str::to_owned) == cursor)
                    .expect("scripted cursor");
                let mut page =
                    json!({"tools": [{"name": tool, "inputSchema": {"type": "object"}}]});
                if let Some(next) = next {
                    page["nextCursor"] = json!(next);
                }
                page
            }
            _ => json!({}),
        };
        Ok(json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string())
    }
    fn notify(&self, _: &str) -> mcpc::Result<()> {
        Ok(())
    }
    fn close(&self) {}
}

fn walk(
    script: Vec<(Option<&'static str>, &'static str, Option<&'static str>)>,
) -> (Vec<String>, Vec<Option<String>>) {
    let cursors_seen = Arc::new(Mutex::new(Vec::new()));
    let options = ClientOptions {
        mode: ConnectMode::Legacy,
        ..ClientOptions::default()
    };
    let client = Client::custom(
        Pages {
            script,
            cursors_seen: cursors_seen.clone(),
        },
        options,
    );
    client.connect().unwrap();
    let tools = client.tools(&RequestOptions::default()).unwrap();
    let names = tools
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    let seen = cursors_seen.lock().unwrap().clone();
    (names, seen)
}

#[test]
fn an_empty_string_cursor_is_followed() {
    let (names, cursors) = walk(vec![(None, "a", Some("")), (Some(""), "b", None)]);
    assert_eq!(names, ["a", "b"]);
    assert_eq!(cursors, [None, Some(String::new())]);
}

#[test]
fn a_repeated_cursor_ends_the_walk_keeping_its_page() {
    let (names, cursors) = walk(vec![(None, "a", Some("x")), (Some("x"), "b", Some("x"))]);
    assert_eq!(names, ["a", "b"]);
    assert_eq!(cursors.len(), 2);
}

#[test]
fn a_cycle_stops_after_three_pages() {
    let (names, _) = walk(vec![
        (None, "first", Some("A")),
        (Some("A"), "a", Some("B")),
        (Some("B"), "b", Some("A")),
    ]);
    assert_eq!(names, ["first", "a", "b"]);
}
