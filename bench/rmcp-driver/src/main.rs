//! The Rust SDK (`rmcp`) client doing what bench.c does with mcpc, against the same server and
//! the same 1 KiB `tools/call echo`: a sequential run (latency percentiles and CPU per call),
//! then throughput with 1, 8 and 16 calls in flight on one client (CPU and context switches
//! per call for every case). Output: one `key=value` line
//! per case, read by bench/table.py.
//!
//! usage: mcpc-bench-rmcp SERVER ITERATIONS SECONDS_PER_THROUGHPUT_CASE
//!        mcpc-bench-rmcp many SERVER N    N idle clients on one runtime (see many.rs)

mod many;

use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, ClientRequest, PingRequest};
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use tokio::process::Command;

/// CPU time (seconds) and context switches (voluntary and not) of this whole process.
#[derive(Clone, Copy)]
struct Usage {
    cpu: f64,
    switches: f64,
}

fn usage() -> Usage {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Usage {
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
        switches: (usage.ru_nvcsw + usage.ru_nivcsw) as f64,
    }
}

/// " cpu=US csw=N" per call since `since`.
fn per_call(since: Usage, calls: f64) -> String {
    let now = usage();
    format!(
        "cpu={:.2} csw={:.2}",
        (now.cpu - since.cpu) * 1e6 / calls,
        (now.switches - since.switches) / calls
    )
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn report(case: &str, mut samples: Vec<f64>, since: Usage) {
    let usage = per_call(since, samples.len() as f64);
    samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "impl=rmcp case={case} p50={:.1} p99={:.1} max={:.1} {usage}",
        percentile(&samples, 0.5),
        percentile(&samples, 0.99),
        samples[samples.len() - 1],
    );
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let argv: Vec<String> = std::env::args().collect();
    if argv[1] == "many" {
        return many::run(&argv[2], argv[3].parse()?).await;
    }
    let server = &argv[1];
    let iterations: usize = argv[2].parse()?;
    let seconds: f64 = argv[3].parse()?;

    let client = ().serve(TokioChildProcess::new(Command::new(server))?).await?;
    let mut arguments = serde_json::Map::new();
    arguments.insert("text".into(), "x".repeat(1024).into());
    let echo = CallToolRequestParams::new("echo").with_arguments(arguments);

    for _ in 0..iterations.min(200) {
        client.call_tool(echo.clone()).await?;
    }
    let since = usage();
    let mut samples = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let start = Instant::now();
        client.call_tool(echo.clone()).await?;
        samples.push(start.elapsed().as_secs_f64() * 1e6);
    }
    report("stdio.echo", samples, since);

    let mut samples = Vec::with_capacity(iterations);
    let since = usage();
    for _ in 0..iterations {
        let start = Instant::now();
        client
            .send_request(ClientRequest::PingRequest(PingRequest::default()))
            .await?;
        samples.push(start.elapsed().as_secs_f64() * 1e6);
    }
    report("stdio.ping", samples, since);

    for inflight in [1usize, 8, 16] {
        let since = usage();
        let deadline = Instant::now() + Duration::from_secs_f64(seconds);
        let start = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..inflight {
            let peer = client.peer().clone();
            let echo = echo.clone();
            tasks.push(tokio::spawn(async move {
                let mut calls = 0u64;
                while Instant::now() < deadline {
                    peer.call_tool(echo.clone()).await.expect("call failed");
                    calls += 1;
                }
                calls
            }));
        }
        let mut calls = 0;
        for task in tasks {
            calls += task.await?;
        }
        println!(
            "impl=rmcp case=stdio.tput{inflight} rate={:.0} {}",
            calls as f64 / start.elapsed().as_secs_f64(),
            per_call(since, calls as f64)
        );
    }
    client.cancel().await?;
    Ok(())
}
