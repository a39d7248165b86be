//! Host callbacks: progress (per call and per client), notifications, server requests answered
//! by host handlers, timeouts that restart on progress, and the capabilities handlers imply.

mod common;

use common::*;
use mcpc::handlers::{
    Callbacks, HandlerError, ListKind, LogMessage, Progress, RequestHandler, ServerRequest,
};
use mcpc::{Client, ClientOptions, RequestOptions, Status};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

fn none() -> RequestOptions {
    RequestOptions::default()
}

fn thread_name() -> String {
    std::thread::current().name().unwrap_or("?").to_owned()
}

#[test]
fn progress_reaches_the_call_then_the_client_in_order_on_the_callback_thread() {
    let seen: Arc<Mutex<Vec<(String, f64, String)>>> = Arc::default();
    let client_seen = seen.clone();
    let options = ClientOptions {
        callbacks: Callbacks {
            on_progress: Some(Arc::new(move |p: &Progress| {
                client_seen
                    .lock()
                    .unwrap()
                    .push(("client".into(), p.progress, thread_name()));
            })),
            ..Callbacks::default()
        },
        ..ClientOptions::default()
    };
    let log = log_path("progress");
    let client = connect_with(config(&["--log", log.to_str().unwrap()]), options);
    let call_seen = seen.clone();
    let tokens: Arc<Mutex<Vec<Value>>> = Arc::default();
    let call_tokens = tokens.clone();
    let opts = RequestOptions {
        on_progress: Some(Arc::new(move |p: &Progress| {
            call_tokens.lock().unwrap().push(p.token.clone());
            assert_eq!(p.total, Some(4.0));
            assert_eq!(
                p.message.as_deref(),
                Some(format!("step {}", p.progress).as_str())
            );
            call_seen
                .lock()
                .unwrap()
                .push(("call".into(), p.progress, thread_name()));
        })),
        ..none()
    };
    let done = client
        .call_tool("progress", Some(json!({"steps": 4})), &opts)
        .unwrap();
    assert_eq!(text(&done), "done");
    // A call returns only after its own progress callbacks have run (the host may free their
    // userdata as soon as the call is over), so all four "call" entries are already there. The
    // client-wide callback for the last notice runs just after the call's own one, possibly after
    // the call returned: wait for it before checking the order of the whole sequence.
    let calls_seen = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(w, ..)| w == "call")
        .count();
    assert_eq!(
        calls_seen, 4,
        "the call returned before its progress callbacks ran"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while seen.lock().unwrap().len() < 8 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let seen = seen.lock().unwrap().clone();
    let expected: Vec<(String, f64)> = (1..=4)
        .flat_map(|i| {
            [
                ("call".to_owned(), i as f64),
                ("client".to_owned(), i as f64),
            ]
        })
        .collect();
    assert_eq!(
        seen.iter()
            .map(|(w, p, _)| (w.clone(), *p))
            .collect::<Vec<_>>(),
        expected
    );
    assert!(
        seen.iter().all(|(_, _, thread)| thread == "mcpc-pool"),
        "{seen:?}"
    );
    // The library made the token, and sent it.
    let token = tokens.lock().unwrap()[0].clone();
    assert!(token.as_str().unwrap().starts_with("mcpc-"), "{token}");
    let lines = read_log(&log);
    let call = lines.iter().find(|l| is_method(l, "tools/call")).unwrap();
    assert_eq!(call["params"]["_meta"]["progressToken"], token);
    // Two calls get two tokens.
    client
        .call_tool("progress", Some(json!({"steps": 1})), &opts)
        .unwrap();
    // Its progress reaches the callback thread a moment later: wait for it, not a time.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while tokens.lock().unwrap().last() == Some(&token) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let tokens = tokens.lock().unwrap();
    assert_ne!(tokens.first(), tokens.last());
}

#[test]
fn notifications_reach_their_callbacks_which_may_call_the_client() {
    let client_slot: Arc<OnceLock<Arc<Client>>> = Arc::default();
    let messages: Arc<Mutex<Vec<LogMessage>>> = Arc::default();
    let lists: Arc<Mutex<Vec<ListKind>>> = Arc::default();
    let inner: Arc<Mutex<Vec<String>>> = Arc::default();
    let (m, l, i, slot) = (
        messages.clone(),
        lists.clone(),
        inner.clone(),
        client_slot.clone(),
    );
    let options = ClientOptions {
        callbacks: Callbacks {
            on_message: Some(Arc::new(move |msg: &LogMessage| {
                m.lock().unwrap().push(msg.clone())
            })),
            on_list_changed: Some(Arc::new(move |kind: ListKind| l.lock().unwrap().push(kind))),
            // A callback that calls the client while another call is in flight.
            on_progress: Some(Arc::new(move |p: &Progress| {
                let client = slot.get().unwrap();
                let echo = client.call_tool(
                    "echo",
                    Some(json!({"text": p.progress.to_string()})),
                    &RequestOptions::default(),
                );
                i.lock().unwrap().push(text(&echo.unwrap()).to_owned());
            })),
            ..Callbacks::default()
        },
        ..ClientOptions::default()
    };
    let client = Arc::new(Client::stdio(config(&["--notify-before-init"]), options));
    let _ = client_slot.set(client.clone());
    client.connect().unwrap();
    let done = client
        .call_tool("progress", Some(json!({"steps": 3})), &none())
        .unwrap();
    assert_eq!(text(&done), "done");
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    while inner.lock().unwrap().len() < 3 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(*inner.lock().unwrap(), ["1", "2", "3"]);
    let messages = messages.lock().unwrap().clone();
    assert_eq!(
        (messages[0].level.as_str(), &messages[0].data),
        ("info", &json!("starting"))
    );
    assert_eq!(lists.lock().unwrap()[0], ListKind::Tools);
    client.close();
}

fn handler_map(entries: Vec<(&str, RequestHandler)>) -> HashMap<String, RequestHandler> {
    entries
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
}

#[test]
fn server_requests_are_answered_by_host_handlers_off_the_reader_thread() {
    let client_slot: Arc<OnceLock<Arc<Client>>> = Arc::default();
    let slot = client_slot.clone();
    let threads: Arc<Mutex<Vec<String>>> = Arc::default();
    let t = threads.clone();
    let roots: RequestHandler = Arc::new(move |request: &ServerRequest| {
        t.lock().unwrap().push(thread_name());
        // Call back into the client from inside the handler.
        let echo = slot
            .get()
            .unwrap()
            .call_tool(
                "echo",
                Some(json!({"text": "inner"})),
                &RequestOptions::default(),
            )
            .unwrap();
        assert!(!request.cancellation.is_cancelled());
        Ok(json!({"roots": [{"uri": "file:///work", "name": text(&echo)}]}))
    });
    let failing: RequestHandler = Arc::new(|_: &ServerRequest| {
        Err(HandlerError {
            code: -1,
            message: "user rejected".into(),
        })
    });
    let panicking: RequestHandler = Arc::new(|_: &ServerRequest| panic!("handler bug"));
    let log = log_path("handlers");
    let options = ClientOptions {
        callbacks: Callbacks {
            request_handlers: handler_map(vec![
                ("roots/list", roots),
                ("sampling/createMessage", failing),
                ("elicitation/create", panicking),
            ]),
            ..Callbacks::default()
        },
        ..ClientOptions::default()
    };
    let client = Arc::new(Client::stdio(
        config(&["--log", log.to_str().unwrap()]),
        options,
    ));
    let _ = client_slot.set(client.clone());
    client.connect().unwrap();

    let ask = |method: &str| -> Value {
        let result = client
            .call_tool("ask_client", Some(json!({"method": method})), &none())
            .unwrap();
        serde_json::from_str(text(&result)).unwrap()
    };
    let reply = ask("roots/list");
    assert_eq!(reply["result"]["roots"][0]["name"], "inner");
    assert_eq!(threads.lock().unwrap()[0], "mcpc-handler");
    assert_eq!(
        ask("sampling/createMessage")["error"],
        json!({"code": -1, "message": "user rejected"})
    );
    assert_eq!(ask("elicitation/create")["error"]["code"], -32603);
    assert_eq!(ask("unknown/method")["error"]["code"], -32601);

    // Capabilities follow the handlers.
    let init = read_log(&log)
        .into_iter()
        .find(|l| is_method(l, "initialize"))
        .unwrap();
    let caps = &init["params"]["capabilities"];
    assert!(
        caps["roots"].is_object()
            && caps["sampling"].is_object()
            && caps["elicitation"].is_object(),
        "{caps}"
    );
    client.close();
}

#[test]
fn explicit_capabilities_win_over_handlers() {
    let log = log_path("caps");
    let noop: RequestHandler = Arc::new(|_: &ServerRequest| Ok(json!({})));
    let options = ClientOptions {
        capabilities: Some(json!({"experimental": {"x": {}}})),
        callbacks: Callbacks {
            request_handlers: handler_map(vec![("roots/list", noop)]),
            ..Callbacks::default()
        },
        ..ClientOptions::default()
    };
    connect_with(config(&["--log", log.to_str().unwrap()]), options);
    let init = read_log(&log)
        .into_iter()
        .find(|l| is_method(l, "initialize"))
        .unwrap();
    assert_eq!(
        init["params"]["capabilities"],
        json!({"experimental": {"x": {}}})
    );
}

#[test]
fn timeouts_restart_on_progress_up_to_a_hard_maximum() {
    let log = log_path("reset");
    let client = connect_logged(&log, &[]);
    let slow =
        |ms: u64, opts: &RequestOptions| client.call_tool("slow", Some(json!({"ms": ms})), opts);
    let timeout = Duration::from_millis(300);
    let progressing = |reset: bool, max: Option<u64>| RequestOptions {
        timeout: Some(timeout),
        reset_timeout_on_progress: reset,
        max_total_timeout: max.map(Duration::from_millis),
        on_progress: Some(Arc::new(|_: &Progress| {})),
        ..none()
    };
    // Progress every 50 ms keeps a 300 ms timeout alive through a 1 s tool.
    assert_eq!(
        text(&slow(1000, &progressing(true, None)).unwrap()),
        "slept 1000 ms"
    );
    // Without the reset it times out.
    let err = slow(1000, &progressing(false, None)).unwrap_err();
    assert_eq!(
        (err.status, err.cancel_reason.as_deref()),
        (Status::Timeout, Some("timed out after 300 ms"))
    );
    // The hard maximum ends it anyway, and the server is told why.
    let start = std::time::Instant::now();
    let err = slow(3000, &progressing(true, Some(700))).unwrap_err();
    assert_eq!(err.status, Status::Timeout);
    assert_eq!(
        err.cancel_reason.as_deref(),
        Some("exceeded the maximum of 700 ms")
    );
    assert!(
        start.elapsed() < Duration::from_millis(1500),
        "{:?}",
        start.elapsed()
    );
    let lines = wait_for_log(&log, |l| cancels(l).len() >= 2);
    let reasons: Vec<&str> = cancels(&lines)
        .iter()
        .map(|c| c["params"]["reason"].as_str().unwrap())
        .collect();
    assert_eq!(
        reasons,
        ["timed out after 300 ms", "exceeded the maximum of 700 ms"]
    );
}

#[test]
fn handshake_only_requests_say_so_in_the_modern_era() {
    let log = log_path("legacy-only");
    let modern = connect_logged(&log, &["--modern"]);
    for err in [
        modern.set_logging_level("debug", &none()).unwrap_err(),
        modern
            .subscribe_resource("test://hello", &none())
            .unwrap_err(),
        modern
            .unsubscribe_resource("test://hello", &none())
            .unwrap_err(),
    ] {
        assert_eq!(err.status, Status::NotSupported);
        assert!(
            err.message.contains("modern protocol era"),
            "{}",
            err.message
        );
    }
    modern.ping(&none()).unwrap_err();
    let lines = wait_for_log(&log, |l| l.iter().any(|x| is_method(x, "ping")));
    assert!(!lines
        .iter()
        .any(|l| is_method(l, "logging/setLevel") || is_method(l, "resources/subscribe")));

    let legacy = connect(&[]);
    // In the handshake era they are sent: our test server answers them (for the legacy
    // listen), and refuses a level it does not know.
    legacy.set_logging_level("debug", &none()).unwrap();
    assert_eq!(
        legacy.set_logging_level("loud", &none()).unwrap_err().code,
        Some(-32602)
    );
}

#[test]
fn elicitation_defaults_fill_the_blanks() {
    let schema = json!({"properties": {"name": {"type": "string", "default": "Ada"}, "n": {"type": "integer"}}});
    assert_eq!(
        mcpc::handlers::elicitation_defaults(&schema, &json!({})),
        json!({"name": "Ada"})
    );
}

#[test]
fn a_request_the_server_cancels_stops_its_handler_and_gets_no_answer() {
    let saw_cancel = Arc::new(Mutex::new(None::<bool>));
    let seen = saw_cancel.clone();
    let waiting: RequestHandler = Arc::new(move |request: &ServerRequest| {
        // A handler waiting on a person: it gives up when the server does.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !request.cancellation.is_cancelled() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        *seen.lock().unwrap() = Some(request.cancellation.is_cancelled());
        Ok(json!({"action": "decline"}))
    });
    let options = ClientOptions {
        callbacks: Callbacks {
            request_handlers: handler_map(vec![("elicitation/create", waiting)]),
            ..Callbacks::default()
        },
        ..ClientOptions::default()
    };
    let client = connect_with(config(&[]), options);
    let args =
        json!({"method": "elicitation/create", "params": {"message": "?"}, "cancel_after_ms": 200});
    let result = client.call_tool("ask_client", Some(args), &none()).unwrap();
    assert_eq!(text(&result), "cancelled; no reply");
    assert_eq!(
        *saw_cancel.lock().unwrap(),
        Some(true),
        "the handler's token was cancelled"
    );
}
