//! Every numeric setter of the C API at 0, 1 and the largest value of its type, through the
//! exported functions, over stdio and HTTP: the setter refuses the value (INVALID_ARGUMENT) or
//! the client works with it. Never a hang, never INTERNAL_ERROR (a caught panic), and nothing
//! on stderr: max_line_bytes = SIZE_MAX once wrapped the HTTP read limit to 0 (every body
//! failed) and, in debug builds, panicked a worker thread that had no guard, so the call never
//! ended and the panic text reached stderr.
//!
//! The matrix runs in a child process (this test binary again, running the ignored test), so
//! its real stderr can be checked: inside the test harness a panic's text would be captured.

mod common;

use common::child_process::run_ignored_test;
use common::http_server::HttpServer;
use common::take_result as take;
use mcpc::ffi::*;
use std::ffi::{c_int, CString};
use std::ptr::null;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Far more than any case needs; a hang would not meet it.
const BOUND: Duration = Duration::from_secs(60);
const URL_ENV: &str = "MCPC_EDGE_VALUES_URL";

#[derive(Clone, Copy, Debug)]
enum Edge {
    Zero,
    One,
    Max,
}

impl Edge {
    fn u64(self) -> u64 {
        [0, 1, u64::MAX][self as usize]
    }
    fn usize(self) -> usize {
        [0, 1, usize::MAX][self as usize]
    }
    fn u32(self) -> u32 {
        [0, 1, u32::MAX][self as usize]
    }
    fn int(self) -> c_int {
        [0, 1, c_int::MAX][self as usize]
    }
}

type ClientSetter = unsafe fn(*mut mcp_client_options, Edge) -> mcp_status;
type RequestSetter = unsafe fn(*mut mcp_request_options, Edge) -> mcp_status;

const CLIENT_SETTERS: [(&str, ClientSetter); 11] = [
    ("timeout_ms", |o, e| unsafe {
        mcp_client_options_set_timeout_ms(o, e.u64())
    }),
    ("connect_timeout_ms", |o, e| unsafe {
        mcp_client_options_set_connect_timeout_ms(o, e.u64())
    }),
    ("max_line_bytes", |o, e| unsafe {
        mcp_client_options_set_max_line_bytes(o, e.usize())
    }),
    ("max_pages", |o, e| unsafe {
        mcp_client_options_set_max_pages(o, e.u32())
    }),
    ("discover_timeout_ms", |o, e| unsafe {
        mcp_client_options_set_discover_timeout_ms(o, e.u64())
    }),
    ("input_required_max_rounds", |o, e| unsafe {
        mcp_client_options_set_input_required_max_rounds(o, e.u32())
    }),
    ("stderr", |o, e| unsafe {
        mcp_client_options_set_stderr(o, e.int())
    }),
    ("mode", |o, e| unsafe {
        mcp_client_options_set_mode(o, e.int())
    }),
    ("http_connect_timeout_ms", |o, e| unsafe {
        mcp_client_options_set_http_connect_timeout_ms(o, e.u64())
    }),
    ("http_idle_timeout_ms", |o, e| unsafe {
        mcp_client_options_set_http_idle_timeout_ms(o, e.u64())
    }),
    ("reconnect_policy", |o, e| unsafe {
        mcp_client_options_set_reconnect_policy(o, e.u64(), e.u64(), 1.0, e.u32())
    }),
];

const REQUEST_SETTERS: [(&str, RequestSetter); 2] = [
    ("request timeout_ms", |o, e| unsafe {
        mcp_request_options_set_timeout_ms(o, e.u64())
    }),
    ("request max_total_timeout_ms", |o, e| unsafe {
        mcp_request_options_set_max_total_timeout_ms(o, e.u64())
    }),
];

/// One client made with `options`, then connect, ping and an all-pages listing with
/// `request`. Returns what each step said.
unsafe fn exercise(
    url: Option<&str>,
    options: *mut mcp_client_options,
    request: *mut mcp_request_options,
) -> Vec<(mcp_status, String)> {
    let client = match url {
        Some(url) => {
            let url = CString::new(url).unwrap();
            mcp_client_new_http(url.as_ptr(), options)
        }
        None => {
            let server = CString::new(common::SERVER.as_str()).unwrap();
            let argv = [server.as_ptr(), null()];
            mcp_client_new_stdio(argv.as_ptr(), options)
        }
    };
    let steps = vec![
        take(mcp_client_connect(client)),
        take(mcp_client_ping(client, request)),
        take(mcp_client_tools(client, request)),
    ];
    mcp_client_close(client);
    mcp_client_free(client);
    steps
}

/// Checks one case: refused by its setter, or working; a 1 may also make the calls fail
/// cleanly (1 ms timeouts, 1-byte lines), but never with INTERNAL_ERROR.
fn check(case: &str, edge: Edge, set: mcp_status, steps: &[(mcp_status, String)]) {
    for (status, message) in steps {
        assert_ne!(*status, mcp_status::InternalError, "{case}: {message}");
    }
    if set == mcp_status::InvalidArgument {
        assert!(
            steps.iter().all(|(s, _)| *s == mcp_status::InvalidArgument),
            "{case}: refused by its setter, yet {steps:?}"
        );
        return;
    }
    assert_eq!(set, mcp_status::Ok, "{case}");
    if !matches!(edge, Edge::One) {
        for (status, message) in steps {
            assert_eq!(*status, mcp_status::Ok, "{case}: accepted, then {message}");
        }
    }
}

fn run_case(case: String, work: impl FnOnce() + Send + 'static) {
    let (done, finished) = mpsc::channel();
    let started = Instant::now();
    std::thread::spawn(move || {
        work();
        let _ = done.send(());
    });
    match finished.recv_timeout(BOUND) {
        Ok(()) => {}
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{case}: no outcome after {BOUND:?}"),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            panic!("{case}: failed after {:?}", started.elapsed())
        }
    }
}

/// Our test server answering with SSE streams, and one answering with JSON bodies.
fn http_servers() -> [HttpServer; 2] {
    [
        HttpServer::start("edge_values_sse", &[]),
        HttpServer::start("edge_values_json", &["--http-json"]),
    ]
}

/// The matrix; run by `setters_at_their_edges_...` in a child process.
#[test]
#[ignore = "run in a child process by setters_at_their_edges_neither_hang_nor_panic_nor_print"]
fn edge_matrix_child() {
    // Run alone (`--ignored`), it starts its own servers.
    let own_servers;
    let urls = match std::env::var(URL_ENV) {
        Ok(urls) => urls,
        Err(_) => {
            own_servers = http_servers();
            format!("{} {}", own_servers[0].url, own_servers[1].url)
        }
    };
    let (sse, json) = urls.split_once(' ').unwrap();
    let transports = [
        ("stdio", None),
        ("HTTP, SSE answers", Some(sse.to_owned())),
        ("HTTP, JSON answers", Some(json.to_owned())),
    ];
    for (name, transport) in transports {
        for edge in [Edge::Zero, Edge::One, Edge::Max] {
            for (setter, apply) in CLIENT_SETTERS {
                let case = format!("{name}: {setter} = {edge:?}");
                let transport = transport.clone();
                run_case(case.clone(), move || unsafe {
                    let options = mcp_client_options_new();
                    let set = apply(options, edge);
                    let steps = exercise(transport.as_deref(), options, std::ptr::null_mut());
                    mcp_client_options_free(options);
                    check(&case, edge, set, &steps);
                });
            }
            for (setter, apply) in REQUEST_SETTERS {
                let case = format!("{name}: {setter} = {edge:?}");
                let transport = transport.clone();
                run_case(case.clone(), move || unsafe {
                    let request = mcp_request_options_new();
                    let set = apply(request, edge);
                    let mut steps = exercise(transport.as_deref(), std::ptr::null_mut(), request);
                    mcp_request_options_free(request);
                    // The connect does not use request options.
                    steps.remove(0);
                    check(&case, edge, set, &steps);
                });
            }
        }
    }
}

#[test]
fn setters_at_their_edges_neither_hang_nor_panic_nor_print() {
    // The HTTP servers run here, so their own output stays out of the child's stderr.
    let servers = http_servers();
    let started = Instant::now();
    let urls = format!("{} {}", servers[0].url, servers[1].url);
    let child = run_ignored_test("edge_matrix_child", &[(URL_ENV, urls)], 3 * BOUND);
    assert!(child.passed, "{}\n{}", child.stdout, child.stderr);
    assert!(
        child.stderr.is_empty(),
        "the library wrote to stderr:\n{}",
        child.stderr
    );
    common::report_figure(&format!(
        "edge values: 12 numeric setters x (0, 1, MAX) x (stdio, HTTP with SSE, HTTP with JSON), each connect + ping + \
         all-pages listing: {:.1} s in all, no hang, no INTERNAL_ERROR, empty stderr",
        started.elapsed().as_secs_f64()
    ));
}

/// The Rust options at the far end of their types: `Duration::MAX` for every duration (it
/// overflowed `Instant` arithmetic, in the engine's deadlines and inside ureq), the largest
/// sizes and counts. Each is accepted and means "no limit".
#[test]
fn rust_options_at_their_largest_values_mean_no_limit() {
    use mcpc::{Client, ClientOptions, RequestOptions};
    use serde_json::json;

    let servers = http_servers();
    let options = ClientOptions {
        timeout: Some(Duration::MAX),
        connect_timeout: Duration::MAX,
        discover_timeout: Duration::MAX,
        max_pages: usize::MAX,
        input_required_max_rounds: u32::MAX,
        ..ClientOptions::default()
    };
    let request = RequestOptions {
        timeout: Some(Duration::MAX),
        max_total_timeout: Some(Duration::MAX),
        reset_timeout_on_progress: true,
        on_progress: Some(std::sync::Arc::new(|_: &mcpc::handlers::Progress| {})),
        ..RequestOptions::default()
    };
    let mut stdio = common::config(&[]);
    stdio.max_line_bytes = usize::MAX;
    let mut clients = vec![("stdio", Client::stdio(stdio, options.clone()))];
    for (name, server) in ["HTTP, SSE answers", "HTTP, JSON answers"]
        .into_iter()
        .zip(&servers)
    {
        let mut config = server.config();
        config.connect_timeout = Duration::MAX;
        config.idle_timeout = Some(Duration::MAX);
        config.max_message_bytes = usize::MAX;
        config.resume_budget = Duration::MAX;
        config.close_timeout = Duration::MAX;
        clients.push((name, Client::http(config, options.clone())));
    }
    for (name, client) in clients {
        let request = request.clone();
        run_case(name.to_owned(), move || {
            client.connect().unwrap_or_else(|e| panic!("{name}: {e}"));
            client
                .ping(&request)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            client
                .tools(&request)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            client
                .call_tool("progress", Some(json!({"steps": 2})), &request)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            client.close();
        });
    }
}
