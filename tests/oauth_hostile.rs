//! OAuth under attack: an MCP server whose authorization server stalls, answers without end,
//! redirects (in loops, and to another origin) and lies. Every exchange of the flow must end
//! within the call's bound, at once on cancel or close, with a clear UNAUTHORIZED (the
//! server's fault, never INVALID_ARGUMENT), and the token must only ever reach the resource.
//!
//! The server here is one socket: `/mcp` answers `initialize` and notifications without a
//! token and everything else only with the token it issues, and each test says how the
//! authorization server's paths answer.

mod common;

use mcpc::auth::TokenStore;
use mcpc::auth::{
    AuthorizationRequest, DpopKey, GrantType, IdentityProvider, MemoryTokenStore, OAuthConfig,
    SigningKey, TokenKey, WorkloadIdentity,
};
use mcpc::{
    CancellationToken, Client, ClientOptions, ConnectMode, HttpConfig, RequestOptions, Status,
};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Every failing call must return within this; a hang would not.
const BOUND: Duration = Duration::from_secs(10);
/// The token the server issues and accepts.
const TOKEN: &str = "good-token";
const REDIRECT_URI: &str = "http://127.0.0.1:9/callback";

// ---------------------------------------------------------------------------------------------
// The hostile server
// ---------------------------------------------------------------------------------------------

/// One request as the server read it.
#[derive(Debug, Clone)]
struct Request {
    method: String,
    path: String,
    authorization: Option<String>,
    /// The DPoP proof, if any.
    dpop: Option<String>,
    body: String,
}

/// How the server answers one request.
enum Reply {
    Json(u16, Value),
    /// A redirect to this location.
    Redirect(u16, String),
    /// Reads the request and then says nothing, until the server is dropped.
    Stall,
    /// A 200 JSON body that never ends.
    Endless,
    /// A head whose headers never end.
    EndlessHead,
    /// A 200 whose body stops long before its Content-Length, then the connection closes.
    CutShort,
    /// What `/mcp` would answer anyway (for a route that only watches).
    Default,
    /// A 401 with this WWW-Authenticate challenge.
    Challenge(String),
}

type Route = dyn Fn(&Request, &str) -> Reply + Send + Sync;

struct Hostile {
    base: String,
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<Request>>>,
    connections: Arc<AtomicUsize>,
}

impl Hostile {
    /// A server whose paths answer as `route` says (given the request and the server's base
    /// URL); `Reply::Default` for the ordinary MCP and authorization server answers.
    fn start(route: impl Fn(&Request, &str) -> Reply + Send + Sync + 'static) -> Hostile {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicUsize::new(0));
        let route: Arc<Route> = Arc::new(route);
        listener.set_nonblocking(true).unwrap();
        {
            let (base, stop, seen, connections) = (
                base.clone(),
                stop.clone(),
                seen.clone(),
                connections.clone(),
            );
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            connections.fetch_add(1, Ordering::SeqCst);
                            let (base, stop, seen, route) =
                                (base.clone(), stop.clone(), seen.clone(), route.clone());
                            std::thread::spawn(move || serve(stream, &base, &stop, &seen, &*route));
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(5)),
                    }
                }
            });
        }
        Hostile {
            base,
            stop,
            seen,
            connections,
        }
    }

    fn url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    fn paths(&self) -> Vec<String> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.path.clone())
            .collect()
    }

    fn requests(&self) -> Vec<Request> {
        self.seen.lock().unwrap().clone()
    }

    /// Waits until a request for `path` came in.
    fn wait_for(&self, path: &str) {
        let deadline = Instant::now() + BOUND;
        while !self.paths().iter().any(|p| p.starts_with(path)) {
            assert!(
                Instant::now() < deadline,
                "no request for {path}: {:?}",
                self.paths()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// One request per connection: read it, answer it, close.
fn serve(
    mut stream: TcpStream,
    base: &str,
    stop: &AtomicBool,
    seen: &Mutex<Vec<Request>>,
    route: &Route,
) {
    stream
        .set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    let Some(request) = read_request(&mut stream, stop) else {
        return;
    };
    seen.lock().unwrap().push(request.clone());
    let reply = match route(&request, base) {
        Reply::Default => default_reply(&request, base),
        reply => reply,
    };
    match reply {
        Reply::Json(status, body) => {
            let body = body.to_string();
            let head = format!(
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                 Connection: close\r\n{}\r\n",
                body.len(),
                challenge_header(status, base)
            );
            let _ = stream.write_all(format!("{head}{body}").as_bytes());
        }
        Reply::Challenge(challenge) => {
            let _ = stream.write_all(
                format!(
                    "HTTP/1.1 401 X\r\nWWW-Authenticate: {challenge}\r\nContent-Length: 0\r\n\
                     Connection: close\r\n\r\n"
                )
                .as_bytes(),
            );
        }
        Reply::Redirect(status, location) => {
            let _ = stream.write_all(
                format!(
                    "HTTP/1.1 {status} X\r\nLocation: {location}\r\nContent-Length: 0\r\n\
                     Connection: close\r\n\r\n"
                )
                .as_bytes(),
            );
        }
        Reply::Stall => {
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        Reply::Endless => {
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                  Transfer-Encoding: chunked\r\n\r\n6\r\n{\"a\":\"\r\n",
            );
            let chunk = format!("{:x}\r\n{}\r\n", 16 * 1024, "x".repeat(16 * 1024));
            while !stop.load(Ordering::SeqCst) && stream.write_all(chunk.as_bytes()).is_ok() {}
        }
        Reply::CutShort => {
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"a\":",
            );
        }
        Reply::EndlessHead => {
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\n");
            let header = format!("X-Padding: {}\r\n", "x".repeat(1024));
            while !stop.load(Ordering::SeqCst) && stream.write_all(header.as_bytes()).is_ok() {}
        }
        Reply::Default => unreachable!(),
    }
    let _ = stream.shutdown(Shutdown::Both);
}

/// A 401 names the resource metadata.
fn challenge_header(status: u16, base: &str) -> String {
    match status {
        401 => format!(
            "WWW-Authenticate: Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\"\r\n"
        ),
        _ => String::new(),
    }
}

fn read_request(stream: &mut TcpStream, stop: &AtomicBool) -> Option<Request> {
    let mut buffer = Vec::new();
    let mut chunk = [0; 4096];
    let mut fill = |buffer: &mut Vec<u8>| loop {
        if stop.load(Ordering::SeqCst) {
            return false;
        }
        match stream.read(&mut chunk) {
            Ok(0) => return false,
            Ok(n) => {
                buffer.extend_from_slice(&chunk[..n]);
                return true;
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return false,
        }
    };
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        if !fill(&mut buffer) {
            return None;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, path) = (first.next()?.to_owned(), first.next()?.to_owned());
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let length: usize = header("content-length").map_or(0, |v| v.parse().unwrap());
    while buffer.len() < head_end + length {
        if !fill(&mut buffer) {
            return None;
        }
    }
    Some(Request {
        method,
        path,
        authorization: header("authorization"),
        dpop: header("dpop"),
        body: String::from_utf8_lossy(&buffer[head_end..head_end + length]).into_owned(),
    })
}

/// The ordinary answers: an MCP endpoint that wants the token, and its authorization server.
fn default_reply(request: &Request, base: &str) -> Reply {
    let path = request.path.split('?').next().unwrap_or_default();
    match (request.method.as_str(), path) {
        ("POST", "/mcp") => mcp_reply(request),
        ("GET", "/mcp") => Reply::Json(405, json!({})),
        ("GET", "/.well-known/oauth-protected-resource/mcp") => Reply::Json(
            200,
            json!({"resource": format!("{base}/mcp"), "authorization_servers": [base]}),
        ),
        ("GET", "/.well-known/oauth-authorization-server") => {
            Reply::Json(200, server_metadata(base, base))
        }
        ("POST", "/register") => Reply::Json(201, json!({"client_id": "registered"})),
        ("POST", "/token") => Reply::Json(
            200,
            json!({"access_token": TOKEN, "token_type": "Bearer", "expires_in": 3600}),
        ),
        _ => Reply::Json(404, json!({})),
    }
}

fn server_metadata(base: &str, issuer: &str) -> Value {
    json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "code_challenge_methods_supported": ["S256"],
    })
}

fn mcp_reply(request: &Request) -> Reply {
    let message: Value = serde_json::from_str(&request.body).unwrap_or_default();
    let method = message["method"].as_str().unwrap_or_default();
    if message.get("id").is_none() {
        return Reply::Json(202, json!({}));
    }
    let result = match method {
        "initialize" => json!({
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "1"},
        }),
        _ if request.authorization.as_deref() == Some(&format!("Bearer {TOKEN}")) => json!({}),
        _ => return Reply::Json(401, json!({})),
    };
    Reply::Json(
        200,
        json!({"jsonrpc": "2.0", "id": message["id"], "result": result}),
    )
}

// ---------------------------------------------------------------------------------------------
// The client side
// ---------------------------------------------------------------------------------------------

/// What the person's step saw: how many times it was asked.
#[derive(Default)]
struct Person {
    asked: AtomicUsize,
}

/// Pre-registered, machine to machine: the flow goes from metadata straight to the token.
fn machine() -> OAuthConfig {
    OAuthConfig {
        client_id: Some("machine".into()),
        client_secret: Some("machine-secret".into()),
        grant_type: GrantType::ClientCredentials,
        ..OAuthConfig::default()
    }
}

/// The authorization code grant, with a person who answers with a code at once (the
/// hostile server accepts any code).
fn person(person: &Arc<Person>) -> OAuthConfig {
    let person = person.clone();
    OAuthConfig {
        redirect_uri: Some(REDIRECT_URI.into()),
        authorize: Some(Arc::new(move |request: &AuthorizationRequest| {
            person.asked.fetch_add(1, Ordering::SeqCst);
            let state = request
                .authorization_url
                .split(['?', '&'])
                .find_map(|p| p.strip_prefix("state="))
                .unwrap_or_default()
                .to_owned();
            Ok(format!("{REDIRECT_URI}?code=c&state={state}"))
        })),
        ..OAuthConfig::default()
    }
}

/// A person whose browser opens the authorization page and waits for it (the server stalls
/// it), until the flow's cancellation says the call has ended (bounded against hangs).
fn waiting_person() -> OAuthConfig {
    OAuthConfig {
        client_id: Some("pre".into()),
        redirect_uri: Some(REDIRECT_URI.into()),
        authorize: Some(Arc::new(|request: &AuthorizationRequest| {
            let rest = request.authorization_url.strip_prefix("http://").unwrap();
            let (host, path) = rest.split_at(rest.find('/').unwrap());
            let mut browser = TcpStream::connect(host).map_err(|e| e.to_string())?;
            let get = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n");
            browser
                .write_all(get.as_bytes())
                .map_err(|e| e.to_string())?;
            let deadline = Instant::now() + Duration::from_secs(20);
            while !request.cancellation.is_cancelled() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err("the page never loaded".into())
        })),
        ..OAuthConfig::default()
    }
}

fn connected(server: &Hostile, oauth: OAuthConfig) -> Client {
    let mut config = HttpConfig::new(server.url());
    config.auth.oauth = Some(oauth);
    let options = ClientOptions {
        mode: ConnectMode::Legacy,
        ..ClientOptions::default()
    };
    let client = Client::http(config, options);
    client.connect().expect("initialize needs no token");
    client
}

/// A ping the server refuses until the flow gets a token: it must fail with UNAUTHORIZED
/// within BOUND, its message naming each of `names`.
#[track_caller]
fn refused(client: &Client, names: &[&str]) -> mcpc::Error {
    let started = Instant::now();
    let error = client.ping(&RequestOptions::default()).unwrap_err();
    assert!(started.elapsed() < BOUND, "took {:?}", started.elapsed());
    assert_eq!(error.status, Status::Unauthorized, "{error}");
    for name in names {
        assert!(error.message.contains(name), "{name:?} not in {error}");
    }
    error
}

// ---------------------------------------------------------------------------------------------
// Stalls: the call's timeout, cancel and close end every step
// ---------------------------------------------------------------------------------------------

/// Each path the library itself asks the authorization server for, in a flow that reaches it.
fn exchange_cases() -> Vec<(&'static str, OAuthConfig)> {
    vec![
        ("/.well-known/oauth-protected-resource", machine()),
        ("/.well-known/oauth-authorization-server", machine()),
        ("/register", person(&Arc::default())),
        ("/token", machine()),
    ]
}

/// Every place a flow can stall: the library's exchanges, and the person's browser.
fn stall_cases() -> Vec<(&'static str, OAuthConfig)> {
    let mut cases = exchange_cases();
    cases.push(("/authorize", waiting_person()));
    cases
}

fn stalling_at(path: &'static str) -> Hostile {
    Hostile::start(move |request, _| match request.path.starts_with(path) {
        true => Reply::Stall,
        false => Reply::Default,
    })
}

#[test]
fn a_stalled_step_ends_at_the_calls_timeout() {
    for (path, oauth) in stall_cases() {
        let server = stalling_at(path);
        let client = connected(&server, oauth);
        let started = Instant::now();
        let error = client
            .ping(&RequestOptions::with_timeout(Duration::from_millis(500)))
            .unwrap_err();
        assert_eq!(error.status, Status::Timeout, "{path}: {error}");
        assert!(started.elapsed() < BOUND, "{path}: {:?}", started.elapsed());
    }
}

#[test]
fn a_stalled_step_ends_at_once_on_cancel() {
    let mut worst = Duration::ZERO;
    let cases = stall_cases();
    let places = cases.len();
    for (path, oauth) in cases {
        let server = stalling_at(path);
        let client = connected(&server, oauth);
        let token = CancellationToken::new();
        let call = std::thread::spawn({
            let token = token.clone();
            move || client.ping(&RequestOptions::with_cancellation(&token))
        });
        server.wait_for(path);
        let cancelled_at = Instant::now();
        token.cancel(Some("the host gave up"));
        let error = call.join().unwrap().unwrap_err();
        assert_eq!(error.status, Status::Cancelled, "{path}: {error}");
        assert!(cancelled_at.elapsed() < BOUND, "{path}");
        worst = worst.max(cancelled_at.elapsed());
    }
    common::report_figure(&format!(
        "OAuth, a step that stalls ({places} places): cancel ended the call in at most {} ms",
        worst.as_millis()
    ));
}

#[test]
fn a_stalled_step_ends_at_once_on_close() {
    let mut worst = Duration::ZERO;
    let cases = stall_cases();
    let places = cases.len();
    for (path, oauth) in cases {
        let server = stalling_at(path);
        let client = Arc::new(connected(&server, oauth));
        let call = std::thread::spawn({
            let client = client.clone();
            move || client.ping(&RequestOptions::default())
        });
        server.wait_for(path);
        let closing = Instant::now();
        client.close();
        assert!(
            closing.elapsed() < BOUND,
            "{path}: close took {:?}",
            closing.elapsed()
        );
        let error = call.join().unwrap().unwrap_err();
        assert_eq!(error.status, Status::Closed, "{path}: {error}");
        assert!(closing.elapsed() < BOUND, "{path}");
        worst = worst.max(closing.elapsed());
    }
    common::report_figure(&format!(
        "OAuth, a step that stalls ({places} places): close returned and ended the call in at \
         most {} ms",
        worst.as_millis()
    ));
}

/// A second call that needs a token waits for the flow already running: its own timeout and
/// cancel still end it at once, whatever the stalled flow does.
#[test]
fn a_call_waiting_for_a_stalled_flow_still_ends_at_its_timeout() {
    let server = stalling_at("/.well-known/oauth-protected-resource");
    let client = Arc::new(connected(&server, machine()));
    let first = std::thread::spawn({
        let client = client.clone();
        move || client.ping(&RequestOptions::with_timeout(Duration::from_secs(60)))
    });
    server.wait_for("/.well-known/oauth-protected-resource");
    let started = Instant::now();
    let error = client
        .ping(&RequestOptions::with_timeout(Duration::from_millis(500)))
        .unwrap_err();
    assert_eq!(error.status, Status::Timeout, "{error}");
    assert!(started.elapsed() < BOUND, "took {:?}", started.elapsed());
    common::report_figure(&format!(
        "OAuth, a call waiting for another call's stalled flow: its 500 ms timeout ended it \
         after {} ms",
        started.elapsed().as_millis()
    ));
    client.close();
    assert_eq!(first.join().unwrap().unwrap_err().status, Status::Closed);
}

/// A refresh cut short by a cancel must not go on to a new authorization: the person is
/// never asked for a call that has ended. The flow sees its refresh fail at the moment the
/// cancel lands, so the scenario runs many times, several at once, for the threads to
/// interleave in as many ways as a loaded machine would.
#[test]
fn a_cancel_during_the_refresh_never_reaches_the_person() {
    const AT_ONCE: usize = 8;
    const ROUNDS: usize = 25;
    let runs: Vec<_> = (0..AT_ONCE)
        .map(|_| std::thread::spawn(|| (0..ROUNDS).for_each(|_| cancel_during_the_refresh())))
        .collect();
    for run in runs {
        if let Err(panic) = run.join() {
            std::panic::resume_unwind(panic);
        }
    }
}

fn cancel_during_the_refresh() {
    let server = Hostile::start(|request, _| {
        match request.path == "/token" && request.body.contains("grant_type=refresh_token") {
            true => Reply::Stall,
            false => Reply::Default,
        }
    });
    let store = Arc::new(MemoryTokenStore::default());
    let key = TokenKey {
        server_url: server.url(),
        issuer: server.base.clone(),
    };
    let expired = json!({"access_token": "old", "refresh_token": "refresh-me", "expires_at": 1});
    store.save(&key, Some(&expired));
    let asked = Arc::new(Person::default());
    let oauth = OAuthConfig {
        client_id: Some("pre".into()),
        token_store: store,
        ..person(&asked)
    };
    let client = connected(&server, oauth);
    let token = CancellationToken::new();
    let call = std::thread::spawn({
        let token = token.clone();
        move || {
            let outcome = client.ping(&RequestOptions::with_cancellation(&token));
            (client, outcome)
        }
    });
    server.wait_for("/token");
    token.cancel(None);
    let (client, outcome) = call.join().unwrap();
    assert_eq!(outcome.unwrap_err().status, Status::Cancelled);
    // Whatever thread ran the flow has had its chance to go on by the time close returns.
    client.close();
    assert_eq!(
        asked.asked.load(Ordering::SeqCst),
        0,
        "the person was asked"
    );
}

// ---------------------------------------------------------------------------------------------
// Answers without end
// ---------------------------------------------------------------------------------------------

#[test]
fn an_endless_answer_is_refused_at_the_size_limit() {
    let limit = format!("{} KiB", mcpc::limits::MAX_OAUTH_ANSWER_BYTES / 1024);
    let mut worst = Duration::ZERO;
    let cases = exchange_cases();
    let places = cases.len();
    for (path, oauth) in cases {
        let server = Hostile::start(move |request, _| match request.path.starts_with(path) {
            true => Reply::Endless,
            false => Reply::Default,
        });
        let client = connected(&server, oauth);
        let started = Instant::now();
        refused(&client, &[path, &limit]);
        worst = worst.max(started.elapsed());
        // Nothing after the endless answer was asked for.
        let paths = server.paths();
        let after = paths.iter().position(|p| p.starts_with(path)).unwrap();
        assert!(
            paths[after + 1..].iter().all(|p| p == "/mcp"),
            "{path}: {paths:?}"
        );
    }
    common::report_figure(&format!(
        "OAuth, an answer without end ({places} places): refused at {limit} in at most {} ms",
        worst.as_millis()
    ));
}

/// A body cut short is not "no document here": the flow stops, naming what it could not read.
#[test]
fn an_answer_cut_short_is_refused() {
    for (path, oauth) in exchange_cases() {
        let server = Hostile::start(move |request, _| match request.path.starts_with(path) {
            true => Reply::CutShort,
            false => Reply::Default,
        });
        let client = connected(&server, oauth);
        refused(&client, &[path, "cannot read the answer"]);
        assert!(!server
            .paths()
            .iter()
            .any(|p| p == "/token" && path != "/token"));
    }
}

/// Headers without end meet the HTTP client's own bound on a response head (64 KiB).
#[test]
fn an_endless_head_is_refused() {
    for (path, oauth) in exchange_cases() {
        let server = Hostile::start(move |request, _| match request.path.starts_with(path) {
            true => Reply::EndlessHead,
            false => Reply::Default,
        });
        let client = connected(&server, oauth);
        refused(&client, &[path, "too big"]);
        let paths = server.paths();
        let after = paths.iter().position(|p| p.starts_with(path)).unwrap();
        assert!(
            paths[after + 1..].iter().all(|p| p == "/mcp"),
            "{path}: {paths:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Redirects
// ---------------------------------------------------------------------------------------------

/// A listener that counts connections: nothing may ever reach it.
fn elsewhere() -> Hostile {
    Hostile::start(|_, _| Reply::Json(200, json!({})))
}

/// The token request carries the client's secret and the code; a registration the client's
/// metadata: a redirect of either is never followed.
#[test]
fn a_token_endpoint_that_redirects_is_not_followed() {
    let other = elsewhere();
    for status in [301, 302, 303, 307, 308] {
        for (path, oauth) in [
            ("/token", machine()),
            ("/register", person(&Arc::default())),
        ] {
            let target = format!("{}{path}", other.base);
            let server = Hostile::start(move |request, _| match request.path == path {
                true => Reply::Redirect(status, target.clone()),
                false => Reply::Default,
            });
            let client = connected(&server, oauth);
            refused(&client, &[path, &format!("HTTP {status}"), "not followed"]);
        }
    }
    assert_eq!(other.connections.load(Ordering::SeqCst), 0);
}

#[test]
fn metadata_that_redirects_in_a_loop_is_refused_without_following() {
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
    ] {
        let server = Hostile::start(move |request, base| match request.path == path {
            true => Reply::Redirect(302, format!("{base}{path}")),
            false => Reply::Default,
        });
        let client = connected(&server, machine());
        refused(&client, &[path, "HTTP 302", "not followed"]);
        let paths = server.paths();
        assert_eq!(paths.iter().filter(|p| *p == path).count(), 1, "{paths:?}");
        // The flow stops there: no guess at other endpoints, no token request.
        assert!(!paths.iter().any(|p| p == "/token"), "{paths:?}");
    }
}

/// After authorizing, the server sends the MCP request elsewhere (another port of this
/// machine): the redirect is not followed, so the token never reaches the other origin.
#[test]
fn the_token_never_reaches_another_origin() {
    let other = elsewhere();
    let target = format!("{}/mcp", other.base);
    let server = Hostile::start(move |request, _| {
        let authorized = request.authorization.as_deref() == Some(&format!("Bearer {TOKEN}"));
        match (request.path.as_str(), authorized) {
            ("/mcp", true) => Reply::Redirect(307, target.clone()),
            _ => Reply::Default,
        }
    });
    let client = connected(&server, machine());
    let error = client.ping(&RequestOptions::default()).unwrap_err();
    assert_eq!(error.status, Status::TransportError, "{error}");
    assert!(error.message.contains("not followed"), "{error}");
    assert!(!error.message.contains(TOKEN), "{error}");
    // The token went to the resource (and the token endpoint issued it), nowhere else.
    let carried: Vec<String> = server
        .requests()
        .iter()
        .filter(|r| r.authorization.as_deref() == Some(&format!("Bearer {TOKEN}")))
        .map(|r| r.path.clone())
        .collect();
    assert!(
        !carried.is_empty() && carried.iter().all(|p| p == "/mcp"),
        "{carried:?}"
    );
    assert_eq!(other.connections.load(Ordering::SeqCst), 0);
}

// ---------------------------------------------------------------------------------------------
// Lies
// ---------------------------------------------------------------------------------------------

#[test]
fn metadata_for_another_issuer_or_resource_is_refused() {
    type Lie = fn(&str) -> Value;
    let lies: [(&str, &str, Lie, &str); 4] = [
        // An issuer that differs only by a trailing slash is another issuer (exact match).
        (
            "/.well-known/oauth-authorization-server",
            "issuer",
            |base| server_metadata(base, &format!("{base}/")),
            "names another issuer",
        ),
        (
            "/.well-known/oauth-authorization-server",
            "issuer",
            |base| server_metadata(base, "http://127.0.0.1:9"),
            "names another issuer",
        ),
        (
            "/.well-known/oauth-protected-resource/mcp",
            "resource",
            |base| json!({"resource": format!("{base}/mcp-other"), "authorization_servers": [base]}),
            "another resource",
        ),
        (
            "/.well-known/oauth-protected-resource/mcp",
            "resource",
            |base| {
                let other_port = base.replace("127.0.0.1:", "127.0.0.1:1");
                json!({"resource": format!("{other_port}/mcp"), "authorization_servers": [base]})
            },
            "another resource",
        ),
    ];
    for (path, _, lie, expect) in lies {
        let server = Hostile::start(move |request, base| match request.path == path {
            true => Reply::Json(200, lie(base)),
            false => Reply::Default,
        });
        let client = connected(&server, machine());
        refused(&client, &[expect]);
        assert!(!server.paths().iter().any(|p| p == "/token"));
    }
}

/// Endpoints on plain http off this machine are refused before any connection: the names end
/// in `.invalid`, which no resolver answers, and the refusal is immediate and clear.
#[test]
fn an_endpoint_on_plain_http_off_loopback_is_refused_before_any_connection() {
    type Lie = fn(&str) -> (&'static str, Value);
    let lies: [(Lie, &str, OAuthConfig); 4] = [
        (
            |base| {
                let mut m = server_metadata(base, base);
                m["token_endpoint"] = json!("http://example.invalid/token");
                ("/.well-known/oauth-authorization-server", m)
            },
            "token endpoint",
            machine(),
        ),
        (
            |base| {
                let mut m = server_metadata(base, base);
                m["registration_endpoint"] = json!("http://example.invalid/register");
                ("/.well-known/oauth-authorization-server", m)
            },
            "registration endpoint",
            person(&Arc::default()),
        ),
        (
            |base| {
                let mut m = server_metadata(base, base);
                m["authorization_endpoint"] = json!("http://example.invalid/authorize");
                ("/.well-known/oauth-authorization-server", m)
            },
            "authorization endpoint",
            person(&Arc::default()),
        ),
        (
            |base| {
                let m = json!({
                    "resource": format!("{base}/mcp"),
                    "authorization_servers": ["http://example.invalid"],
                });
                ("/.well-known/oauth-protected-resource/mcp", m)
            },
            "authorization server",
            machine(),
        ),
    ];
    for (lie, what, oauth) in lies {
        let server = Hostile::start(move |request, base| {
            let (path, document) = lie(base);
            match request.path == path {
                true => Reply::Json(200, document),
                false => Reply::Default,
            }
        });
        let client = connected(&server, oauth);
        let started = Instant::now();
        refused(&client, &[what, "http://example.invalid", "not HTTPS"]);
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{what}: {:?}",
            started.elapsed()
        );
        assert!(!server
            .paths()
            .iter()
            .any(|p| p == "/token" || p == "/register"));
    }
}

/// A token that cannot go in a header (a control character, or larger than the limit) is the
/// authorization server's fault: refused when issued, UNAUTHORIZED, never sent.
#[test]
fn a_token_that_cannot_be_sent_is_refused_when_issued() {
    let too_long = "t".repeat(mcpc::limits::MAX_OAUTH_TOKEN_BYTES + 1);
    for token in [
        "abc\r\nX-Injected: 1".to_owned(),
        "two words".to_owned(),
        too_long,
    ] {
        let issued = token.clone();
        let server = Hostile::start(move |request, _| match request.path.as_str() {
            "/token" => Reply::Json(200, json!({"access_token": issued, "token_type": "Bearer"})),
            _ => Reply::Default,
        });
        let client = connected(&server, machine());
        let error = refused(&client, &["/token", "cannot be sent"]);
        assert!(!error.message.contains(&token), "{error}");
        let requests = server.requests();
        let bearer = |r: &Request| {
            r.authorization
                .as_deref()
                .unwrap_or_default()
                .starts_with("Bearer")
        };
        assert!(!requests.iter().any(bearer), "{requests:?}");
    }
}

/// A notification that meets a 401 runs the flow too, with no call to cancel it: close must
/// still end it at once, the person's step included.
#[test]
fn close_ends_a_flow_started_by_a_notification() {
    let server = Hostile::start(|request, _| {
        let notification = request.body.contains("notifications/initialized");
        match (request.path.as_str(), notification) {
            ("/mcp", true) if request.authorization.is_none() => Reply::Json(401, json!({})),
            ("/authorize", _) => Reply::Stall,
            _ => Reply::Default,
        }
    });
    let mut config = HttpConfig::new(server.url());
    config.auth.oauth = Some(waiting_person());
    let options = ClientOptions {
        mode: ConnectMode::Legacy,
        ..ClientOptions::default()
    };
    let client = Arc::new(Client::http(config, options));
    let connect = std::thread::spawn({
        let client = client.clone();
        move || client.connect()
    });
    server.wait_for("/authorize");
    let closing = Instant::now();
    client.close();
    let outcome = connect.join().unwrap();
    assert!(closing.elapsed() < BOUND, "took {:?}", closing.elapsed());
    assert!(outcome.is_err(), "{outcome:?}");
}

/// The person's step may use the client: a request made from it that needs a token too waits
/// for the flow under way only until its own timeout (one flow at a time, but no lock held
/// across the host's step: it used to deadlock on the flow's mutex).
#[test]
fn a_request_from_the_persons_step_ends_at_its_timeout() {
    let server = Hostile::start(|_, _| Reply::Default);
    let slot: Arc<std::sync::OnceLock<Arc<Client>>> = Arc::default();
    let nested = Arc::new(Mutex::new(None));
    let oauth = OAuthConfig {
        client_id: Some("pre".into()),
        redirect_uri: Some(REDIRECT_URI.into()),
        authorize: Some(Arc::new({
            let (slot, nested) = (slot.clone(), nested.clone());
            move |_: &AuthorizationRequest| {
                let client = slot.get().unwrap();
                let outcome =
                    client.ping(&RequestOptions::with_timeout(Duration::from_millis(300)));
                *nested.lock().unwrap() = Some(outcome.map_err(|e| e.status));
                Err("done".into())
            }
        })),
        ..OAuthConfig::default()
    };
    let client = Arc::new(connected(&server, oauth));
    slot.set(client.clone()).ok().unwrap();
    let (done_tx, done) = std::sync::mpsc::channel();
    std::thread::spawn({
        let client = client.clone();
        move || {
            let _ = done_tx.send(
                client
                    .ping(&RequestOptions::default())
                    .map_err(|e| e.status),
            );
        }
    });
    let outer = done.recv_timeout(BOUND).expect("the outer call ended");
    assert_eq!(outer, Err(Status::Unauthorized));
    assert_eq!(*nested.lock().unwrap(), Some(Err(Status::Timeout)));
    client.close();
}

/// A call whose timeout passes during the person's step ends with TIMEOUT, the first outcome,
/// even while the host's own cancel hook on the step is still running: the step, told of the
/// cancel, returns at once, and its failure must not be taken for the call's outcome.
#[test]
fn a_timeout_during_the_persons_step_stays_the_outcome_while_its_hook_runs() {
    let server = Hostile::start(|_, _| Reply::Default);
    let hook_done = Arc::new(AtomicBool::new(false));
    let oauth = OAuthConfig {
        client_id: Some("pre".into()),
        redirect_uri: Some(REDIRECT_URI.into()),
        authorize: Some(Arc::new({
            let hook_done = hook_done.clone();
            move |request: &AuthorizationRequest| {
                let hook_done = hook_done.clone();
                // A host's slow clean-up (closing the browser tab, say), run by the cancel.
                request.cancellation.on_cancel(move |_| {
                    std::thread::sleep(Duration::from_millis(500));
                    hook_done.store(true, Ordering::SeqCst);
                });
                let deadline = Instant::now() + BOUND;
                while !request.cancellation.is_cancelled() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err("the person went away".into())
            }
        })),
        ..OAuthConfig::default()
    };
    let client = connected(&server, oauth);
    let started = Instant::now();
    let outcome = client
        .ping(&RequestOptions::with_timeout(Duration::from_millis(300)))
        .map_err(|e| e.status);
    assert_eq!(outcome, Err(Status::Timeout));
    assert!(started.elapsed() < BOUND, "took {:?}", started.elapsed());
    assert!(server
        .paths()
        .iter()
        .any(|p| p == "/.well-known/oauth-authorization-server"));
    let deadline = Instant::now() + BOUND;
    while !hook_done.load(Ordering::SeqCst) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(hook_done.load(Ordering::SeqCst), "the host's hook ran");
    client.close();
}

// ---------------------------------------------------------------------------------------------
// private_key_jwt: a signed assertion instead of a secret
// ---------------------------------------------------------------------------------------------

/// A pre-registered machine client that authenticates with its private key.
fn keyed_machine(pem: &str) -> OAuthConfig {
    OAuthConfig {
        client_id: Some("machine".into()),
        client_key: Some(SigningKey::from_pem(pem, Some("key-1")).expect("a P-256 PKCS#8 key")),
        grant_type: GrantType::ClientCredentials,
        ..OAuthConfig::default()
    }
}

/// A fresh ECDSA P-256 key: its PKCS#8 PEM and its raw public key.
fn p256_key() -> (String, Vec<u8>) {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    (key.serialize_pem(), key.public_key_raw().to_vec())
}

/// The decoded value of `name` in a form body.
fn form_value(body: &str, name: &str) -> Option<String> {
    let raw = body
        .split('&')
        .find_map(|pair| pair.strip_prefix(&format!("{name}=")))?;
    let mut out = Vec::new();
    let bytes = raw.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                out.push(u8::from_str_radix(&raw[i + 1..i + 3], 16).unwrap());
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Some(String::from_utf8(out).unwrap())
}

fn base64url_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'-' => 62,
        b'_' => 63,
        _ => panic!("not base64url: {text}"),
    };
    let mut out = Vec::new();
    let (mut bits, mut count) = (0u32, 0);
    for c in text.bytes() {
        bits = bits << 6 | u32::from(value(c));
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
        }
    }
    out
}

/// The token request carries no secret and no Basic header but a JWT that the public key
/// verifies, naming the client (`iss`, `sub`) and the authorization server (`aud`, its
/// issuer), short-lived, with a `jti`; each token request gets a new one.
#[test]
fn a_private_key_jwt_client_sends_a_fresh_assertion_the_public_key_verifies() {
    let (pem, public_key) = p256_key();
    let server = Hostile::start(|_, _| Reply::Default);
    let first = connected(&server, keyed_machine(&pem));
    first
        .ping(&RequestOptions::default())
        .expect("a token for the assertion");
    let second = connected(&server, keyed_machine(&pem));
    second
        .ping(&RequestOptions::default())
        .expect("a token for the second client's assertion");

    let token_requests: Vec<Request> = server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/token")
        .collect();
    assert_eq!(token_requests.len(), 2, "{token_requests:?}");
    let mut ids = Vec::new();
    for request in &token_requests {
        assert_eq!(request.authorization, None, "no Basic credentials");
        let body = &request.body;
        assert_eq!(
            form_value(body, "grant_type").as_deref(),
            Some("client_credentials")
        );
        assert_eq!(form_value(body, "client_id").as_deref(), Some("machine"));
        assert_eq!(
            form_value(body, "client_assertion_type").as_deref(),
            Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
        );
        assert_eq!(form_value(body, "client_secret"), None, "{body}");
        let assertion = form_value(body, "client_assertion").expect("a client assertion");
        let parts: Vec<&str> = assertion.split('.').collect();
        assert_eq!(parts.len(), 3, "{assertion}");
        let signed = format!("{}.{}", parts[0], parts[1]);
        ring::signature::UnparsedPublicKey::new(
            &ring::signature::ECDSA_P256_SHA256_FIXED,
            &public_key,
        )
        .verify(signed.as_bytes(), &base64url_decode(parts[2]))
        .expect("the signature verifies with the client's public key");
        let header: Value = serde_json::from_slice(&base64url_decode(parts[0])).unwrap();
        assert_eq!(
            header,
            json!({"alg": "ES256", "typ": "JWT", "kid": "key-1"})
        );
        let claims: Value = serde_json::from_slice(&base64url_decode(parts[1])).unwrap();
        assert_eq!(claims["iss"], "machine");
        assert_eq!(claims["sub"], "machine");
        assert_eq!(claims["aud"], server.base.as_str());
        let (iat, exp) = (
            claims["iat"].as_u64().unwrap(),
            claims["exp"].as_u64().unwrap(),
        );
        assert!(exp > iat && exp - iat <= 600, "{claims}");
        ids.push(claims["jti"].as_str().unwrap().to_owned());
    }
    assert_ne!(ids[0], ids[1], "each assertion is fresh");
}

/// A key that is not one is refused when set, with INVALID_ARGUMENT, through the C API too.
#[test]
fn a_bad_private_key_is_refused_when_set() {
    for pem in [
        "",
        "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
    ] {
        let error = SigningKey::from_pem(pem, None).unwrap_err();
        assert_eq!(error.status, Status::InvalidArgument, "{error}");
    }
    unsafe {
        use mcpc::ffi::*;
        let options = mcp_client_options_new();
        let bad = c"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        let status =
            mcp_client_options_set_oauth_client_key(options, bad.as_ptr(), std::ptr::null());
        assert_eq!(status, mcp_status::InvalidArgument);
        let (pem, _) = p256_key();
        let good = std::ffi::CString::new(pem).unwrap();
        let status = mcp_client_options_set_oauth_client_key(options, good.as_ptr(), c"k".as_ptr());
        assert_eq!(status, mcp_status::Ok);
        mcp_client_options_free(options);
    }
}

/// The key and the assertions are credentials: a careless server that quotes the client's
/// last assertion in its challenge (which goes into the error's data) never gets it shown,
/// nor the key in the error or the configuration's Debug.
#[test]
fn no_private_key_or_assertion_reaches_an_error_message() {
    let (pem, _) = p256_key();
    let last_assertion = Arc::new(Mutex::new(String::new()));
    let seen = last_assertion.clone();
    let server = Hostile::start(move |request, _| match request.path.as_str() {
        "/token" => {
            *seen.lock().unwrap() =
                form_value(&request.body, "client_assertion").unwrap_or_default();
            Reply::Default
        }
        "/mcp" if request.authorization.is_some() => Reply::Challenge(format!(
            "Bearer error=\"invalid_token\", error_description=\"{}\"",
            seen.lock().unwrap()
        )),
        _ => Reply::Default,
    });
    let config = keyed_machine(&pem);
    let shown_config = format!("{config:?}");
    let client = connected(&server, config);
    let error = refused(&client, &[]);
    let assertion = last_assertion.lock().unwrap().clone();
    assert!(!assertion.is_empty(), "no assertion was sent");
    let signature = assertion.rsplit('.').next().unwrap().to_owned();
    let shown = format!("{error} {:?} {} {shown_config}", error.data, error.message);
    assert!(
        shown.contains("invalid_token"),
        "the challenge is in the data: {shown}"
    );
    for secret in [assertion.as_str(), signature.as_str()] {
        assert!(!shown.contains(secret), "{secret:?} in {shown}");
    }
    for line in pem.lines().filter(|line| !line.starts_with("-----")) {
        assert!(!shown.contains(line), "a line of the key in {shown}");
    }
}

// ---------------------------------------------------------------------------------------------
// 2025-03-26 servers: no resource metadata, the authorization server at the server's origin
// ---------------------------------------------------------------------------------------------

/// A server of 2025-03-26 publishes no resource metadata; its origin's metadata document,
/// found at the root, may name an issuer at a path of that origin (an authorization server
/// mounted under /oauth): the same party, so the flow uses it. An issuer on another origin
/// is still refused.
#[test]
fn a_2025_03_26_server_may_name_an_issuer_at_a_path_of_its_own_origin() {
    let legacy_server = |issuer: fn(&str) -> String| {
        Hostile::start(move |request, base| match request.path.as_str() {
            "/.well-known/oauth-protected-resource/mcp" => Reply::Json(404, json!({})),
            "/.well-known/oauth-authorization-server" => {
                Reply::Json(200, server_metadata(base, &issuer(base)))
            }
            _ => Reply::Default,
        })
    };
    let server = legacy_server(|base| format!("{base}/oauth"));
    let client = connected(&server, machine());
    client
        .ping(&RequestOptions::default())
        .expect("the token from the authorization server at /oauth");
    assert!(server.paths().iter().any(|p| p == "/token"));

    for other in [
        |_: &str| "http://127.0.0.1:9/oauth".to_owned(),
        |base: &str| format!("{}/oauth", base.replace("127.0.0.1", "localhost")),
        |base: &str| format!("{base}/oauth?x=1"),
    ] {
        let server = legacy_server(other);
        let client = connected(&server, machine());
        refused(&client, &["names another issuer"]);
        assert!(!server.paths().iter().any(|p| p == "/token"));
    }
}

// ---------------------------------------------------------------------------------------------
// Workload identity federation: the JWT-bearer grant
// ---------------------------------------------------------------------------------------------

/// A machine whose platform token is in `path`.
fn workload(path: &std::path::Path) -> OAuthConfig {
    OAuthConfig {
        grant_type: GrantType::JwtBearer,
        workload_identity: Some(WorkloadIdentity::File(path.to_owned())),
        ..OAuthConfig::default()
    }
}

/// A JWT-shaped platform token (the authorization server here does not verify it).
fn platform_token(name: &str) -> String {
    format!("eyJhbGciOiJFUzI1NiJ9.{name}.c2lnbmF0dXJl")
}

/// The token request is the JWT-bearer grant with the file's token as the assertion and no
/// client (none is configured); the file is read again for each token request, so a token
/// the platform rotated is the one sent.
#[test]
fn the_jwt_bearer_grant_sends_the_workload_token_read_again_each_time() {
    let path = common::log_path("workload_token");
    std::fs::write(&path, format!("{}\n", platform_token("first"))).unwrap();
    let server = Hostile::start(|_, _| Reply::Default);
    let first = connected(&server, workload(&path));
    first.ping(&RequestOptions::default()).expect("a token");
    std::fs::write(&path, platform_token("rotated")).unwrap();
    let second = connected(&server, workload(&path));
    second.ping(&RequestOptions::default()).expect("a token");

    let bodies: Vec<String> = server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/token")
        .map(|r| r.body)
        .collect();
    assert_eq!(bodies.len(), 2, "{bodies:?}");
    for (body, name) in bodies.iter().zip(["first", "rotated"]) {
        assert_eq!(
            form_value(body, "grant_type").as_deref(),
            Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
        );
        assert_eq!(form_value(body, "assertion"), Some(platform_token(name)));
        assert_eq!(form_value(body, "client_id"), None, "{body}");
    }
    assert!(!server.paths().iter().any(|p| p == "/register"));
    let _ = std::fs::remove_file(&path);
}

/// A missing file, or one that holds no JWT, fails the request with UNAUTHORIZED before any
/// token request, never quoting the file; a token the server echoes back is never shown.
#[test]
fn a_workload_token_is_never_shown_and_a_bad_one_is_not_sent() {
    let path = common::log_path("workload_token_bad");
    let server = Hostile::start(|_, _| Reply::Default);
    let _ = std::fs::remove_file(&path);
    let client = connected(&server, workload(&path));
    refused(&client, &["cannot read the workload token file"]);
    std::fs::write(&path, "not-a-jwt secret-text").unwrap();
    let client = connected(&server, workload(&path));
    let error = refused(&client, &["not a compact JWT"]);
    assert!(!error.message.contains("secret-text"), "{error}");
    assert!(!server.paths().iter().any(|p| p == "/token"));

    let token = platform_token("planted-workload-secret");
    std::fs::write(&path, &token).unwrap();
    let echoed = token.clone();
    let server = Hostile::start(move |request, _| match request.path.as_str() {
        "/mcp" if request.authorization.is_some() => Reply::Challenge(format!(
            "Bearer error=\"invalid_token\", error_description=\"{echoed}\""
        )),
        _ => Reply::Default,
    });
    let client = connected(&server, workload(&path));
    let error = refused(&client, &[]);
    let shown = format!("{error} {:?}", error.data);
    assert!(shown.contains("invalid_token"), "{shown}");
    assert!(!shown.contains(&token), "the workload token in {shown}");
    let _ = std::fs::remove_file(&path);
}

// ---------------------------------------------------------------------------------------------
// Enterprise-managed authorization: the identity assertion, the ID-JAG, the JWT-bearer grant
// ---------------------------------------------------------------------------------------------

/// The person's identity assertion (an ID token from the IdP; the IdP here does not verify it).
const IDENTITY_ASSERTION: &str = "eyJhbGciOiJFUzI1NiJ9.planted-identity-assertion.c2lnbmF0dXJl";
/// The ID-JAG the IdP here issues.
const ID_JAG: &str = "eyJ0eXAiOiJvYXV0aC1pZC1qYWcrand0In0.planted-id-jag.c2lnbmF0dXJl";
const ID_JAG_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";

/// A host whose person signed in at the IdP served (as `/idp/token`) by `server`; the MCP
/// server's authorization server knows it as the pre-registered client "enterprise-app".
fn enterprise(server: &Hostile, asked: &Arc<AtomicUsize>) -> OAuthConfig {
    let asked = asked.clone();
    OAuthConfig {
        client_id: Some("enterprise-app".into()),
        client_secret: Some("enterprise-secret".into()),
        grant_type: GrantType::EnterpriseManaged,
        identity_provider: Some(IdentityProvider {
            token_endpoint: format!("{}/idp/token", server.base),
            client_id: Some("idp-client".into()),
            client_secret: None,
            assertion: Arc::new(move || {
                asked.fetch_add(1, Ordering::SeqCst);
                Ok(IDENTITY_ASSERTION.to_owned())
            }),
        }),
        ..OAuthConfig::default()
    }
}

/// The IdP's token exchange answer: the ID-JAG.
fn id_jag_reply() -> Reply {
    Reply::Json(
        200,
        json!({"access_token": ID_JAG, "issued_token_type": ID_JAG_TYPE, "token_type": "N_A"}),
    )
}

/// The host's assertion goes to the IdP in an RFC 8693 token exchange for an ID-JAG addressed
/// to the MCP server's authorization server (its issuer) and resource; the ID-JAG then goes to
/// the authorization server as the JWT-bearer grant, with the pre-registered client's
/// authentication; the access token it gives is what the MCP request carries.
#[test]
fn the_enterprise_grant_exchanges_the_assertion_for_an_id_jag_and_presents_it() {
    let server = Hostile::start(|request, _| match request.path.as_str() {
        "/idp/token" => id_jag_reply(),
        _ => Reply::Default,
    });
    let asked = Arc::new(AtomicUsize::new(0));
    let client = connected(&server, enterprise(&server, &asked));
    client.ping(&RequestOptions::default()).expect("a token");
    assert_eq!(asked.load(Ordering::SeqCst), 1);

    let requests = server.requests();
    let exchange = requests.iter().find(|r| r.path == "/idp/token").unwrap();
    let field = |name: &str| form_value(&exchange.body, name);
    assert_eq!(
        field("grant_type").as_deref(),
        Some("urn:ietf:params:oauth:grant-type:token-exchange")
    );
    assert_eq!(field("requested_token_type").as_deref(), Some(ID_JAG_TYPE));
    assert_eq!(
        field("subject_token_type").as_deref(),
        Some("urn:ietf:params:oauth:token-type:id_token")
    );
    assert_eq!(field("subject_token").as_deref(), Some(IDENTITY_ASSERTION));
    assert_eq!(field("audience"), Some(server.base.clone()));
    assert_eq!(field("resource"), Some(server.url()));
    assert_eq!(field("client_id").as_deref(), Some("idp-client"));

    let grant = requests.iter().find(|r| r.path == "/token").unwrap();
    assert_eq!(
        form_value(&grant.body, "grant_type").as_deref(),
        Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
    );
    assert_eq!(
        form_value(&grant.body, "assertion").as_deref(),
        Some(ID_JAG)
    );
    assert!(
        grant
            .authorization
            .as_deref()
            .unwrap_or_default()
            .starts_with("Basic "),
        "the client authenticates: {grant:?}"
    );
    let last = requests.iter().rfind(|r| r.path == "/mcp").unwrap();
    assert_eq!(last.authorization, Some(format!("Bearer {TOKEN}")));
    // Neither the assertion nor the ID-JAG ever goes to the MCP server.
    for request in requests.iter().filter(|r| r.path == "/mcp") {
        let seen = format!("{request:?}");
        assert!(!seen.contains("planted"), "{seen}");
    }
}

/// The assertion and the ID-JAG never appear in what the client says, though every party
/// echoes them back: the IdP refusing the exchange, the authorization server refusing the
/// ID-JAG, the MCP server refusing the token, and the library's log; a bad answer of the IdP
/// (no ID-JAG type) and a host without an assertion fail with UNAUTHORIZED before any grant.
#[test]
fn no_identity_assertion_or_id_jag_reaches_a_message_or_the_log() {
    let echo = format!("you sent {IDENTITY_ASSERTION} and {ID_JAG}");
    let logged = Arc::new(Mutex::new(Vec::<String>::new()));
    let run = |route: Box<Route>, names: &[&str]| {
        let server = Hostile::start(route);
        let asked = Arc::new(AtomicUsize::new(0));
        let mut config = HttpConfig::new(server.url());
        config.auth.oauth = Some(enterprise(&server, &asked));
        let lines = logged.clone();
        let mut options = ClientOptions {
            mode: ConnectMode::Legacy,
            ..ClientOptions::default()
        };
        options.callbacks.on_log = Some(Arc::new(move |_, line: &str| {
            lines.lock().unwrap().push(line.to_owned())
        }));
        let client = Client::http(config, options);
        client.connect().expect("initialize needs no token");
        let error = refused(&client, names);
        (server, format!("{error} {:?}", error.data))
    };
    let refusing = |status: u16, echo: String| {
        Reply::Json(
            status,
            json!({"error": "invalid_grant", "error_description": echo}),
        )
    };

    let mut said = Vec::new();
    let echoed = echo.clone();
    let (_, shown) = run(
        Box::new(move |request, _| match request.path.as_str() {
            "/idp/token" => refusing(400, echoed.clone()),
            _ => Reply::Default,
        }),
        &["refused the token exchange", "error=invalid_grant"],
    );
    said.push(shown);
    let echoed = echo.clone();
    let (_, shown) = run(
        Box::new(move |request, _| match request.path.as_str() {
            "/idp/token" => id_jag_reply(),
            "/token" => refusing(400, echoed.clone()),
            _ => Reply::Default,
        }),
        &["refused the request", "error=invalid_grant"],
    );
    said.push(shown);
    let echoed = echo.clone();
    let (_, shown) = run(
        Box::new(move |request, _| match request.path.as_str() {
            "/idp/token" => id_jag_reply(),
            "/mcp" if request.authorization.is_some() => Reply::Challenge(format!(
                "Bearer error=\"invalid_token\", error_description=\"{echoed}\""
            )),
            _ => Reply::Default,
        }),
        &[],
    );
    assert!(
        shown.contains("invalid_token"),
        "the challenge is kept: {shown}"
    );
    said.push(shown);
    let (server, shown) = run(
        Box::new(|request, _| match request.path.as_str() {
            "/idp/token" => Reply::Json(200, json!({"access_token": ID_JAG, "token_type": "N_A"})),
            _ => Reply::Default,
        }),
        &["not an ID-JAG"],
    );
    assert!(!server.paths().iter().any(|p| p == "/token"));
    said.push(shown);

    said.extend(logged.lock().unwrap().iter().cloned());
    for line in &said {
        assert!(!line.contains("planted"), "a credential in {line}");
    }

    // A host that has no assertion: refused with its reason, nothing exchanged.
    let server = Hostile::start(|_, _| Reply::Default);
    let mut config = enterprise(&server, &Arc::default());
    if let Some(idp) = config.identity_provider.as_mut() {
        idp.assertion = Arc::new(|| Err("nobody signed in".into()));
    }
    let client = connected(&server, config);
    refused(
        &client,
        &["identity assertion provider failed: nobody signed in"],
    );
    assert!(!server.paths().iter().any(|p| p.ends_with("/token")));
}

// ---------------------------------------------------------------------------------------------
// private_key_jwt with the host's signer: a key the library never sees
// ---------------------------------------------------------------------------------------------

/// The test's key, standing in for one kept in an HSM: the sign callback's userdata.
struct HostKey {
    pair: ring::signature::EcdsaKeyPair,
    signed: AtomicUsize,
}

unsafe extern "C" fn sign_with_host_key(
    userdata: *mut std::ffi::c_void,
    input: *const u8,
    length: usize,
    signature: *mut u8,
    capacity: usize,
) -> usize {
    let key = &*(userdata as *const HostKey);
    let input = std::slice::from_raw_parts(input, length);
    let rng = ring::rand::SystemRandom::new();
    let Ok(signed) = key.pair.sign(&rng, input) else {
        return 0;
    };
    let signed = signed.as_ref();
    if signed.len() > capacity {
        return 0;
    }
    std::ptr::copy_nonoverlapping(signed.as_ptr(), signature, signed.len());
    key.signed.fetch_add(1, Ordering::SeqCst);
    signed.len()
}

unsafe extern "C" fn refuse_to_sign(
    _userdata: *mut std::ffi::c_void,
    _input: *const u8,
    _length: usize,
    _signature: *mut u8,
    _capacity: usize,
) -> usize {
    0
}

/// A ping through the C API by a client_credentials client "machine" whose key is behind
/// `sign`: its status and message.
fn ping_with_signer(
    server: &Hostile,
    sign: mcpc::ffi::mcp_sign_callback,
    key: *const HostKey,
) -> (mcpc::ffi::mcp_status, String) {
    use mcpc::ffi::*;
    unsafe {
        let o = mcp_client_options_new();
        assert_eq!(
            mcp_client_options_set_mode(o, mcp_connect_mode::Legacy as i32),
            mcp_status::Ok
        );
        assert_eq!(
            mcp_client_options_set_oauth_client(o, c"machine".as_ptr(), std::ptr::null()),
            mcp_status::Ok
        );
        assert_eq!(
            mcp_client_options_set_oauth_client_signer(
                o,
                c"ES256".as_ptr(),
                c"hsm-key".as_ptr(),
                sign,
                key as *mut std::ffi::c_void
            ),
            mcp_status::Ok
        );
        assert_eq!(mcp_client_options_set_oauth_grant(o, 1), mcp_status::Ok);
        let url = std::ffi::CString::new(server.url()).unwrap();
        let client = mcp_client_new_http(url.as_ptr(), o);
        mcp_client_options_free(o);
        let connected = mcp_client_connect(client);
        assert_eq!(mcp_result_status(connected), mcp_status::Ok);
        mcp_result_free(connected);
        let result = mcp_client_ping(client, std::ptr::null());
        let outcome = (
            mcp_result_status(result),
            std::ffi::CStr::from_ptr(mcp_result_message(result))
                .to_string_lossy()
                .into_owned(),
        );
        mcp_result_free(result);
        mcp_client_free(client);
        outcome
    }
}

/// With a sign callback instead of a PEM, the client assertion is signed by the host: the
/// public key of the host's key verifies it, with the algorithm and key id the host named; a
/// callback that cannot sign ends the call with UNAUTHORIZED before any token request.
#[test]
fn a_host_signer_signs_the_client_assertion() {
    let rng = ring::rand::SystemRandom::new();
    let alg = &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING;
    let pkcs8 = ring::signature::EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
    let key = HostKey {
        pair: ring::signature::EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).unwrap(),
        signed: AtomicUsize::new(0),
    };
    let public_key = {
        use ring::signature::KeyPair;
        key.pair.public_key().as_ref().to_vec()
    };
    let server = Hostile::start(|_, _| Reply::Default);
    let (status, message) = ping_with_signer(&server, Some(sign_with_host_key), &key);
    assert_eq!(status, mcpc::ffi::mcp_status::Ok, "{message}");
    assert_eq!(key.signed.load(Ordering::SeqCst), 1);
    let request = server
        .requests()
        .into_iter()
        .find(|r| r.path == "/token")
        .expect("a token request");
    assert_eq!(request.authorization, None, "no Basic credentials");
    assert_eq!(form_value(&request.body, "client_secret"), None);
    let assertion = form_value(&request.body, "client_assertion").expect("an assertion");
    let parts: Vec<&str> = assertion.split('.').collect();
    assert_eq!(parts.len(), 3, "{assertion}");
    ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, &public_key)
        .verify(
            format!("{}.{}", parts[0], parts[1]).as_bytes(),
            &base64url_decode(parts[2]),
        )
        .expect("the host's public key verifies the assertion");
    let header: Value = serde_json::from_slice(&base64url_decode(parts[0])).unwrap();
    assert_eq!(
        header,
        json!({"alg": "ES256", "typ": "JWT", "kid": "hsm-key"})
    );

    let server = Hostile::start(|_, _| Reply::Default);
    let (status, message) = ping_with_signer(&server, Some(refuse_to_sign), &key);
    assert_eq!(status, mcpc::ffi::mcp_status::Unauthorized, "{message}");
    assert!(
        message.contains("sign callback gave no signature"),
        "{message}"
    );
    assert!(!server.paths().iter().any(|p| p == "/token"));
}

/// An identity provider that stalls the token exchange: the call's timeout, a cancel and
/// close each end the call at once (the exchange is one of the flow's, on the call's agent).
#[test]
fn a_stalled_token_exchange_ends_at_timeout_cancel_and_close() {
    let stalling = || stalling_at("/idp/token");
    // The timeout.
    let server = stalling();
    let client = connected(&server, enterprise(&server, &Arc::default()));
    let started = Instant::now();
    let error = client
        .ping(&RequestOptions::with_timeout(Duration::from_millis(500)))
        .unwrap_err();
    assert_eq!(error.status, Status::Timeout, "{error}");
    assert!(started.elapsed() < BOUND, "{:?}", started.elapsed());
    // A cancel.
    let server = stalling();
    let client = connected(&server, enterprise(&server, &Arc::default()));
    let token = CancellationToken::new();
    let call = std::thread::spawn({
        let token = token.clone();
        move || client.ping(&RequestOptions::with_cancellation(&token))
    });
    server.wait_for("/idp/token");
    let cancelled_at = Instant::now();
    token.cancel(Some("the host gave up"));
    let error = call.join().unwrap().unwrap_err();
    assert_eq!(error.status, Status::Cancelled, "{error}");
    assert!(
        cancelled_at.elapsed() < BOUND,
        "{:?}",
        cancelled_at.elapsed()
    );
    // Close.
    let server = stalling();
    let client = Arc::new(connected(&server, enterprise(&server, &Arc::default())));
    let call = std::thread::spawn({
        let client = client.clone();
        move || client.ping(&RequestOptions::default())
    });
    server.wait_for("/idp/token");
    let closing = Instant::now();
    client.close();
    let error = call.join().unwrap().unwrap_err();
    assert_eq!(error.status, Status::Closed, "{error}");
    assert!(closing.elapsed() < BOUND, "{:?}", closing.elapsed());
}

// ---------------------------------------------------------------------------------------------
// The redaction test of the auth extensions: every credential they add, planted and echoed
// ---------------------------------------------------------------------------------------------

/// A client's OAuth configuration for a server.
type ConfigFor<'a> = dyn Fn(&Hostile) -> OAuthConfig + 'a;

/// Everything a request to the authorization servers carried that is a credential.
fn credentials_sent(server: &Hostile) -> Vec<String> {
    let mut sent = Vec::new();
    for request in server.requests() {
        for name in [
            "client_assertion",
            "assertion",
            "subject_token",
            "client_secret",
        ] {
            sent.extend(form_value(&request.body, name));
        }
        sent.extend(request.dpop.clone());
        if let Some(authorization) = &request.authorization {
            sent.push(authorization.clone());
            sent.extend(authorization.split_once(' ').map(|(_, c)| c.to_owned()));
        }
    }
    sent.retain(|secret| secret.len() >= 16);
    sent
}

/// What the servers echo: every credential they were sent so far, in an error body.
fn echo_of(seen: &Mutex<Vec<Request>>) -> String {
    let seen = seen.lock().unwrap();
    seen.iter()
        .map(|r| format!("{} {:?} {:?}", r.body, r.authorization, r.dpop))
        .collect::<Vec<_>>()
        .join(" | ")
}

/// Each credential of the auth extensions (a private key and its assertions, the host
/// signer's assertions, a DPoP key and its proofs, a workload token, an identity assertion and
/// its ID-JAG), planted in a client whose servers echo every request back: in the token
/// endpoint's refusal, the IdP's refusal, and the MCP server's challenge. None appears in an
/// error message, its data, the library's log or the wire trace.
#[test]
fn no_auth_extension_credential_reaches_a_message_log_or_trace() {
    let said = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut secrets: Vec<String> = Vec::new();
    let (pem, _) = p256_key();
    let (dpop_pem, _) = p256_key();
    for pem in [&pem, &dpop_pem] {
        secrets.extend(
            pem.lines()
                .filter(|line| !line.starts_with("-----"))
                .map(str::to_owned),
        );
    }
    let signer_key = SigningKey::from_pem(&pem, None).unwrap();
    let host_signer = SigningKey::from_host_signer(
        "ES256",
        Some("hsm"),
        Arc::new(move |input: &[u8]| signer_key.sign(input).map_err(|e| e.message)),
    )
    .unwrap();
    let kinds: Vec<(&str, Box<ConfigFor>)> = vec![
        ("private key", Box::new(|_: &Hostile| keyed_machine(&pem))),
        (
            "host signer",
            Box::new(|_: &Hostile| OAuthConfig {
                client_key: Some(host_signer.clone()),
                ..keyed_machine(&pem)
            }),
        ),
        (
            "DPoP key",
            Box::new(|_: &Hostile| OAuthConfig {
                dpop: Some(DpopKey::from_pem(&dpop_pem).unwrap()),
                ..machine()
            }),
        ),
        (
            "workload token",
            Box::new(|_: &Hostile| OAuthConfig {
                grant_type: GrantType::JwtBearer,
                workload_identity: Some(WorkloadIdentity::Provider(Arc::new(|| {
                    Ok(platform_token("planted-workload"))
                }))),
                ..OAuthConfig::default()
            }),
        ),
        (
            "identity assertion and ID-JAG",
            Box::new(|server: &Hostile| enterprise(server, &Arc::default())),
        ),
    ];
    // Where the echo comes from: the token endpoint, the IdP, the MCP server.
    for echo_at in ["/token", "/idp/token", "/mcp"] {
        for (kind, config) in &kinds {
            let seen: Arc<Mutex<Vec<Request>>> = Arc::default();
            let server = {
                let seen = seen.clone();
                Hostile::start(move |request, _| {
                    seen.lock().unwrap().push(request.clone());
                    let path = request.path.as_str();
                    match path {
                        _ if path == echo_at && path != "/mcp" => Reply::Json(
                            400,
                            json!({"error": "invalid_grant", "error_description": echo_of(&seen)}),
                        ),
                        "/mcp" if echo_at == "/mcp" && request.authorization.is_some() => {
                            Reply::Challenge(format!(
                                "Bearer error=\"invalid_token\", error_description=\"{}\"",
                                echo_of(&seen).replace('"', "'")
                            ))
                        }
                        "/idp/token" => id_jag_reply(),
                        _ => Reply::Default,
                    }
                })
            };
            let mut http = HttpConfig::new(server.url());
            http.auth.oauth = Some(config(&server));
            let mut options = ClientOptions {
                mode: ConnectMode::Legacy,
                ..ClientOptions::default()
            };
            let lines = said.clone();
            options.callbacks.on_log = Some(Arc::new(move |_, line: &str| {
                lines.lock().unwrap().push(format!("log: {line}"))
            }));
            let frames = said.clone();
            options.callbacks.on_trace =
                Some(Arc::new(move |frame: &mcpc::handlers::TraceFrame| {
                    frames
                        .lock()
                        .unwrap()
                        .push(format!("trace: {}", frame.json))
                }));
            let client = Client::http(http, options);
            client.connect().expect("initialize needs no token");
            if let Err(error) = client.ping(&RequestOptions::default()) {
                said.lock().unwrap().push(format!(
                    "{kind}, echo at {echo_at}: {error} {:?}",
                    error.data
                ));
            }
            client.close();
            secrets.extend(credentials_sent(&server));
        }
    }
    secrets.push(platform_token("planted-workload"));
    secrets.push(IDENTITY_ASSERTION.to_owned());
    secrets.push(ID_JAG.to_owned());
    let said = said.lock().unwrap();
    // Each kind refused at the token endpoint and by the MCP server; the enterprise kind at
    // the IdP too (the others never ask one).
    let refusals = said.iter().filter(|line| line.contains("echo at")).count();
    assert_eq!(refusals, 11, "refusals collected: {said:#?}");
    let leaks: Vec<&String> = said
        .iter()
        .filter(|line| secrets.iter().any(|secret| line.contains(secret.as_str())))
        .collect();
    assert!(leaks.is_empty(), "credentials leaked in:\n{leaks:#?}");
    common::report_figure(&format!(
        "auth extension credentials: {} messages, log lines and trace frames from {refusals} \
         flows refused by servers echoing them checked for {} planted or sent credentials: \
         none leaked",
        said.len(),
        secrets.len()
    ));
}
