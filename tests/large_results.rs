//! Results of real size work with the default limits, and cost about twice their size at the
//! peak: a tool result of 1, 16 and 64 MiB over stdio and over HTTP (a JSON body and an SSE
//! event), through the C API (the server's text handed over) and the Rust API (a tree). The
//! peak is the process's high-water mark (VmHWM, reset before each call through
//! /proc/self/clear_refs) over its resident size before the call. A test binary of its own,
//! one test, so that no other test's allocations move the figures.

mod common;

use common::flood;
use common::http_server::HttpServer;
use mcpc::ffi::*;
use mcpc::{Client, ClientOptions, RequestOptions};
use serde_json::json;
use std::ffi::{CStr, CString};
use std::ptr::null;

const MIB: usize = 1024 * 1024;
const SIZES_MIB: [usize; 3] = [1, 16, 64];

/// The peak may be three times the result plus 32 MiB: a wide margin over about twice.
fn bound_kib(size: usize) -> u64 {
    (3 * size + 32 * MIB) as u64 / 1024
}

/// Resets the high-water mark to the current resident size.
fn reset_peak() {
    std::fs::write("/proc/self/clear_refs", "5").expect("reset VmHWM (Linux 4.0 and later)");
}

/// Runs `call` (which returns the result's text length) and returns the peak growth in KiB.
fn peak_growth_kib(call: impl FnOnce() -> usize, size: usize, what: &str) -> u64 {
    let before = flood::status_kib("VmRSS");
    reset_peak();
    let length = call();
    let growth = flood::status_kib("VmHWM").saturating_sub(before);
    assert!(length >= size, "{what}: a result of {length} bytes");
    growth
}

fn oversized(size: usize) -> serde_json::Value {
    json!({ "bytes": size })
}

fn rust_call(client: &Client, size: usize) -> usize {
    let opts = RequestOptions::with_timeout(std::time::Duration::from_secs(120));
    let result = client
        .call_tool("oversized", Some(oversized(size)), &opts)
        .unwrap_or_else(|e| panic!("a result of {} MiB: {e}", size / MIB));
    result["content"][0]["text"].as_str().unwrap().len()
}

unsafe fn c_call(client: *mut mcp_client, size: usize) -> usize {
    let arguments = CString::new(oversized(size).to_string()).unwrap();
    let result = mcp_client_call_tool(client, c"oversized".as_ptr(), arguments.as_ptr(), null());
    let status = mcp_result_status(result);
    if status != mcp_status::Ok {
        let message = CStr::from_ptr(mcp_result_message(result)).to_string_lossy();
        panic!("a result of {} MiB: {status:?}: {message}", size / MIB);
    }
    let length = CStr::from_ptr(mcp_result_json(result)).to_bytes().len();
    mcp_result_free(result);
    length
}

/// A C client of the test server, connected: over stdio with `url` None, else over HTTP.
unsafe fn c_client(url: Option<&str>) -> *mut mcp_client {
    let client = match url {
        None => {
            let argv = [CString::new(common::SERVER.as_str()).unwrap()];
            let pointers = [argv[0].as_ptr(), null()];
            mcp_client_new_stdio(pointers.as_ptr(), null())
        }
        Some(url) => {
            let url = CString::new(url).unwrap();
            mcp_client_new_http(url.as_ptr(), null())
        }
    };
    let connected = mcp_client_connect(client);
    assert_eq!(mcp_result_status(connected), mcp_status::Ok);
    mcp_result_free(connected);
    client
}

#[test]
fn results_of_64_mib_work_by_default_and_peak_at_about_twice_their_size() {
    let json_server = HttpServer::start("large_results_json", &["--http-json"]);
    let sse_server = HttpServer::start("large_results_sse", &[]);
    let transports: [(&str, Option<&str>); 3] = [
        ("stdio", None),
        ("HTTP JSON", Some(&json_server.url)),
        ("HTTP SSE", Some(&sse_server.url)),
    ];
    let mut failures = Vec::new();
    for (transport, url) in transports {
        let rust = match url {
            None => common::connect(&[]),
            Some(url) => {
                let client = Client::http(mcpc::HttpConfig::new(url), ClientOptions::default());
                client.connect().unwrap();
                client
            }
        };
        let c = unsafe { c_client(url) };
        for size in SIZES_MIB.map(|mib| mib * MIB) {
            let what = format!("{transport}, {} MiB", size / MIB);
            let c_peak = peak_growth_kib(|| unsafe { c_call(c, size) }, size, &what);
            let rust_peak = peak_growth_kib(|| rust_call(&rust, size), size, &what);
            let line = format!(
                "large result, {what}: peak growth {:.1} MiB (C API), {:.1} MiB (Rust API)",
                c_peak as f64 / 1024.0,
                rust_peak as f64 / 1024.0
            );
            eprintln!("{line}");
            common::report_figure(&line);
            if c_peak.max(rust_peak) > bound_kib(size) {
                failures.push(format!(
                    "{line}: over the bound of {} MiB",
                    bound_kib(size) / 1024
                ));
            }
        }
        rust.close();
        unsafe { mcp_client_free(c) };
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
