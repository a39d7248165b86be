//! The TCP sockets this process holds (Linux: /proc), to see connections being closed.

use std::collections::HashSet;
use std::time::{Duration, Instant};

/// How long the library lets a connection sit idle in its pool before closing it (the
/// library's `pool_watch::IDLE_AGE`).
pub const IDLE_AGE: Duration = Duration::from_secs(4);

/// How many of this process's descriptors are TCP sockets connected to `port` on some host,
/// in whatever state: a socket the server closed and we did not still counts.
pub fn sockets_to(port: u16) -> usize {
    let ours: HashSet<u64> = std::fs::read_dir("/proc/self/fd")
        .expect("read /proc/self/fd")
        .flatten()
        .filter_map(|entry| std::fs::read_link(entry.path()).ok())
        .filter_map(|target| {
            let target = target.to_str()?.strip_prefix("socket:[")?;
            target.strip_suffix(']')?.parse().ok()
        })
        .collect();
    let mut count = 0;
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(remote), Some(inode)) = (fields.get(2), fields.get(9)) else {
                continue;
            };
            let remote_port = remote
                .rsplit(':')
                .next()
                .and_then(|hex| u16::from_str_radix(hex, 16).ok());
            let inode = inode.parse::<u64>().ok();
            if remote_port == Some(port) && inode.is_some_and(|inode| ours.contains(&inode)) {
                count += 1;
            }
        }
    }
    count
}

/// Waits up to `bound` until at most `most` of our sockets go to `port`; returns the last count.
pub fn sockets_to_at_most(port: u16, most: usize, bound: Duration) -> usize {
    let deadline = Instant::now() + bound;
    loop {
        let now = sockets_to(port);
        if now <= most || Instant::now() > deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The port of an `http://host:port/...` URL.
pub fn port_of(url: &str) -> u16 {
    let rest = url.split("://").nth(1).expect("a URL with a scheme");
    let host_port = rest.split('/').next().unwrap();
    host_port
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .expect("a port")
}
