//! Notices on demand: `subscriptions/listen` (modern), the handshake era's
//! `resources/subscribe`, `resources/unsubscribe` and `logging/setLevel`, and
//! two test methods. `test/emit {"events": [...]}` makes the server send, to
//! every open listen whose filter wants it (modern) or straight away (handshake
//! era, updates only for subscribed URIs and log messages only once a level is
//! set), one notice per event: `{"kind": "tools"|"prompts"|"resources"}` a list
//! change, `{"kind": "updated", "uri": U}`, `{"kind": "log", "level": L,
//! "data": D}`; and, to listens only, `{"kind": "end"}` (the listen's graceful
//! result) or `{"kind": "teardown"}` (`notifications/cancelled` for it, stdio's
//! other way to end it) or `{"kind": "drop"}` (HTTP: its stream ends without an answer, as
//! if it broke). `test/listeners` answers `{"count": n}`, the listens
//! open now. `--emit-on-listen EVENTS` gives every listen those events at once.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crossbeam_channel::Sender;
use serde_json::{json, Value};

use crate::{Reply, Request, RpcError, Server};

const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";
const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

struct Listener {
    serial: u64,
    filter: Value,
    level: Option<usize>,
    events: Sender<Value>,
}

static LISTENERS: Mutex<Vec<Listener>> = Mutex::new(Vec::new());
static NEXT_SERIAL: AtomicU64 = AtomicU64::new(1);
static SUBSCRIBED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
static LEVEL: Mutex<Option<usize>> = Mutex::new(None);

fn rank(level: &str) -> Option<usize> {
    LEVELS.iter().position(|l| *l == level)
}

/// The filter we honour: every known kind that was asked for, nothing else.
fn honoured(requested: &Value) -> Value {
    let mut filter = json!({});
    for key in [
        "toolsListChanged",
        "promptsListChanged",
        "resourcesListChanged",
    ] {
        if requested[key] == true {
            filter[key] = true.into();
        }
    }
    if let Some(uris) = requested["resourceSubscriptions"].as_array() {
        if !uris.is_empty() {
            filter["resourceSubscriptions"] = uris.clone().into();
        }
    }
    filter
}

/// Serves one listen until the client cancels it or an `end`/`teardown` event.
pub fn listen(server: &Server, request: &Request) -> Reply {
    let id = request.id().clone();
    let filter = honoured(&request.params["notifications"]);
    let level = request.params["_meta"][LOG_LEVEL_KEY]
        .as_str()
        .and_then(rank);
    let meta = json!({ SUBSCRIPTION_ID_KEY: id });
    let (events, received) = crossbeam_channel::unbounded();
    let serial = NEXT_SERIAL.fetch_add(1, Ordering::SeqCst);
    let listener = Listener {
        serial,
        filter: filter.clone(),
        level,
        events,
    };
    let preset = server.args.emit_on_listen.iter().flat_map(|e| e.as_array());
    for event in preset.flatten().filter(|event| wants(&listener, event)) {
        let _ = listener.events.send(event.clone());
    }
    LISTENERS.lock().unwrap().push(listener);
    // The acknowledgement is the first thing on the listen's stream.
    server.notify(
        "notifications/subscriptions/acknowledged",
        Some(json!({ "notifications": filter, "_meta": meta })),
    );
    let end = loop {
        if request.is_cancelled() {
            break Err(RpcError::cancelled());
        }
        // Asleep until an event or the cancel comes.
        let event: Value = crossbeam_channel::select! {
            recv(received) -> event => match event {
                Ok(event) => event,
                Err(_) => break Err(RpcError::cancelled()),
            },
            recv(request.cancel().signal()) -> _ => break Err(RpcError::cancelled()),
        };
        match event["kind"].as_str().unwrap_or_default() {
            "end" => break Ok(json!({ "_meta": meta })),
            "drop" => {
                // Ends the handler as a cancelled one: over HTTP its stream ends without an
                // answer, as a stream that broke (stdio: the listen just falls silent).
                request.cancel().set();
                break Err(RpcError::cancelled());
            }
            "teardown" => {
                server.notify(
                    "notifications/cancelled",
                    Some(json!({ "requestId": id, "reason": "the server ends the listen" })),
                );
                break Err(RpcError::cancelled());
            }
            _ => {
                if let Some((method, mut params)) = notice(&event) {
                    params["_meta"] = meta.clone();
                    server.notify(method, Some(params));
                }
            }
        }
    };
    LISTENERS.lock().unwrap().retain(|l| l.serial != serial);
    end
}

/// The notification an event becomes.
fn notice(event: &Value) -> Option<(&'static str, Value)> {
    Some(match event["kind"].as_str()? {
        "tools" => ("notifications/tools/list_changed", json!({})),
        "prompts" => ("notifications/prompts/list_changed", json!({})),
        "resources" => ("notifications/resources/list_changed", json!({})),
        "updated" => (
            "notifications/resources/updated",
            json!({ "uri": event["uri"] }),
        ),
        "log" => (
            "notifications/message",
            json!({ "level": event["level"], "logger": "test", "data": event["data"] }),
        ),
        _ => return None,
    })
}

/// Whether a listen with this filter and level wants the event.
fn wants(listener: &Listener, event: &Value) -> bool {
    let filter = &listener.filter;
    match event["kind"].as_str().unwrap_or_default() {
        "tools" => filter["toolsListChanged"] == true,
        "prompts" => filter["promptsListChanged"] == true,
        "resources" => filter["resourcesListChanged"] == true,
        "updated" => filter["resourceSubscriptions"]
            .as_array()
            .is_some_and(|uris| uris.contains(&event["uri"])),
        "log" => match (listener.level, event["level"].as_str().and_then(rank)) {
            (Some(least), Some(level)) => level >= least,
            _ => false,
        },
        "end" | "teardown" | "drop" => true,
        _ => false,
    }
}

/// `test/emit`: see the module docs.
pub fn emit(server: &Server, params: &Value) -> Reply {
    let Some(events) = params["events"].as_array() else {
        return Err(RpcError::invalid_params("events must be an array"));
    };
    let mut sent = 0;
    for event in events {
        if server.args.modern {
            for listener in LISTENERS.lock().unwrap().iter() {
                if wants(listener, event) && listener.events.send(event.clone()).is_ok() {
                    sent += 1;
                }
            }
            continue;
        }
        let wanted = match event["kind"].as_str().unwrap_or_default() {
            "updated" => event["uri"]
                .as_str()
                .is_some_and(|uri| SUBSCRIBED.lock().unwrap().contains(uri)),
            "log" => match (
                *LEVEL.lock().unwrap(),
                event["level"].as_str().and_then(rank),
            ) {
                (Some(least), Some(level)) => level >= least,
                _ => false,
            },
            _ => true,
        };
        if let (true, Some((method, params))) = (wanted, notice(event)) {
            server.notify(method, Some(params));
            sent += 1;
        }
    }
    Ok(json!({ "sent": sent }))
}

pub fn listeners() -> Reply {
    Ok(json!({ "count": LISTENERS.lock().unwrap().len() }))
}

pub fn subscribe(params: &Value, on: bool) -> Reply {
    let Some(uri) = params["uri"].as_str() else {
        return Err(RpcError::invalid_params("Missing uri"));
    };
    let mut subscribed = SUBSCRIBED.lock().unwrap();
    match on {
        true => subscribed.insert(uri.to_owned()),
        false => subscribed.remove(uri),
    };
    Ok(json!({}))
}

pub fn set_level(params: &Value) -> Reply {
    let Some(level) = params["level"].as_str().and_then(rank) else {
        return Err(RpcError::invalid_params("Unknown level"));
    };
    *LEVEL.lock().unwrap() = Some(level);
    Ok(json!({}))
}
