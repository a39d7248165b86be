//! `--require-auth`: the HTTP server is an OAuth-protected MCP server and its own
//! authorization server, at one origin (issuer `http://127.0.0.1:PORT`):
//! - `/mcp` (with `--sse`: `/sse` and its endpoint) needs `Authorization: Bearer <token>`; without a valid one it answers 401 with
//!   `WWW-Authenticate: Bearer resource_metadata="...", scope="mcp:read"`; `tools/call` also
//!   needs `--auth-tools-scope` (403 `insufficient_scope` otherwise); a token serves
//!   `--auth-token-uses` requests, then is refused (401 `invalid_token`);
//! - `/.well-known/oauth-protected-resource/mcp` (`/sse` with `--sse`; RFC 9728), `/.well-known/oauth-authorization-server`
//!   (RFC 8414, with RFC 9207 `iss`), `/register` (RFC 7591: issues a client secret),
//!   `/authorize` (redirects at once with `code`, `state`, `iss`), `/token`
//!   (`authorization_code` with PKCE S256 checked, `refresh_token`, `client_credentials`;
//!   client_secret_basic); `--auth-client` registers a client in advance.
//!
//! `--auth-fault` makes it misbehave for the tests of the client's checks. Every request is
//! in the `--log` already (its path and body), which is how tests count authorizations.

use crate::args::Args;
use crate::http_wire::HttpRequest;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Mutex;

/// What the MCP endpoint asks for on a 401.
const BASE_SCOPE: &str = "mcp:read";

pub type Answer = (u16, Vec<(&'static str, String)>, Vec<u8>);

pub struct AuthServer {
    base: String,
    /// The MCP server's path: `/mcp`, or `/sse` with `--sse`.
    resource_path: &'static str,
    tools_scope: Option<String>,
    token_uses: Option<usize>,
    fault: Option<String>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    next: u64,
    /// client_id -> client_secret.
    clients: HashMap<String, String>,
    codes: HashMap<String, Grant>,
    /// access token -> (scopes, uses left).
    tokens: HashMap<String, (Vec<String>, Option<usize>)>,
    /// refresh token -> (client_id, scopes).
    refresh: HashMap<String, (String, Vec<String>)>,
}

struct Grant {
    client_id: String,
    challenge: String,
    redirect_uri: String,
    resource: String,
    scopes: Vec<String>,
}

impl AuthServer {
    pub fn new(args: &Args, port: u16) -> Option<AuthServer> {
        let mut state = State::default();
        if let Some((id, secret)) = &args.auth_client {
            state.clients.insert(id.clone(), secret.clone());
        }
        args.require_auth.then(|| AuthServer {
            base: format!("http://127.0.0.1:{port}"),
            resource_path: if args.sse { "/sse" } else { "/mcp" },
            tools_scope: args.auth_tools_scope.clone(),
            token_uses: args.auth_token_uses,
            fault: args.auth_fault.clone(),
            state: Mutex::new(state),
        })
    }

    fn fault(&self, name: &str) -> bool {
        self.fault.as_deref() == Some(name)
    }

    fn prm_path(&self) -> String {
        format!(
            "/.well-known/oauth-protected-resource{}",
            self.resource_path
        )
    }

    fn prm_url(&self) -> String {
        format!("{}{}", self.base, self.prm_path())
    }

    /// The protected resource: the MCP server's URL.
    fn resource(&self) -> String {
        format!("{}{}", self.base, self.resource_path)
    }

    /// The authorization server's endpoints; `None` for a path that is not one of them.
    pub fn handle(&self, request: &HttpRequest) -> Option<Answer> {
        let (path, query) = request
            .path
            .split_once('?')
            .unwrap_or((request.path.as_str(), ""));
        let answer = match (request.method.as_str(), path) {
            ("GET", path) if path == self.prm_path() => {
                let resource = match self.fault("resource") {
                    true => "https://evil.example.com/mcp".to_owned(),
                    false => self.resource(),
                };
                json_answer(
                    200,
                    json!({
                        "resource": resource,
                        "authorization_servers": [self.base],
                        "scopes_supported": [BASE_SCOPE, "mcp:write"],
                    }),
                )
            }
            ("GET", "/.well-known/oauth-authorization-server") => {
                let issuer = match self.fault("issuer") {
                    true => "https://attacker.example.com".to_owned(),
                    false => self.base.clone(),
                };
                json_answer(
                    200,
                    json!({
                        "issuer": issuer,
                        "authorization_endpoint": format!("{}/authorize", self.base),
                        "token_endpoint": format!("{}/token", self.base),
                        "registration_endpoint": format!("{}/register", self.base),
                        "response_types_supported": ["code"],
                        "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
                        "code_challenge_methods_supported": ["S256"],
                        "token_endpoint_auth_methods_supported": ["client_secret_basic"],
                        "authorization_response_iss_parameter_supported": true,
                    }),
                )
            }
            ("POST", "/register") => self.register(request),
            ("GET", "/authorize") => self.authorize(&params(query)),
            ("POST", "/token") => self.token(request),
            _ => return None,
        };
        Some(answer)
    }

    fn register(&self, request: &HttpRequest) -> Answer {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let mut state = self.state.lock().unwrap();
        state.next += 1;
        let (id, secret) = (
            format!("client-{}", state.next),
            format!("client-secret-{}", state.next),
        );
        state.clients.insert(id.clone(), secret.clone());
        json_answer(
            201,
            json!({
                "client_id": id,
                "client_secret": secret,
                "token_endpoint_auth_method": "client_secret_basic",
                "redirect_uris": body.get("redirect_uris").cloned().unwrap_or_default(),
            }),
        )
    }

    fn authorize(&self, query: &HashMap<String, String>) -> Answer {
        let get = |name: &str| query.get(name).cloned().unwrap_or_default();
        if get("code_challenge_method") != "S256" || get("response_type") != "code" {
            return json_answer(400, json!({"error": "invalid_request"}));
        }
        let mut state = self.state.lock().unwrap();
        if !state.clients.contains_key(&get("client_id")) {
            return json_answer(400, json!({"error": "unauthorized_client"}));
        }
        state.next += 1;
        let code = format!("code-{}-secretcode", state.next);
        state.codes.insert(
            code.clone(),
            Grant {
                client_id: get("client_id"),
                challenge: get("code_challenge"),
                redirect_uri: get("redirect_uri"),
                resource: get("resource"),
                scopes: get("scope").split_whitespace().map(str::to_owned).collect(),
            },
        );
        let iss = match self.fault("iss") {
            true => "https://evil.example.com".to_owned(),
            false => self.base.clone(),
        };
        let location = format!(
            "{}?code={}&state={}&iss={}",
            get("redirect_uri"),
            encode(&code),
            encode(&get("state")),
            encode(&iss)
        );
        (302, vec![("Location", location)], Vec::new())
    }

    fn token(&self, request: &HttpRequest) -> Answer {
        let form = params(&String::from_utf8_lossy(&request.body));
        let get = |name: &str| form.get(name).cloned().unwrap_or_default();
        if self.fault("echo-token-error") {
            // A careless server that echoes what it got (credentials included).
            let echo = format!(
                "{} {}",
                request.header("authorization").unwrap_or_default(),
                String::from_utf8_lossy(&request.body)
            );
            return json_answer(400, json!({"error": echo, "error_description": echo}));
        }
        let mut state = self.state.lock().unwrap();
        let Some(client_id) = basic_client(request, &state.clients) else {
            return json_answer(401, json!({"error": "invalid_client"}));
        };
        let scopes = match get("grant_type").as_str() {
            "authorization_code" => {
                let Some(grant) = state.codes.remove(&get("code")) else {
                    return json_answer(400, json!({"error": "invalid_grant"}));
                };
                let verified = base64url(&Sha256::digest(get("code_verifier").as_bytes()));
                if grant.client_id != client_id
                    || verified != grant.challenge
                    || grant.redirect_uri != get("redirect_uri")
                    || grant.resource != get("resource")
                    || grant.resource != self.resource()
                {
                    return json_answer(400, json!({"error": "invalid_grant"}));
                }
                grant.scopes
            }
            "refresh_token" => match state.refresh.remove(&get("refresh_token")) {
                Some((owner, scopes)) if owner == client_id => scopes,
                _ => return json_answer(400, json!({"error": "invalid_grant"})),
            },
            // No person and no code: the client's own credentials are the grant.
            "client_credentials" => match get("scope") {
                scope if scope.is_empty() => vec![BASE_SCOPE.to_owned()],
                scope => scope.split(' ').map(str::to_owned).collect(),
            },
            _ => return json_answer(400, json!({"error": "unsupported_grant_type"})),
        };
        state.next += 1;
        let access = format!("access-{}-secrettoken", state.next);
        let refresh = format!("refresh-{}-secretrefresh", state.next);
        state
            .tokens
            .insert(access.clone(), (scopes.clone(), self.token_uses));
        state
            .refresh
            .insert(refresh.clone(), (client_id, scopes.clone()));
        json_answer(
            200,
            json!({
                "access_token": access,
                "token_type": "Bearer",
                "expires_in": 3600,
                "refresh_token": refresh,
                "scope": scopes.join(" "),
            }),
        )
    }

    /// Whether a request to `/mcp` may pass; else the 401 or 403 to send.
    pub fn check_mcp(&self, request: &HttpRequest) -> Result<(), Answer> {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let is_tool_call = body.get("method").and_then(Value::as_str) == Some("tools/call");
        let token = request
            .header("authorization")
            .and_then(|value| value.strip_prefix("Bearer "))
            .unwrap_or_default();
        let mut state = self.state.lock().unwrap();
        let Some((scopes, uses_left)) = state.tokens.get_mut(token) else {
            return Err(self.refusal(401, None, BASE_SCOPE));
        };
        if *uses_left == Some(0) {
            return Err(self.refusal(401, Some("invalid_token"), BASE_SCOPE));
        }
        if let Some(uses_left) = uses_left {
            *uses_left -= 1;
        }
        if let (true, Some(needed)) = (is_tool_call, &self.tools_scope) {
            if !scopes.contains(needed) || self.fault("never-enough") {
                return Err(self.refusal(403, Some("insufficient_scope"), needed));
            }
        }
        Ok(())
    }

    fn refusal(&self, status: u16, error: Option<&str>, scope: &str) -> Answer {
        let error = error
            .map(|e| format!(", error=\"{e}\""))
            .unwrap_or_default();
        let challenge = format!(
            "Bearer resource_metadata=\"{}\", scope=\"{scope}\"{error}",
            self.prm_url()
        );
        let body = json!({"error": "unauthorized"}).to_string().into_bytes();
        (status, vec![("WWW-Authenticate", challenge)], body)
    }
}

fn json_answer(status: u16, body: Value) -> Answer {
    (status, Vec::new(), body.to_string().into_bytes())
}

/// The client of a `client_secret_basic` Authorization header, if its secret is right.
fn basic_client(request: &HttpRequest, clients: &HashMap<String, String>) -> Option<String> {
    let encoded = request.header("authorization")?.strip_prefix("Basic ")?;
    let decoded = String::from_utf8(crate::http::base64_decode(encoded)?).ok()?;
    let (id, secret) = decoded.split_once(':')?;
    let (id, secret) = (decode(id), decode(secret));
    (clients.get(&id) == Some(&secret)).then_some(id)
}

fn params(text: &str) -> HashMap<String, String> {
    text.split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(name), decode(value))
        })
        .collect()
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn decode(text: &str) -> String {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                match std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                {
                    Some(byte) => {
                        out.push(byte);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | (u32::from(b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}
