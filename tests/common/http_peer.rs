//! A real MCP server nobody here wrote, run as a process of its own serving Streamable HTTP on
//! 127.0.0.1: Python `mcp` 2.3.0 or server-everything (installed by scripts/install-peers.sh).
//! Its stderr lines are kept; it is killed when dropped.

use super::ports::{free_port, wait_listening};
use super::{everything_server, python_server};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a peer may take to start listening (Python imports take a second or two).
const START_LIMIT: Duration = Duration::from_secs(20);

pub struct HttpPeer {
    child: Child,
    pub port: u16,
    pub url: String,
    pub stderr: Arc<Mutex<Vec<String>>>,
}

impl HttpPeer {
    /// Python `mcp`, asked for port 0: uvicorn binds a port of the kernel's choice and names it
    /// on stderr, so no other process can take the port between its choice and the bind.
    pub fn python(peers: &Path) -> Result<HttpPeer, String> {
        HttpPeer::python_serving(peers, "http", "/mcp")
    }

    /// Python `mcp` serving the 2024-11-05 HTTP+SSE transport at `/sse`.
    pub fn python_sse(peers: &Path) -> Result<HttpPeer, String> {
        HttpPeer::python_serving(peers, "sse", "/sse")
    }

    fn python_serving(peers: &Path, transport: &str, path: &str) -> Result<HttpPeer, String> {
        let argv = python_server(peers);
        let mut command = Command::new(&argv[0]);
        command.args(&argv[1..]).args([transport, "0"]);
        let mut peer = HttpPeer::spawn(command)?;
        let port = peer.port_named_on_stderr("Uvicorn running on http://127.0.0.1:")?;
        peer.listening_on(port, path)?;
        Ok(peer)
    }

    /// server-everything, which names only the port it was given in $PORT: a port free a moment
    /// before is picked for it.
    pub fn everything(peers: &Path) -> Result<HttpPeer, String> {
        HttpPeer::everything_on(peers, free_port())
    }

    /// server-everything on a given port (to restart it where a client knew it).
    pub fn everything_on(peers: &Path, port: u16) -> Result<HttpPeer, String> {
        HttpPeer::everything_serving(peers, port, "streamableHttp", "/mcp")
    }

    /// server-everything serving the 2024-11-05 HTTP+SSE transport (`sse`) at `/sse`.
    pub fn everything_sse(peers: &Path) -> Result<HttpPeer, String> {
        HttpPeer::everything_serving(peers, free_port(), "sse", "/sse")
    }

    fn everything_serving(
        peers: &Path,
        port: u16,
        transport: &str,
        path: &str,
    ) -> Result<HttpPeer, String> {
        let argv = everything_server(peers);
        let mut command = Command::new(&argv[0]);
        command
            .arg(&argv[1])
            .arg(transport)
            .env("PORT", port.to_string());
        let mut peer = HttpPeer::spawn(command)?;
        peer.listening_on(port, path)?;
        Ok(peer)
    }

    fn spawn(mut command: Command) -> Result<HttpPeer, String> {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("start {:?}: {e}", command.get_program()))?;
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let pipe = child.stderr.take().unwrap();
        {
            let stderr = stderr.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    stderr.lock().unwrap().push(line);
                }
            });
        }
        Ok(HttpPeer {
            child,
            port: 0,
            url: String::new(),
            stderr,
        })
    }

    /// Waits for a stderr line starting with `prefix` followed by a port number.
    fn port_named_on_stderr(&mut self, prefix: &str) -> Result<u16, String> {
        let deadline = Instant::now() + START_LIMIT;
        loop {
            let named = self.stderr.lock().unwrap().iter().find_map(|line| {
                let rest = &line[line.find(prefix)? + prefix.len()..];
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                digits.parse().ok()
            });
            if let Some(port) = named {
                return Ok(port);
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(self.failed(&format!("the server exited ({status})")));
            }
            if Instant::now() > deadline {
                return Err(self.failed(&format!("no \"{prefix}<port>\" in {START_LIMIT:?}")));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn listening_on(&mut self, port: u16, path: &str) -> Result<(), String> {
        wait_listening(&mut self.child, port, START_LIMIT).map_err(|why| self.failed(&why))?;
        self.port = port;
        self.url = format!("http://127.0.0.1:{port}{path}");
        Ok(())
    }

    fn failed(&self, why: &str) -> String {
        format!(
            "{why}; the server's stderr: {:?}",
            self.stderr.lock().unwrap()
        )
    }

    /// Whether the server is still running (for a message when a client cannot reach it).
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits up to `limit` for a stderr line containing `needle`.
    pub fn said(&self, needle: &str, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            if self
                .stderr
                .lock()
                .unwrap()
                .iter()
                .any(|l| l.contains(needle))
            {
                return true;
            }
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for HttpPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
