//! OAuth 2.1 against the test server's `--require-auth` mode (an MCP server that is also its
//! own authorization server): the whole flow, refresh, step-up, the retry limit, the checks
//! that refuse a hostile server (issuer, resource, `iss`), cancelling the person's step, the
//! header provider, token storage, and that no secret reaches an error message.

mod common;

use common::http_server::HttpServer;
use mcpc::auth::{AuthorizationRequest, GrantType, MemoryTokenStore, OAuthConfig, TokenStore};
use mcpc::{
    CancellationToken, Client, ClientOptions, ConnectMode, HttpTransportKind, RequestOptions,
    Status,
};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const REDIRECT_URI: &str = "http://127.0.0.1:9/callback";

/// What the person's step saw: each authorization URL.
#[derive(Default)]
struct Seen {
    urls: Mutex<Vec<String>>,
}

impl Seen {
    fn urls(&self) -> Vec<String> {
        self.urls.lock().unwrap().clone()
    }
}

/// The browser of the tests: GETs the authorization URL without following the redirect and
/// returns where it points (the test server redirects at once).
fn browse(url: &str) -> Result<String, String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .max_redirects(0)
        .http_status_as_error(false)
        .proxy(None)
        .build()
        .into();
    let response = agent.get(url).call().map_err(|e| e.to_string())?;
    response
        .headers()
        .get("location")
        .and_then(|l| l.to_str().ok())
        .map(str::to_owned)
        .ok_or_else(|| format!("no redirect (HTTP {})", response.status()))
}

fn oauth(seen: &Arc<Seen>) -> OAuthConfig {
    let seen = seen.clone();
    OAuthConfig {
        redirect_uri: Some(REDIRECT_URI.into()),
        authorize: Some(Arc::new(move |request: &AuthorizationRequest| {
            seen.urls
                .lock()
                .unwrap()
                .push(request.authorization_url.to_owned());
            browse(request.authorization_url)
        })),
        ..OAuthConfig::default()
    }
}

fn client(server: &HttpServer, oauth: OAuthConfig, mode: ConnectMode) -> Client {
    let mut config = server.config();
    config.auth.oauth = Some(oauth);
    let options = ClientOptions {
        mode,
        ..ClientOptions::default()
    };
    Client::http(config, options)
}

/// The paths of the requests the server received, in order.
fn paths(server: &HttpServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .map(|r| r["path"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn count(paths: &[String], prefix: &str) -> usize {
    paths.iter().filter(|p| p.starts_with(prefix)).count()
}

/// The token requests' grant types, in order.
fn grants(server: &HttpServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .filter(|r| r["path"] == "/token")
        .map(|r| {
            let body = r["body"].as_str().unwrap_or_default().to_owned();
            body.split('&')
                .find_map(|p| p.strip_prefix("grant_type="))
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

fn query_param(url: &str, name: &str) -> Option<String> {
    let query = url.split_once('?')?.1;
    query.split('&').find_map(|pair| {
        let (n, v) = pair.split_once('=')?;
        (n == name).then(|| {
            v.replace("%3A", ":")
                .replace("%20", " ")
                .replace("%2F", "/")
        })
    })
}

#[test]
fn the_flow_registers_authorizes_and_sends_the_token_on_every_request() {
    for mode in [ConnectMode::Legacy, ConnectMode::Auto] {
        let server = HttpServer::start(&format!("oauth_happy_{mode:?}"), &["--require-auth"]);
        let seen = Arc::new(Seen::default());
        let client = client(&server, oauth(&seen), mode);
        client.connect().expect("connect through the OAuth flow");
        let result = client
            .call_tool(
                "echo",
                Some(json!({"text": "hi"})),
                &RequestOptions::default(),
            )
            .expect("a call with the token");
        assert_eq!(common::text(&result), "hi");

        let urls = seen.urls();
        assert_eq!(urls.len(), 1, "one authorization: {urls:?}");
        let url = &urls[0];
        assert!(
            url.starts_with(&server.url.replace("/mcp", "/authorize?")),
            "{url}"
        );
        assert_eq!(
            query_param(url, "code_challenge_method").as_deref(),
            Some("S256")
        );
        assert_eq!(
            query_param(url, "resource").as_deref(),
            Some(server.url.as_str())
        );
        assert_eq!(query_param(url, "scope").as_deref(), Some("mcp:read"));
        assert_eq!(query_param(url, "response_type").as_deref(), Some("code"));
        assert!(query_param(url, "state").is_some_and(|s| s.len() >= 16));

        let paths = paths(&server);
        assert_eq!(count(&paths, "/register"), 1, "{paths:?}");
        assert_eq!(count(&paths, "/authorize"), 1, "{paths:?}");
        assert_eq!(grants(&server), ["authorization_code"]);
        // After the first refusal, every MCP request carried the bearer token.
        let requests = server.requests();
        let mcp: Vec<&Value> = requests.iter().filter(|r| r["path"] == "/mcp").collect();
        let first_refused = mcp[0].clone();
        assert!(first_refused["headers"].get("authorization").is_none());
        for request in &mcp[1..] {
            let auth = request["headers"]["authorization"]
                .as_str()
                .unwrap_or_default();
            assert!(auth.starts_with("Bearer access-"), "{request}");
        }
    }
}

#[test]
fn an_expired_token_is_refreshed_without_a_new_authorization() {
    let server = HttpServer::start(
        "oauth_refresh",
        &["--require-auth", "--auth-token-uses", "2"],
    );
    let seen = Arc::new(Seen::default());
    let client = client(&server, oauth(&seen), ConnectMode::Legacy);
    client.connect().unwrap();
    for i in 0..5 {
        client
            .call_tool(
                "echo",
                Some(json!({"text": format!("{i}")})),
                &RequestOptions::default(),
            )
            .unwrap_or_else(|e| panic!("call {i}: {e}"));
    }
    assert_eq!(seen.urls().len(), 1, "refresh, not a new authorization");
    let grants = grants(&server);
    assert_eq!(grants[0], "authorization_code");
    assert!(grants.len() >= 3, "{grants:?}");
    assert!(
        grants[1..].iter().all(|g| g == "refresh_token"),
        "{grants:?}"
    );
}

#[test]
fn a_403_insufficient_scope_reauthorizes_with_the_union_of_scopes() {
    let server = HttpServer::start(
        "oauth_step_up",
        &["--require-auth", "--auth-tools-scope", "mcp:write"],
    );
    let seen = Arc::new(Seen::default());
    let client = client(&server, oauth(&seen), ConnectMode::Legacy);
    client.connect().unwrap();
    client.tools(&RequestOptions::default()).unwrap();
    client
        .call_tool(
            "echo",
            Some(json!({"text": "x"})),
            &RequestOptions::default(),
        )
        .expect("the call after step-up");
    let urls = seen.urls();
    assert_eq!(urls.len(), 2, "{urls:?}");
    assert_eq!(query_param(&urls[0], "scope").as_deref(), Some("mcp:read"));
    assert_eq!(
        query_param(&urls[1], "scope").as_deref(),
        Some("mcp:read mcp:write")
    );
}

#[test]
fn a_scope_that_never_suffices_ends_in_unauthorized_after_the_retry_limit() {
    let server = HttpServer::start(
        "oauth_retry_limit",
        &[
            "--require-auth",
            "--auth-tools-scope",
            "mcp:write",
            "--auth-fault",
            "never-enough",
        ],
    );
    let seen = Arc::new(Seen::default());
    let client = client(&server, oauth(&seen), ConnectMode::Legacy);
    client.connect().unwrap();
    let before = seen.urls().len();
    let error = client
        .call_tool(
            "echo",
            Some(json!({"text": "x"})),
            &RequestOptions::default(),
        )
        .unwrap_err();
    assert_eq!(error.status, Status::Unauthorized, "{error}");
    let data = error.data.clone().expect("the challenge");
    assert_eq!(data["httpStatus"], 403);
    assert_eq!(data["error"], "insufficient_scope");
    assert_eq!(data["scope"], "mcp:write");
    let authorizations = seen.urls().len() - before;
    assert_eq!(authorizations, 3, "the default limit");
    // The client still works for what its token allows.
    client.tools(&RequestOptions::default()).unwrap();
}

/// A flow that must stop before the person's step: no registration, no authorization.
fn refused_before_authorizing(name: &str, fault: &str, expect: &str) {
    let server = HttpServer::start(name, &["--require-auth", "--auth-fault", fault]);
    let seen = Arc::new(Seen::default());
    let client = client(&server, oauth(&seen), ConnectMode::Legacy);
    let error = client.connect().unwrap_err();
    assert_eq!(error.status, Status::Unauthorized, "{error}");
    assert!(error.message.contains(expect), "{error}");
    assert_eq!(error.data.as_ref().unwrap()["httpStatus"], 401);
    assert!(seen.urls().is_empty());
    let paths = paths(&server);
    assert_eq!(count(&paths, "/register"), 0, "{paths:?}");
    assert_eq!(count(&paths, "/token"), 0, "{paths:?}");
}

#[test]
fn metadata_naming_another_issuer_is_refused() {
    refused_before_authorizing("oauth_issuer", "issuer", "names another issuer");
}

#[test]
fn resource_metadata_for_another_server_is_refused() {
    refused_before_authorizing("oauth_resource", "resource", "another resource");
}

#[test]
fn a_redirect_from_another_issuer_is_refused_before_the_token_request() {
    let server = HttpServer::start("oauth_iss", &["--require-auth", "--auth-fault", "iss"]);
    let seen = Arc::new(Seen::default());
    let client = client(&server, oauth(&seen), ConnectMode::Legacy);
    let error = client.connect().unwrap_err();
    assert_eq!(error.status, Status::Unauthorized, "{error}");
    assert!(error.message.contains("iss does not match"), "{error}");
    assert_eq!(seen.urls().len(), 1);
    assert_eq!(count(&paths(&server), "/token"), 0);
}

#[test]
fn cancelling_the_call_cancels_the_persons_step() {
    let server = HttpServer::start(
        "oauth_cancel",
        &["--require-auth", "--auth-tools-scope", "mcp:write"],
    );
    let (started_tx, started) = mpsc::channel::<()>();
    let (ended_tx, ended) = mpsc::channel::<bool>();
    let (started_tx, ended_tx) = (Mutex::new(started_tx), Mutex::new(ended_tx));
    let calls = Arc::new(AtomicUsize::new(0));
    let config = OAuthConfig {
        redirect_uri: Some(REDIRECT_URI.into()),
        authorize: Some(Arc::new({
            let calls = calls.clone();
            move |request: &AuthorizationRequest| {
                if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                    return browse(request.authorization_url);
                }
                // The step-up: a person who never comes back. Wait for the cancel (bounded).
                started_tx.lock().unwrap().send(()).unwrap();
                let deadline = Instant::now() + Duration::from_secs(20);
                while !request.cancellation.is_cancelled() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(2));
                }
                let _ = ended_tx
                    .lock()
                    .unwrap()
                    .send(request.cancellation.is_cancelled());
                Err("gave up".into())
            }
        })),
        ..OAuthConfig::default()
    };
    let client = Arc::new(client(&server, config, ConnectMode::Legacy));
    client.connect().unwrap();
    let token = CancellationToken::new();
    let call = std::thread::spawn({
        let (client, token) = (client.clone(), token.clone());
        move || {
            client.call_tool(
                "echo",
                Some(json!({"text": "x"})),
                &RequestOptions::with_cancellation(&token),
            )
        }
    });
    started
        .recv_timeout(Duration::from_secs(20))
        .expect("the step-up reached the person");
    let cancelled_at = Instant::now();
    token.cancel(Some("user closed the dialog"));
    let error = call.join().unwrap().unwrap_err();
    assert_eq!(error.status, Status::Cancelled, "{error}");
    assert!(cancelled_at.elapsed() < Duration::from_secs(5));
    assert!(
        ended.recv_timeout(Duration::from_secs(20)).unwrap(),
        "the callback saw the cancel"
    );
    // The client goes on; the barrier also shows nothing was left waiting.
    client.tools(&RequestOptions::default()).unwrap();
}

#[test]
fn no_secret_reaches_an_error_message() {
    let server = HttpServer::start(
        "oauth_secrets",
        &["--require-auth", "--auth-fault", "echo-token-error"],
    );
    let seen = Arc::new(Seen::default());
    let client = client(&server, oauth(&seen), ConnectMode::Legacy);
    let error = client.connect().unwrap_err();
    assert_eq!(error.status, Status::Unauthorized, "{error}");
    assert!(error.message.contains("token endpoint"), "{error}");
    let shown = format!("{error} {:?} {}", error.data, error.message);
    // The server's secrets (client secret, code) all carry "secret"; the verifier and the
    // Basic credentials are in the echoed body and header.
    let requests = server.requests();
    let token_request = requests.iter().find(|r| r["path"] == "/token").unwrap();
    let body = token_request["body"].as_str().unwrap();
    let verifier = body
        .split('&')
        .find_map(|p| p.strip_prefix("code_verifier="))
        .unwrap();
    let basic = token_request["headers"]["authorization"].as_str().unwrap();
    for secret in ["secret", verifier, basic.trim_start_matches("Basic ")] {
        assert!(!shown.contains(secret), "{secret:?} in {shown}");
    }
}

#[test]
fn a_person_slower_than_the_probe_timeout_still_gets_one_authorization() {
    let server = HttpServer::start("oauth_slow_person", &["--require-auth", "--modern"]);
    let seen = Arc::new(Seen::default());
    let mut config = oauth(&seen);
    let browse_now = config.authorize.take().unwrap();
    config.authorize = Some(Arc::new(move |request: &AuthorizationRequest| {
        std::thread::sleep(Duration::from_millis(600));
        browse_now(request)
    }));
    let mut http = server.config();
    http.auth.oauth = Some(config);
    let options = ClientOptions {
        discover_timeout: Duration::from_millis(200),
        ..ClientOptions::default()
    };
    let client = Client::http(http, options);
    let discovered = client.connect().expect("auto mode through a slow person");
    assert!(
        discovered.get("supportedVersions").is_some(),
        "{discovered}"
    );
    assert_eq!(seen.urls().len(), 1);
    assert_eq!(count(&paths(&server), "/authorize"), 1);
}

#[test]
fn without_oauth_a_401_is_unauthorized_with_the_challenge_not_a_transport_error() {
    let server = HttpServer::start("oauth_plain_401", &["--require-auth"]);
    for mode in [ConnectMode::Auto, ConnectMode::Modern, ConnectMode::Legacy] {
        let error = server.client(mode).connect().unwrap_err();
        assert_eq!(error.status, Status::Unauthorized, "{mode:?}: {error}");
    }
    // The auto mode did not fall back to initialize after the probe's 401.
    let posts = common::http_server::posts_of(&server.requests(), "initialize").len();
    assert_eq!(posts, 1, "only the legacy connect sent initialize");
    let error = server.client(ConnectMode::Legacy).connect().unwrap_err();
    let data = error.data.unwrap();
    assert_eq!(data["httpStatus"], 401);
    assert_eq!(data["scope"], "mcp:read");
    assert_eq!(
        data["resourceMetadata"],
        server
            .url
            .replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
    );
}

#[test]
fn the_header_provider_is_asked_before_every_request() {
    let server = HttpServer::start("oauth_header_provider", &["--require-auth"]);
    let asked = Arc::new(AtomicUsize::new(0));
    let mut config = server.config();
    config.auth.header_provider = Some(Arc::new({
        let asked = asked.clone();
        move |url: &str| {
            assert!(url.ends_with("/mcp"));
            let n = asked.fetch_add(1, Ordering::SeqCst);
            Ok(vec![(
                "Authorization".into(),
                format!("Bearer rotating-{n}-hp"),
            )])
        }
    }));
    let client = Client::http(
        config,
        ClientOptions {
            mode: ConnectMode::Legacy,
            ..ClientOptions::default()
        },
    );
    for _ in 0..2 {
        let error = client.connect().unwrap_err();
        assert_eq!(error.status, Status::Unauthorized, "{error}");
        assert!(!error.to_string().contains("-hp"), "{error}");
    }
    let sent: Vec<String> = server
        .requests()
        .iter()
        .filter(|r| r["path"] == "/mcp")
        .map(|r| r["headers"]["authorization"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(sent, ["Bearer rotating-0-hp", "Bearer rotating-1-hp"]);

    // A provider that fails ends the call before anything is sent.
    let mut config = server.config();
    config.auth.header_provider = Some(Arc::new(|_: &str| Err("no token yet".into())));
    let error = Client::http(config, ClientOptions::default())
        .connect()
        .unwrap_err();
    assert_eq!(error.status, Status::Unauthorized, "{error}");
    assert!(error.message.contains("no token yet"), "{error}");
}

#[test]
fn a_second_client_uses_the_stored_tokens_without_authorizing() {
    let server = HttpServer::start("oauth_store", &["--require-auth"]);
    let store: Arc<dyn TokenStore> = Arc::new(MemoryTokenStore::default());
    let seen = Arc::new(Seen::default());
    for _ in 0..2 {
        let config = OAuthConfig {
            token_store: store.clone(),
            ..oauth(&seen)
        };
        let client = client(&server, config, ConnectMode::Legacy);
        client.connect().unwrap();
        client.tools(&RequestOptions::default()).unwrap();
    }
    assert_eq!(
        seen.urls().len(),
        1,
        "the second client used the stored token"
    );
    let key = mcpc::auth::TokenKey {
        server_url: server.url.clone(),
        issuer: server.url.trim_end_matches("/mcp").to_owned(),
    };
    let stored = store.load(&key).expect("saved under server URL and issuer");
    assert!(stored["access_token"]
        .as_str()
        .unwrap()
        .starts_with("access-"));
    assert_eq!(
        stored["client"]["token_endpoint_auth_method"],
        "client_secret_basic"
    );
}

/// The C API: the authorize callback answers through `mcp_auth_reply`, the token store is the
/// host's two callbacks, and a second client made from the same options finds the tokens.
mod c_api {
    use super::*;
    use mcpc::ffi::*;
    use std::ffi::{c_char, c_void, CStr, CString};

    #[derive(Default)]
    struct Host {
        authorizations: AtomicUsize,
        saved: Mutex<Option<(String, String, String)>>,
        loads: AtomicUsize,
    }

    unsafe extern "C" fn authorize(
        userdata: *mut c_void,
        url: *const c_char,
        redirect_uri: *const c_char,
        reply: *mut mcp_auth_reply,
    ) -> bool {
        let host = &*(userdata as *const Host);
        host.authorizations.fetch_add(1, Ordering::SeqCst);
        assert_eq!(CStr::from_ptr(redirect_uri).to_str().unwrap(), REDIRECT_URI);
        assert!(!mcp_auth_reply_is_cancelled(reply));
        // NULL is refused without harm.
        assert!(!mcp_auth_reply_set_redirect_url(reply, std::ptr::null()));
        match browse(CStr::from_ptr(url).to_str().unwrap()) {
            Ok(location) => {
                let location = CString::new(location).unwrap();
                mcp_auth_reply_set_redirect_url(reply, location.as_ptr())
            }
            Err(_) => {
                mcp_auth_reply_set_error(reply, c"no redirect".as_ptr());
                false
            }
        }
    }

    unsafe extern "C" fn load(
        userdata: *mut c_void,
        server_url: *const c_char,
        issuer: *const c_char,
        slot: *mut mcp_token_slot,
    ) -> bool {
        let host = &*(userdata as *const Host);
        host.loads.fetch_add(1, Ordering::SeqCst);
        let (server_url, issuer) = (
            CStr::from_ptr(server_url).to_str().unwrap(),
            CStr::from_ptr(issuer).to_str().unwrap(),
        );
        assert!(!mcp_token_slot_set(slot, std::ptr::null()));
        assert!(!mcp_token_slot_set(slot, c"[1]".as_ptr()), "not an object");
        match &*host.saved.lock().unwrap() {
            Some((url, iss, json)) if url == server_url && iss == issuer => {
                let json = CString::new(json.as_str()).unwrap();
                mcp_token_slot_set(slot, json.as_ptr())
            }
            _ => false,
        }
    }

    unsafe extern "C" fn save(
        userdata: *mut c_void,
        server_url: *const c_char,
        issuer: *const c_char,
        tokens_json: *const c_char,
    ) {
        let host = &*(userdata as *const Host);
        let text = |p: *const c_char| CStr::from_ptr(p).to_str().unwrap().to_owned();
        *host.saved.lock().unwrap() = Some((text(server_url), text(issuer), text(tokens_json)));
    }

    #[test]
    fn the_flow_through_the_c_api_with_a_host_token_store() {
        let server = HttpServer::start("oauth_c_api", &["--require-auth"]);
        let host = Box::new(Host::default());
        let userdata = &*host as *const Host as *mut c_void;
        unsafe {
            let options = mcp_client_options_new();
            let redirect = CString::new(REDIRECT_URI).unwrap();
            assert_eq!(
                mcp_client_options_set_oauth_redirect_uri(options, redirect.as_ptr()),
                mcp_status::Ok
            );
            assert_eq!(
                mcp_client_options_set_oauth_registration(
                    options,
                    c"c-host".as_ptr(),
                    c"native".as_ptr()
                ),
                mcp_status::Ok
            );
            assert_eq!(
                mcp_client_options_set_oauth_authorize_callback(options, Some(authorize), userdata),
                mcp_status::Ok
            );
            assert_eq!(
                mcp_client_options_set_oauth_token_store(options, Some(load), Some(save), userdata),
                mcp_status::Ok
            );
            mcp_client_options_set_mode(options, mcp_connect_mode::Legacy as i32);
            let url = CString::new(server.url.as_str()).unwrap();
            for _ in 0..2 {
                let client = mcp_client_new_http(url.as_ptr(), options);
                let (status, message) = common::take_result(mcp_client_connect(client));
                assert_eq!(status, mcp_status::Ok, "{message}");
                let (status, message) = common::take_result(mcp_client_list_tools(
                    client,
                    std::ptr::null(),
                    std::ptr::null(),
                ));
                assert_eq!(status, mcp_status::Ok, "{message}");
                mcp_client_free(client);
            }
            mcp_client_options_free(options);
        }
        assert_eq!(host.authorizations.load(Ordering::SeqCst), 1);
        assert!(host.loads.load(Ordering::SeqCst) >= 2);
        let saved = host.saved.lock().unwrap().clone().unwrap();
        assert_eq!(saved.0, server.url);
        assert_eq!(saved.1, server.url.trim_end_matches("/mcp"));
        let registrations = server
            .requests()
            .iter()
            .filter(|r| r["path"] == "/register")
            .map(|r| r["body"]["client_name"].clone())
            .collect::<Vec<_>>();
        assert_eq!(registrations, [json!("c-host")]);
    }

    unsafe extern "C" fn provider(
        _userdata: *mut c_void,
        _url: *const c_char,
        headers: *mut mcp_header_list,
    ) -> bool {
        let bad = mcp_status::InvalidArgument;
        assert_eq!(
            mcp_header_list_add(headers, std::ptr::null(), c"v".as_ptr()),
            bad
        );
        assert_eq!(
            mcp_header_list_add(headers, c"X-A".as_ptr(), std::ptr::null()),
            bad
        );
        mcp_header_list_add(
            headers,
            c"Authorization".as_ptr(),
            c"Bearer from-c-host".as_ptr(),
        ) == mcp_status::Ok
    }

    #[test]
    fn the_header_provider_through_the_c_api_and_the_unauthorized_status() {
        let server = HttpServer::start("oauth_c_provider", &["--require-auth"]);
        unsafe {
            let options = mcp_client_options_new();
            assert_eq!(
                mcp_client_options_set_header_provider(
                    options,
                    Some(provider),
                    std::ptr::null_mut()
                ),
                mcp_status::Ok
            );
            mcp_client_options_set_mode(options, mcp_connect_mode::Legacy as i32);
            let url = CString::new(server.url.as_str()).unwrap();
            let client = mcp_client_new_http(url.as_ptr(), options);
            let result = mcp_client_connect(client);
            assert_eq!(mcp_result_status(result), mcp_status::Unauthorized);
            let data = CStr::from_ptr(mcp_result_error_data(result))
                .to_str()
                .unwrap();
            let data: Value = serde_json::from_str(data).unwrap();
            assert_eq!(data["httpStatus"], 401);
            let name = CStr::from_ptr(mcp_status_name(mcp_status::Unauthorized as i32));
            assert_eq!(name.to_str().unwrap(), "UNAUTHORIZED");
            mcp_result_free(result);
            mcp_client_free(client);
            mcp_client_options_free(options);
        }
        let requests = server.requests();
        assert_eq!(
            requests[0]["headers"]["authorization"],
            json!("Bearer from-c-host")
        );
    }
}

#[test]
fn concurrent_calls_share_one_step_up() {
    let server = HttpServer::start(
        "oauth_concurrent",
        &["--require-auth", "--auth-tools-scope", "mcp:write"],
    );
    let seen = Arc::new(Seen::default());
    let client = Arc::new(client(&server, oauth(&seen), ConnectMode::Legacy));
    client.connect().unwrap();
    let callers: Vec<_> = (0..6)
        .map(|i| {
            let client = client.clone();
            std::thread::spawn(move || {
                client.call_tool(
                    "echo",
                    Some(json!({"text": format!("{i}")})),
                    &RequestOptions::default(),
                )
            })
        })
        .collect();
    for caller in callers {
        caller
            .join()
            .unwrap()
            .expect("every call after the shared step-up");
    }
    assert_eq!(
        seen.urls().len(),
        2,
        "the first authorization and one step-up"
    );
}

#[test]
fn the_calls_timeout_ends_the_persons_step() {
    let server = HttpServer::start("oauth_timeout", &["--require-auth"]);
    let (ended_tx, ended) = mpsc::channel::<bool>();
    let ended_tx = Mutex::new(ended_tx);
    let config = OAuthConfig {
        redirect_uri: Some(REDIRECT_URI.into()),
        authorize: Some(Arc::new(move |request: &AuthorizationRequest| {
            let deadline = Instant::now() + Duration::from_secs(20);
            while !request.cancellation.is_cancelled() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(2));
            }
            let _ = ended_tx
                .lock()
                .unwrap()
                .send(request.cancellation.is_cancelled());
            Err("gave up".into())
        })),
        ..OAuthConfig::default()
    };
    let mut http = server.config();
    http.auth.oauth = Some(config);
    let options = ClientOptions {
        mode: ConnectMode::Legacy,
        connect_timeout: Duration::from_millis(300),
        ..ClientOptions::default()
    };
    let started = Instant::now();
    let error = Client::http(http, options).connect().unwrap_err();
    assert_eq!(error.status, Status::Timeout, "{error}");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        ended.recv_timeout(Duration::from_secs(20)).unwrap(),
        "the step saw the end"
    );
}

#[test]
fn a_client_bound_to_another_issuer_is_not_presented() {
    let server = HttpServer::start("oauth_client_issuer", &["--require-auth"]);
    let seen = Arc::new(Seen::default());
    let config = OAuthConfig {
        client_id: Some("pre-registered-elsewhere".into()),
        client_secret: Some("elsewhere-secret".into()),
        client_issuer: Some("https://old-as.example".into()),
        ..oauth(&seen)
    };
    let client = client(&server, config, ConnectMode::Legacy);
    client
        .connect()
        .expect("registered with this issuer instead");
    let requests = server.requests();
    assert_eq!(
        requests.iter().filter(|r| r["path"] == "/register").count(),
        1
    );
    let shown = serde_json::to_string(&requests).unwrap();
    assert!(!shown.contains("pre-registered-elsewhere"));
    assert!(!shown.contains("elsewhere-secret"));
}

#[test]
fn an_expired_stored_token_is_refreshed_before_it_is_sent() {
    let server = HttpServer::start("oauth_expired_store", &["--require-auth"]);
    let store: Arc<dyn TokenStore> = Arc::new(MemoryTokenStore::default());
    let seen = Arc::new(Seen::default());
    let first = client(
        &server,
        OAuthConfig {
            token_store: store.clone(),
            ..oauth(&seen)
        },
        ConnectMode::Legacy,
    );
    first.connect().unwrap();
    drop(first);
    // The stored token expired since (as a host's store would find it the next day).
    let key = mcpc::auth::TokenKey {
        server_url: server.url.clone(),
        issuer: server.url.trim_end_matches("/mcp").to_owned(),
    };
    let mut stored = store.load(&key).unwrap();
    stored["expires_at"] = json!(1);
    store.save(&key, Some(&stored));
    let old_token = stored["access_token"].as_str().unwrap().to_owned();

    let second = client(
        &server,
        OAuthConfig {
            token_store: store.clone(),
            ..oauth(&seen)
        },
        ConnectMode::Legacy,
    );
    second.connect().unwrap();
    assert_eq!(seen.urls().len(), 1, "refreshed, not authorized again");
    assert_eq!(grants(&server), ["authorization_code", "refresh_token"]);
    // Nothing after the refresh carried the expired token.
    let requests = server.requests();
    let refreshed_at = requests
        .iter()
        .rposition(|r| r["path"] == "/token")
        .unwrap();
    let old = json!(format!("Bearer {old_token}"));
    assert!(requests[refreshed_at..]
        .iter()
        .all(|r| r["headers"]["authorization"] != old));
}

#[test]
fn the_client_credentials_grant_needs_no_person_and_a_wrong_secret_is_unauthorized() {
    let flags = ["--require-auth", "--auth-client", "machine:s3cret-machine"];
    let server = HttpServer::start("oauth_client_credentials", &flags);
    let machine = |secret: &str| OAuthConfig {
        client_id: Some("machine".into()),
        client_secret: Some(secret.into()),
        grant_type: GrantType::ClientCredentials,
        ..OAuthConfig::default()
    };
    let machine_client = client(&server, machine("s3cret-machine"), ConnectMode::Auto);
    machine_client
        .connect()
        .expect("connect with the client's own credentials");
    let result = machine_client
        .call_tool(
            "echo",
            Some(json!({"text": "m2m"})),
            &RequestOptions::default(),
        )
        .expect("a call with the token");
    assert_eq!(common::text(&result), "m2m");
    assert_eq!(grants(&server), ["client_credentials"]);
    let paths = paths(&server);
    assert_eq!(
        count(&paths, "/register"),
        0,
        "a pre-registered client: {paths:?}"
    );
    assert_eq!(count(&paths, "/authorize"), 0, "no person: {paths:?}");

    let server = HttpServer::start("oauth_client_credentials_wrong", &flags);
    let refused = client(&server, machine("not-the-secret"), ConnectMode::Legacy);
    let e = refused.connect().unwrap_err();
    assert_eq!(e.status, Status::Unauthorized, "{e:?}");
    assert!(!e.message.contains("not-the-secret"), "{}", e.message);
}

/// The HTTP+SSE transport runs the same flow, started by the 401 to whichever request comes
/// first: found by itself, the `initialize` POSTed to the URL (refused with 405 once
/// authorized); pinned, the stream's GET. The token then goes on the GET and on every POST to
/// the endpoint.
#[test]
fn the_flow_runs_over_the_http_sse_transport_too() {
    let server = HttpServer::start("oauth_sse", &["--require-auth", "--sse"]);
    for kind in [HttpTransportKind::Auto, HttpTransportKind::LegacySse] {
        let seen = Arc::new(Seen::default());
        let mut config = server.config();
        config.transport = kind;
        config.auth.oauth = Some(oauth(&seen));
        let client = Client::http(config, ClientOptions::default());
        client.connect().expect("connect over HTTP+SSE with OAuth");
        let echo = client
            .call_tool(
                "echo",
                Some(json!({"text": "authorized"})),
                &RequestOptions::default(),
            )
            .unwrap();
        assert_eq!(echo["content"][0]["text"], "authorized");
        assert_eq!(seen.urls().len(), 1, "{kind:?}: one authorization");
        client.close();
    }
    let requests = server.requests();
    let first = requests.first().unwrap();
    let refused_get = requests
        .iter()
        .filter(|r| r["method"] == "GET" && r["path"] == "/sse")
        .any(|r| r["headers"]["authorization"].is_null());
    assert!(refused_get, "pinned, no GET went out without a token first");
    assert_eq!(
        first["method"], "POST",
        "found by itself, a POST came first"
    );
    let mcp: Vec<&Value> = requests
        .iter()
        .filter(|r| {
            let path = r["path"].as_str().unwrap_or_default();
            path.starts_with("/messages?") || (path == "/sse" && r["method"] == "GET")
        })
        .collect();
    let authorized = |r: &&Value| {
        r["headers"]["authorization"]
            .as_str()
            .is_some_and(|a| a.starts_with("Bearer "))
    };
    assert!(mcp.iter().filter(|r| r["method"] == "GET").any(authorized));
    let posts: Vec<_> = mcp.iter().filter(|r| r["method"] == "POST").collect();
    assert!(
        posts.len() >= 6,
        "initialize, initialized, tools/call, twice: {posts:?}"
    );
    assert!(posts.iter().all(|r| authorized(r)), "{posts:?}");
}
