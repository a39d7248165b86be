//! DPoP (RFC 9449) against servers written here: an MCP server and its authorization server,
//! each on its own socket (two origins), both able to demand a nonce of their own. The client
//! must send a fresh proof, signed with its key, on every token request and every request to
//! the MCP server, each naming the request it is for; honour each server's nonce with one
//! retry; present the DPoP-bound token as `DPoP <token>`; and never show a proof or the key.

use mcpc::auth::{DpopKey, GrantType, OAuthConfig};
use mcpc::{Client, ClientOptions, ConnectMode, HttpConfig, RequestOptions, Status};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Every failing call must return within this; a hang would not.
const BOUND: Duration = Duration::from_secs(10);
/// The DPoP-bound token the authorization server issues.
const TOKEN: &str = "dpop-bound-token";
const AS_NONCE: &str = "nonce-of-the-authorization-server";
const RS_NONCE: &str = "nonce-of-the-mcp-server";

// ---------------------------------------------------------------------------------------------
// The servers
// ---------------------------------------------------------------------------------------------

/// One request as a server read it (header names lowercased).
#[derive(Debug, Clone)]
struct Request {
    method: String,
    path: String,
    headers: HashMap<String, String>,
    body: String,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

/// An answer: status, extra header lines, JSON body.
type Reply = (u16, Vec<(String, String)>, Value);
type Route = dyn Fn(&Request, &str) -> Reply + Send + Sync;

/// A server on its own port: one request per connection, answered as `route` says (given
/// the request and the server's base URL).
struct Server {
    base: String,
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<Request>>>,
}

impl Server {
    fn start(route: impl Fn(&Request, &str) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let route: Arc<Route> = Arc::new(route);
        listener.set_nonblocking(true).unwrap();
        let (b, st, se) = (base.clone(), stop.clone(), seen.clone());
        std::thread::spawn(move || {
            while !st.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let (b, se, route) = (b.clone(), se.clone(), route.clone());
                        std::thread::spawn(move || serve(stream, &b, &se, &*route));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Server { base, stop, seen }
    }

    fn requests(&self, path: &str) -> Vec<Request> {
        let seen = self.seen.lock().unwrap();
        seen.iter().filter(|r| r.path == path).cloned().collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn serve(mut stream: TcpStream, base: &str, seen: &Mutex<Vec<Request>>, route: &Route) {
    stream.set_nonblocking(false).unwrap();
    stream.set_read_timeout(Some(BOUND)).unwrap();
    let Some(request) = read_request(&mut stream) else {
        return;
    };
    seen.lock().unwrap().push(request.clone());
    let (status, headers, body) = route(&request, base);
    let body = body.to_string();
    let mut head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    let _ = stream.write_all(format!("{head}\r\n{body}").as_bytes());
    let _ = stream.shutdown(Shutdown::Both);
}

fn read_request(stream: &mut TcpStream) -> Option<Request> {
    let mut buffer = Vec::new();
    let mut chunk = [0; 4096];
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut chunk).ok().filter(|&n| n > 0)?;
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, path) = (first.next()?.to_owned(), first.next()?.to_owned());
    let headers: HashMap<String, String> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .map_or(0, |v| v.parse().unwrap());
    while buffer.len() < head_end + length {
        let n = stream.read(&mut chunk).ok().filter(|&n| n > 0)?;
        buffer.extend_from_slice(&chunk[..n]);
    }
    Some(Request {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&buffer[head_end..head_end + length]).into_owned(),
    })
}

fn json_reply(status: u16, body: Value) -> Reply {
    (status, Vec::new(), body)
}

/// The claims of a proof (the test checks its signature separately).
fn claims(proof: &str) -> Value {
    serde_json::from_slice(&base64url_decode(proof.split('.').nth(1).unwrap())).unwrap()
}

/// An authorization server whose token endpoint first answers `use_dpop_nonce` (with its
/// nonce) to a proof without it; with `always_refuse`, to every proof.
fn authorization_server(always_refuse: bool) -> Server {
    Server::start(move |request, base| match request.path.as_str() {
        "/.well-known/oauth-authorization-server" => json_reply(
            200,
            json!({
                "issuer": base,
                "authorization_endpoint": format!("{base}/authorize"),
                "token_endpoint": format!("{base}/token"),
                "dpop_signing_alg_values_supported": ["ES256"],
            }),
        ),
        "/token" => {
            let nonce = request.header("dpop").map(|p| claims(p)["nonce"].clone());
            if always_refuse || nonce != Some(json!(AS_NONCE)) {
                return (
                    400,
                    vec![("DPoP-Nonce".into(), AS_NONCE.into())],
                    json!({"error": "use_dpop_nonce"}),
                );
            }
            json_reply(
                200,
                json!({"access_token": TOKEN, "token_type": "DPoP", "expires_in": 3600}),
            )
        }
        _ => json_reply(404, json!({})),
    })
}

/// How an MCP server refuses a proof for want of its nonce: the challenge and the nonce.
type Refusal = Option<(String, String)>;

/// An MCP server whose authorization server is `issuer`: `initialize` needs no token; every
/// other request needs `DPoP <TOKEN>` and a proof `refuse` accepts (given the proof, it says
/// how to refuse it, or `None`).
fn mcp_server(issuer: String, refuse: impl Fn(&str) -> Refusal + Send + Sync + 'static) -> Server {
    mcp_server_with(issuer, refuse, || None)
}

/// The same, handing out `next_nonce()` (if any) with each answer it accepts.
fn mcp_server_with(
    issuer: String,
    refuse: impl Fn(&str) -> Refusal + Send + Sync + 'static,
    next_nonce: impl Fn() -> Option<String> + Send + Sync + 'static,
) -> Server {
    Server::start(move |request, base| {
        let path = request.path.as_str();
        if path == "/.well-known/oauth-protected-resource/mcp" {
            return json_reply(
                200,
                json!({"resource": format!("{base}/mcp"), "authorization_servers": [issuer]}),
            );
        }
        if (request.method.as_str(), path) != ("POST", "/mcp") {
            return json_reply(405, json!({}));
        }
        let message: Value = serde_json::from_str(&request.body).unwrap_or_default();
        if message.get("id").is_none() {
            return json_reply(202, json!({}));
        }
        let result = if message["method"] == "initialize" {
            json!({
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {},
                "serverInfo": {"name": "dpop", "version": "1"},
            })
        } else if request.header("authorization") != Some(&format!("DPoP {TOKEN}")) {
            let challenge = format!(
                "DPoP resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\""
            );
            return (401, vec![("WWW-Authenticate".into(), challenge)], json!({}));
        } else if let Some((challenge, nonce)) = refuse(request.header("dpop").unwrap_or_default())
        {
            return (
                401,
                vec![
                    ("WWW-Authenticate".into(), challenge),
                    ("DPoP-Nonce".into(), nonce),
                ],
                json!({"error": "use_dpop_nonce"}),
            );
        } else {
            json!({})
        };
        let headers = next_nonce()
            .map(|nonce| ("DPoP-Nonce".to_owned(), nonce))
            .into_iter()
            .collect();
        (
            200,
            headers,
            json!({"jsonrpc": "2.0", "id": message["id"], "result": result}),
        )
    })
}

/// Refuses a proof without the server's nonce.
fn wants_nonce(proof: &str) -> Refusal {
    match claims(proof)["nonce"] == RS_NONCE {
        true => None,
        false => use_nonce(),
    }
}

/// Refuses every proof.
fn always_wants_nonce(_proof: &str) -> Refusal {
    use_nonce()
}

fn use_nonce() -> Refusal {
    Some(("DPoP error=\"use_dpop_nonce\"".into(), RS_NONCE.into()))
}

// ---------------------------------------------------------------------------------------------
// The client side
// ---------------------------------------------------------------------------------------------

/// A fresh ECDSA P-256 key: its PKCS#8 PEM and its raw public key.
fn p256_key() -> (String, Vec<u8>) {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    (key.serialize_pem(), key.public_key_raw().to_vec())
}

/// A pre-registered machine client with DPoP on, with the host's key.
fn dpop_machine(pem: &str) -> OAuthConfig {
    OAuthConfig {
        client_id: Some("machine".into()),
        client_secret: Some("machine-secret".into()),
        grant_type: GrantType::ClientCredentials,
        dpop: Some(DpopKey::from_pem(pem).expect("a P-256 PKCS#8 key")),
        ..OAuthConfig::default()
    }
}

fn connected(server: &Server, oauth: OAuthConfig) -> Client {
    let mut config = HttpConfig::new(format!("{}/mcp", server.base));
    config.auth.oauth = Some(oauth);
    let options = ClientOptions {
        mode: ConnectMode::Legacy,
        ..ClientOptions::default()
    };
    let client = Client::http(config, options);
    client.connect().expect("initialize needs no token");
    client
}

/// A ping that must fail with UNAUTHORIZED within BOUND.
fn refused(client: &Client) -> mcpc::Error {
    let started = Instant::now();
    let error = client.ping(&RequestOptions::default()).unwrap_err();
    assert!(started.elapsed() < BOUND, "took {:?}", started.elapsed());
    assert_eq!(error.status, Status::Unauthorized, "{error}");
    error
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

fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    let (mut bits, mut count) = (0u32, 0);
    for &byte in bytes {
        bits = bits << 8 | u32::from(byte);
        count += 8;
        while count >= 6 {
            count -= 6;
            out.push(ALPHABET[(bits >> count & 63) as usize] as char);
        }
    }
    if count > 0 {
        out.push(ALPHABET[(bits << (6 - count) & 63) as usize] as char);
    }
    out
}

/// Checks one proof as a server would: the signature verifies with `public_key` (the key
/// named in its header, without any private part), it is for `method` `url`, issued now;
/// returns its claims.
#[track_caller]
fn checked_proof(proof: &str, public_key: &[u8], method: &str, url: &str) -> Value {
    let parts: Vec<&str> = proof.split('.').collect();
    assert_eq!(parts.len(), 3, "{proof}");
    ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, public_key)
        .verify(
            format!("{}.{}", parts[0], parts[1]).as_bytes(),
            &base64url_decode(parts[2]),
        )
        .expect("the proof verifies with the client's public key");
    let header: Value = serde_json::from_slice(&base64url_decode(parts[0])).unwrap();
    assert_eq!(
        header,
        json!({
            "typ": "dpop+jwt",
            "alg": "ES256",
            "jwk": {
                "kty": "EC",
                "crv": "P-256",
                "x": base64url(&public_key[1..33]),
                "y": base64url(&public_key[33..]),
            },
        })
    );
    let claims = claims(proof);
    assert_eq!(claims["htm"], method, "{claims}");
    assert_eq!(claims["htu"], url, "{claims}");
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(
        claims["iat"].as_u64().unwrap().abs_diff(now) < 60,
        "{claims}"
    );
    assert!(claims["jti"].as_str().is_some_and(|j| j.len() >= 16));
    claims
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

/// The whole exchange with two servers that each want their nonce: the token request is
/// made once more with the authorization server's nonce, the MCP request once more with the
/// MCP server's; every proof is signed with the host's key, names its request, is fresh
/// (no jti twice), carries a nonce only for the server that gave it, and at the MCP server
/// the hash of the token (`ath`) that goes as `DPoP <token>`.
#[test]
fn every_request_carries_a_fresh_proof_and_each_nonce_is_honoured_once() {
    let (pem, public_key) = p256_key();
    let auth = authorization_server(false);
    let mcp = mcp_server(auth.base.clone(), wants_nonce);
    let client = connected(&mcp, dpop_machine(&pem));
    client
        .ping(&RequestOptions::default())
        .expect("a DPoP-bound token");
    client
        .ping(&RequestOptions::default())
        .expect("the token again");

    let mut ids = Vec::new();
    let token_url = format!("{}/token", auth.base);
    let token_requests = auth.requests("/token");
    assert_eq!(token_requests.len(), 2, "one retry with the nonce");
    let nonces: Vec<Value> = token_requests
        .iter()
        .map(|request| {
            let proof = request
                .header("dpop")
                .expect("a proof at the token endpoint");
            let claims = checked_proof(proof, &public_key, "POST", &token_url);
            assert!(claims.get("ath").is_none(), "{claims}");
            ids.push(claims["jti"].clone());
            claims["nonce"].clone()
        })
        .collect();
    assert_eq!(nonces, [Value::Null, json!(AS_NONCE)]);

    let mcp_url = format!("{}/mcp", mcp.base);
    let with_token: Vec<Request> = mcp
        .requests("/mcp")
        .into_iter()
        .filter(|r| r.header("authorization").is_some())
        .collect();
    // The first ping: refused for the nonce, sent again with it; then the second ping.
    assert_eq!(with_token.len(), 3, "{with_token:?}");
    let ath = base64url(&Sha256::digest(TOKEN.as_bytes()));
    let mut nonces = Vec::new();
    // The POSTs and the GET of the standalone stream, each with its own method.
    for request in mcp.requests("/mcp") {
        let proof = request
            .header("dpop")
            .expect("a proof on every MCP request");
        let claims = checked_proof(proof, &public_key, &request.method, &mcp_url);
        ids.push(claims["jti"].clone());
        if request.header("authorization").is_some() {
            assert_eq!(
                request.header("authorization"),
                Some(&*format!("DPoP {TOKEN}"))
            );
            assert_eq!(claims["ath"], ath.as_str(), "{claims}");
            nonces.push(claims["nonce"].clone());
        }
        assert_ne!(claims["nonce"], AS_NONCE, "a nonce is only for its server");
    }
    assert_eq!(nonces, [Value::Null, json!(RS_NONCE), json!(RS_NONCE)]);
    let distinct: std::collections::HashSet<String> = ids.iter().map(|id| id.to_string()).collect();
    assert_eq!(distinct.len(), ids.len(), "a jti was used twice: {ids:?}");
}

/// A server that refuses the proof although it carries the nonce it asked for gets one
/// retry, not a loop: the token endpoint two requests, the MCP server two requests with the
/// token per call; each call then fails with UNAUTHORIZED.
#[test]
fn a_server_that_keeps_refusing_its_nonce_gets_one_retry() {
    let (pem, _) = p256_key();
    let stubborn_auth = authorization_server(true);
    let mcp = mcp_server(stubborn_auth.base.clone(), wants_nonce);
    let client = connected(&mcp, dpop_machine(&pem));
    refused(&client);
    assert_eq!(stubborn_auth.requests("/token").len(), 2);

    let auth = authorization_server(false);
    let stubborn_mcp = mcp_server(auth.base.clone(), always_wants_nonce);
    let client = connected(&stubborn_mcp, dpop_machine(&pem));
    let error = refused(&client);
    assert!(error.message.contains("nonce"), "{error}");
    let with_token = stubborn_mcp
        .requests("/mcp")
        .into_iter()
        .filter(|r| r.header("authorization").is_some())
        .count();
    assert_eq!(with_token, 2, "one retry with the nonce");
}

/// Two requests in flight when the server changes its nonce are both refused with the new
/// one; each is sent again with it (the second must not read the nonce the first's refusal
/// already stored as "the proof had it").
#[test]
fn concurrent_requests_refused_for_the_same_new_nonce_are_each_sent_again() {
    const NEXT: &str = "the-next-nonce";
    let (pem, _) = p256_key();
    let auth = authorization_server(false);
    // Armed: the next two proofs without NEXT wait for each other, then both are refused.
    let armed = Arc::new(Mutex::new((false, 0usize)));
    let gate = armed.clone();
    let mcp = mcp_server(auth.base.clone(), move |proof| {
        let nonce = claims(proof)["nonce"].clone();
        if !gate.lock().unwrap().0 {
            return wants_nonce(proof);
        }
        if nonce == NEXT {
            return None;
        }
        gate.lock().unwrap().1 += 1;
        let deadline = Instant::now() + BOUND;
        while gate.lock().unwrap().1 < 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        Some(("DPoP error=\"use_dpop_nonce\"".into(), NEXT.into()))
    });
    let client = Arc::new(connected(&mcp, dpop_machine(&pem)));
    client
        .ping(&RequestOptions::default())
        .expect("a token and the first nonce");
    armed.lock().unwrap().0 = true;
    let pings: Vec<_> = (0..2)
        .map(|_| {
            let client = client.clone();
            std::thread::spawn(move || client.ping(&RequestOptions::default()))
        })
        .collect();
    for ping in pings {
        ping.join().unwrap().expect("sent again with the new nonce");
    }
    assert_eq!(armed.lock().unwrap().1, 2, "both were refused once");
}

/// A server that hands out its next nonce with each accepted answer (RFC 9449 section 9) and
/// wants it in the next proof: the client uses it at once (the first comes with the answer
/// to `initialize`), so no request is refused.
#[test]
fn a_nonce_handed_out_with_an_answer_goes_into_the_next_proof() {
    let (pem, _) = p256_key();
    let auth = authorization_server(false);
    let current = Arc::new(Mutex::new((RS_NONCE.to_owned(), 0u32)));
    let (check, rotate) = (current.clone(), current.clone());
    let mcp = mcp_server_with(
        auth.base.clone(),
        move |proof| {
            let nonce = check.lock().unwrap().0.clone();
            match claims(proof)["nonce"] == nonce.as_str() {
                true => None,
                false => Some(("DPoP error=\"use_dpop_nonce\"".into(), nonce)),
            }
        },
        move || {
            let mut current = rotate.lock().unwrap();
            current.1 += 1;
            current.0 = format!("nonce-{}", current.1);
            Some(current.0.clone())
        },
    );
    let client = connected(&mcp, dpop_machine(&pem));
    for _ in 0..3 {
        client
            .ping(&RequestOptions::default())
            .expect("the nonce of the last answer");
    }
    let refusals = mcp
        .requests("/mcp")
        .iter()
        .filter(|r| r.header("authorization").is_some())
        .count()
        - 3;
    assert_eq!(refusals, 0, "a request lacked the nonce of the last answer");
}

/// A proof is a credential while it is fresh, the key always: a careless server that quotes
/// the proof it refused in its challenge (which goes into the error's data) never gets it
/// shown, nor any line of the key in the error or the configuration's Debug.
#[test]
fn no_proof_or_key_reaches_an_error_message() {
    let (pem, _) = p256_key();
    let auth = authorization_server(false);
    let last_proof = Arc::new(Mutex::new(String::new()));
    let seen = last_proof.clone();
    let mcp = mcp_server(auth.base.clone(), move |proof| {
        *seen.lock().unwrap() = proof.to_owned();
        let challenge = format!("DPoP error=\"use_dpop_nonce\", error_description=\"{proof}\"");
        Some((challenge, RS_NONCE.into()))
    });
    let config = dpop_machine(&pem);
    let shown_config = format!("{config:?}");
    let client = connected(&mcp, config);
    let error = refused(&client);
    let proof = last_proof.lock().unwrap().clone();
    assert!(!proof.is_empty(), "no proof was refused");
    let shown = format!("{error} {:?} {} {shown_config}", error.data, error.message);
    assert!(
        shown.contains("use_dpop_nonce"),
        "the challenge is in the data: {shown}"
    );
    assert!(!shown.contains(&proof), "the proof in {shown}");
    for line in pem.lines().filter(|line| !line.starts_with("-----")) {
        assert!(!shown.contains(line), "a line of the key in {shown}");
    }
}

/// A key that is not a P-256 key is refused when set, through the C API too; a generated
/// one is accepted.
#[test]
fn a_dpop_key_must_be_p256() {
    let rsa = rcgen::KeyPair::generate_for(&rcgen::PKCS_RSA_SHA256);
    if let Ok(rsa) = rsa {
        let error = DpopKey::from_pem(&rsa.serialize_pem()).unwrap_err();
        assert_eq!(error.status, Status::InvalidArgument, "{error}");
    }
    assert!(DpopKey::generate().is_ok());
    unsafe {
        use mcpc::ffi::*;
        let options = mcp_client_options_new();
        let bad = c"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        let status = mcp_client_options_set_oauth_dpop(options, true, bad.as_ptr());
        assert_eq!(status, mcp_status::InvalidArgument);
        let status = mcp_client_options_set_oauth_dpop(options, true, std::ptr::null());
        assert_eq!(status, mcp_status::Ok);
        let (pem, _) = p256_key();
        let good = std::ffi::CString::new(pem).unwrap();
        let status = mcp_client_options_set_oauth_dpop(options, true, good.as_ptr());
        assert_eq!(status, mcp_status::Ok);
        let status = mcp_client_options_set_oauth_dpop(options, false, std::ptr::null());
        assert_eq!(status, mcp_status::Ok);
        mcp_client_options_free(options);
    }
}
