//! `many` mode: what bench/many_clients.c measures for mcpc, for rmcp. N stdio clients, each
//! with its own server process, all on the one tokio runtime of `main`: threads, RSS and
//! descriptors added by N idle clients (per client), and the time to connect, ping and close
//! them all, one after another. Output: one `key=value` line, read by bench/table.py.

use std::error::Error;
use std::time::{Duration, Instant};

use rmcp::model::{ClientRequest, PingRequest};
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use tokio::process::Command;

/// What the process holds now: threads, RSS (KiB), descriptors and, of those, sockets.
struct Holdings {
    threads: i64,
    rss_kib: i64,
    fds: i64,
    sockets: i64,
}

impl Holdings {
    fn now() -> Holdings {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let field = |name: &str| -> i64 {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|value| value.split_whitespace().next())
                .and_then(|value| value.parse().ok())
                .unwrap_or(-1)
        };
        let (mut fds, mut sockets) = (0, 0);
        for entry in std::fs::read_dir("/proc/self/fd")
            .into_iter()
            .flatten()
            .flatten()
        {
            fds += 1;
            let target = std::fs::read_link(entry.path()).unwrap_or_default();
            if target.to_string_lossy().starts_with("socket:") {
                sockets += 1;
            }
        }
        Holdings {
            threads: field("Threads:"),
            rss_kib: field("VmRSS:"),
            fds,
            sockets,
        }
    }
}

/// Each client holds a few descriptors: raise the soft limit to the hard one.
fn raise_descriptor_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write the struct they are given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

pub async fn run(server: &str, n: usize) -> Result<(), Box<dyn Error>> {
    raise_descriptor_limit();
    let before = Holdings::now();
    let start = Instant::now();
    let mut clients = Vec::with_capacity(n);
    for _ in 0..n {
        clients.push(
            ().serve(TokioChildProcess::new(Command::new(server))?)
                .await?,
        );
    }
    let connect = start.elapsed();
    let start = Instant::now();
    for client in &clients {
        client
            .send_request(ClientRequest::PingRequest(PingRequest::default()))
            .await?;
    }
    let ping = start.elapsed();
    tokio::time::sleep(Duration::from_millis(200)).await; // as many_clients.c waits
    let after = Holdings::now();
    let start = Instant::now();
    for client in clients {
        client.cancel().await?;
    }
    // Each cancel waits for its child's exit and reaps it (rmcp's graceful shutdown), so every
    // server is reaped once the last cancel returns.
    let close = start.elapsed();

    let per_client = |a: i64, b: i64| (b - a) as f64 / n as f64;
    println!(
        "impl=rmcp case=many.stdio.{n} threads={} rss_kib={:.1} fds={:.2} sockets={:.2} \
         connect={:.6} ping={:.6} close={:.6} reaped={:.6}",
        after.threads - before.threads,
        per_client(before.rss_kib, after.rss_kib),
        per_client(before.fds, after.fds),
        per_client(before.sockets, after.sockets),
        connect.as_secs_f64(),
        ping.as_secs_f64(),
        close.as_secs_f64(),
        close.as_secs_f64(),
    );
    Ok(())
}
