//! The tools, each exercising one thing a client must handle: results,
//! slowness and cancellation, progress, crashes, garbage on stdout, huge
//! messages, server-to-client requests, multi round-trip requests and (in the
//! modern era) `x-mcp-header` annotations.

use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::args::Args;
use crate::{rounds, Reply, Request, RpcError, Server};

/// How often `slow` reports progress.
const PROGRESS_EVERY_MS: u64 = 50;
const ASK_CLIENT_TIMEOUT: Duration = Duration::from_secs(5);

pub fn definitions(args: &Args) -> Vec<Value> {
    let mut tools = vec![
        (
            "echo",
            "Returns its text, after delay_ms if given (cancellable)",
            json!({ "text": { "type": "string" }, "delay_ms": { "type": "integer" } }),
        ),
        (
            "add",
            "Adds two numbers",
            json!({ "a": { "type": "number" }, "b": { "type": "number" } }),
        ),
        (
            "slow",
            "Sleeps for ms milliseconds, reporting progress",
            json!({ "ms": { "type": "integer" } }),
        ),
        ("never", "Never answers", json!({})),
        (
            "crash",
            "Exits the server, optionally mid-message",
            json!({ "partial": { "type": "boolean" } }),
        ),
        (
            "detach_child",
            "Starts `sleep secs` in a session of its own (setsid) that inherits stdin, stdout \
             and stderr (Windows: an idle copy of this server in the same job); returns its pid",
            json!({ "secs": { "type": "integer" } }),
        ),
        ("noise", "Writes a non-JSON line to stdout", json!({})),
        (
            "fault",
            "Misbehaves on purpose: wrong_id, duplicate, not_jsonrpc, flood, drip, close_stdout",
            json!({ "kind": { "type": "string" }, "count": { "type": "integer" } }),
        ),
        (
            "oversized",
            "Answers with at least the given number of bytes",
            json!({ "bytes": { "type": "integer" } }),
        ),
        (
            "ask_client",
            "Sends a request to the client and returns its response",
            json!({ "method": { "type": "string" }, "params": { "type": "object" }, "cancel_after_ms": { "type": "integer" } }),
        ),
        (
            "progress",
            "Reports progress in steps, then answers",
            json!({ "steps": { "type": "integer" } }),
        ),
        (
            "confirm",
            "Asks the client to confirm, as a multi round-trip request",
            json!({ "question": { "type": "string" } }),
        ),
        (
            "two_rounds",
            "Needs two rounds of client input before answering",
            json!({}),
        ),
        (
            "state_only",
            "Sheds load: legs rounds carrying only a requestState",
            json!({ "legs": { "type": "integer" } }),
        ),
        ("always_input", "Asks for client input forever", json!({})),
    ];
    if args.modern {
        tools.extend([
            (
                "header_ok",
                "Echoes its arguments, both declared as headers",
                json!({
                    "region": { "type": "string", "x-mcp-header": "Region" },
                    "count": { "type": "integer", "x-mcp-header": "Count" },
                }),
            ),
            (
                // Invalid on purpose: a number may not be declared as a header.
                "header_bad",
                "Echoes its arguments; declares a number header",
                json!({ "ratio": { "type": "number", "x-mcp-header": "Ratio" } }),
            ),
        ]);
    }
    tools
        .into_iter()
        .map(|(name, description, properties)| {
            json!({
                "name": name,
                "description": description,
                "inputSchema": { "type": "object", "properties": properties },
            })
        })
        .chain(args.legacy_tasks.then(crate::tasks::legacy_definition))
        .collect()
}

pub fn call(server: &Server, request: &Request) -> Reply {
    let name = request.params["name"].as_str().unwrap_or_default();
    let args = &request.params["arguments"];
    match name {
        "echo" => {
            if let Some(ms) = args["delay_ms"].as_u64() {
                slow(server, request, ms)?;
            }
            let text = match args["text"].as_str() {
                Some(text) => text.to_owned(),
                None => args.to_string(),
            };
            Ok(text_result(text))
        }
        "add" => add(args),
        "slow" => slow(server, request, required_number(args, "ms")?),
        "progress" => progress(server, request, args["steps"].as_u64().unwrap_or(3)),
        "never" => never(request),
        "crash" => server.crash(args["partial"].as_bool().unwrap_or(false)),
        "detach_child" => detach_child(args["secs"].as_u64().unwrap_or(1000)),
        // Unlisted, as those below.
        "group_helper" => group_helper(args["mib"].as_u64().unwrap_or(64)),
        "noise" => {
            server.write_raw(b"this is not json\n");
            Ok(text_result("noise done"))
        }
        "oversized" => {
            let bytes = required_number(args, "bytes")?;
            let bytes = usize::try_from(bytes)
                .map_err(|_| RpcError::invalid_params("bytes is too large"))?;
            Ok(text_result("x".repeat(bytes)))
        }
        "ask_client" => ask_client(server, args),
        "confirm" => rounds::confirm(args, &request.params),
        "two_rounds" => rounds::two_rounds(&request.params),
        "state_only" => rounds::state_only(args, &request.params),
        "always_input" => rounds::always_input(),
        "header_ok" | "header_bad" if server.args.modern => Ok(text_result(args.to_string())),
        "fault" => crate::faults::fault(server, request, args),
        // Unlisted, so the lists stay as tests count them.
        "task" => crate::tasks::call(server, request, args),
        "task_events" => crate::tasks::events(),
        "client_capabilities" => crate::client_features::client_capabilities(request),
        "url_elicit" => crate::client_features::url_elicit(server, args),
        _ => Err(RpcError::invalid_params(format!("Unknown tool: {name}"))),
    }
}

/// Waits, without answering, until the request is cancelled.
pub fn never(request: &Request) -> Reply {
    request.cancel().wait();
    Err(RpcError::cancelled())
}

/// A descendant that keeps the server's pipes open after the server has gone (see
/// platform::detach_child).
fn detach_child(secs: u64) -> Reply {
    let pid = crate::platform::detach_child(secs)
        .map_err(|e| RpcError::new(-32603, format!("cannot start the descendant: {e}")))?;
    Ok(text_result(pid.to_string()))
}

/// A helper the server starts the ordinary way, so it stays in the server's process group:
/// this program again, holding `mib` MiB (see `hold_memory`). Answers once the memory is held.
fn group_helper(mib: u64) -> Reply {
    let failed = |e: std::io::Error| RpcError::new(-32603, format!("cannot start the helper: {e}"));
    let mut helper = std::process::Command::new(std::env::current_exe().map_err(failed)?)
        .args(["--hold-memory-mib", &mib.to_string()])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(failed)?;
    let mut ready = String::new();
    let stdout = helper.stdout.take().expect("piped");
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut ready)
        .map_err(failed)?;
    Ok(text_result(helper.id().to_string()))
}

/// `--hold-memory-mib`: touches every page of `mib` MiB (a process holding much memory takes
/// tens of milliseconds to die, even of SIGKILL), says so, and sleeps. Never returns.
pub fn hold_memory(mib: usize) -> ! {
    let mut memory = vec![0u8; mib << 20];
    for page in memory.chunks_mut(4096) {
        page[0] = 1;
    }
    println!("ready");
    let _ = std::io::Write::flush(&mut std::io::stdout());
    thread::sleep(Duration::from_secs(300));
    drop(memory);
    std::process::exit(0)
}

pub fn text_result(text: impl Into<String>) -> Value {
    json!({ "content": [{ "type": "text", "text": text.into() }] })
}

fn required_number(args: &Value, name: &str) -> Result<u64, RpcError> {
    args[name].as_u64().ok_or_else(|| {
        RpcError::invalid_params(format!("Argument {name} must be a non-negative integer"))
    })
}

fn add(args: &Value) -> Reply {
    let (a, b) = (&args["a"], &args["b"]);
    // Integers stay integers, so that 2 + 3 gives "5" rather than "5.0".
    let integer_sum = a
        .as_i64()
        .zip(b.as_i64())
        .and_then(|(a, b)| a.checked_add(b));
    let sum = match (integer_sum, a.as_f64(), b.as_f64()) {
        (Some(sum), _, _) => Value::from(sum),
        (None, Some(a), Some(b)) => Value::from(a + b),
        _ => {
            return Err(RpcError::invalid_params(
                "Arguments a and b must be numbers",
            ))
        }
    };
    Ok(json!({
        "content": [{ "type": "text", "text": sum.to_string() }],
        "structuredContent": { "sum": sum },
    }))
}

/// Sleeps `ms` milliseconds, stopped at once by a cancel, and reports progress
/// every 50 ms when the client asked for it.
fn slow(server: &Server, request: &Request, ms: u64) -> Reply {
    let duration = Duration::from_millis(ms);
    let total_reports = ms.div_ceil(PROGRESS_EVERY_MS);
    let start = Instant::now();
    let mut reported = 0;
    loop {
        if request.is_cancelled() {
            return Err(RpcError::cancelled());
        }
        let elapsed = start.elapsed();
        if elapsed >= duration {
            break;
        }
        let due = elapsed.as_millis() as u64 / PROGRESS_EVERY_MS;
        if let Some(token) = request.progress_token().filter(|_| due > reported) {
            reported = due;
            server.notify(
                "notifications/progress",
                Some(json!({ "progressToken": token, "progress": due, "total": total_reports })),
            );
        }
        // Asleep until the next report is due (or the end), unless cancelled first.
        let wake_at = match request.progress_token() {
            Some(_) => duration.min(Duration::from_millis((due + 1) * PROGRESS_EVERY_MS)),
            None => duration,
        };
        request.cancel().wait_for(wake_at - elapsed);
    }
    Ok(text_result(format!("slept {ms} ms")))
}

fn progress(server: &Server, request: &Request, steps: u64) -> Reply {
    if let Some(token) = request.progress_token() {
        for step in 1..=steps {
            server.notify(
                "notifications/progress",
                Some(json!({
                    "progressToken": token,
                    "progress": step,
                    "total": steps,
                    "message": format!("step {step}"),
                })),
            );
        }
    }
    Ok(text_result("done"))
}

/// Asks the client something (by default its roots) and returns the whole
/// response object as text, so tests can check exactly what the client sent.
fn ask_client(server: &Server, args: &Value) -> Reply {
    let method = args["method"].as_str().unwrap_or("roots/list");
    let params = args.get("params").cloned();
    if let Some(ms) = args["cancel_after_ms"].as_u64() {
        // The client's handler must stop and answer nothing once cancelled.
        let after = Some(Duration::from_millis(ms));
        let late = server.ask_client_cancelling(method, params, Duration::from_millis(500), after);
        let text = late.map_or("cancelled; no reply".to_owned(), |r| {
            format!("cancelled; reply: {r}")
        });
        return Ok(text_result(text));
    }
    match server.ask_client(method, params, ASK_CLIENT_TIMEOUT) {
        Some(response) => Ok(text_result(response.to_string())),
        None => Err(RpcError::new(-32603, "no reply from client")),
    }
}
