//! Our test server in its HTTP mode (`--http 0`), and what it logged.

use super::{log_path, read_log, SERVER};
use mcpc::HttpConfig;
use mcpc::{Client, ClientOptions, ConnectMode};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `mcpc-test-server --http 0`; killed when dropped.
pub struct HttpServer {
    child: Child,
    pub url: String,
    pub log: PathBuf,
}

impl HttpServer {
    /// Starts the server with `args`, logging to a file named after the test.
    pub fn start(name: &str, args: &[&str]) -> HttpServer {
        let log = log_path(name);
        let mut child = Command::new(SERVER.as_str())
            .args(["--http", "0", "--log", log.to_str().unwrap()])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the test server");
        let mut first_line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first_line)
            .unwrap();
        let url = first_line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {first_line:?}"))
            .to_owned();
        HttpServer { child, url, log }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn config(&self) -> HttpConfig {
        HttpConfig::new(&self.url)
    }

    /// A connected client in `mode`.
    pub fn connect(&self, mode: ConnectMode) -> Client {
        let client = self.client(mode);
        client.connect().expect("connect over HTTP");
        client
    }

    pub fn client(&self, mode: ConnectMode) -> Client {
        let options = ClientOptions {
            mode,
            ..ClientOptions::default()
        };
        Client::http(self.config(), options)
    }

    /// Sends `message` on every standalone GET stream open now (a test-server hook, not MCP);
    /// returns how many streams took it.
    pub fn broadcast(&self, message: &Value) -> u64 {
        let url = self.url.replace("/mcp", "/broadcast");
        let agent = ureq::Agent::config_builder()
            .proxy(None)
            .build()
            .new_agent();
        let mut response = agent
            .post(&url)
            .send(message.to_string())
            .expect("POST /broadcast");
        let answer: Value =
            serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap();
        answer["reached"].as_u64().unwrap()
    }

    /// Every line logged so far.
    pub fn log(&self) -> Vec<Value> {
        read_log(&self.log)
    }

    /// The HTTP requests received so far (the `http` objects of the log).
    pub fn requests(&self) -> Vec<Value> {
        http_requests(&self.log())
    }

    /// Waits (up to 5 s) until `done` holds for the log, and returns the log then.
    pub fn wait_for(&self, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let lines = self.log();
            if done(&lines) || Instant::now() > deadline {
                return lines;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn http_requests(lines: &[Value]) -> Vec<Value> {
    lines
        .iter()
        .filter_map(|l| l.get("http").cloned())
        .collect()
}

/// The GETs that resume a stream (they carry `Last-Event-ID`).
pub fn resumptions(requests: &[Value]) -> Vec<&Value> {
    requests
        .iter()
        .filter(|r| r["method"] == "GET" && header(r, "last-event-id").is_some())
        .collect()
}

/// The POSTs whose body has this JSON-RPC method.
pub fn posts_of<'a>(requests: &'a [Value], method: &str) -> Vec<&'a Value> {
    requests
        .iter()
        .filter(|r| r["method"] == "POST" && r["body"]["method"] == method)
        .collect()
}

/// A request header as logged (names are lower case), or None.
pub fn header<'a>(request: &'a Value, name: &str) -> Option<&'a str> {
    request["headers"][name.to_ascii_lowercase()].as_str()
}

/// The `at_ms` of the first log line that satisfies `matches`.
pub fn time_of(lines: &[Value], matches: impl Fn(&Value) -> bool) -> Option<u64> {
    lines.iter().find(|l| matches(l)).and_then(|l| {
        l.get("at_ms")
            .or_else(|| l.get("http").and_then(|h| h.get("at_ms")))
            .and_then(Value::as_u64)
    })
}
