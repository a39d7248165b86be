//! The loopback redirect helper (RFC 8252) end to end, against the test server's
//! `--require-auth` mode (an MCP server that is its own authorization server): the client
//! registers the listener's URL as its redirect URI; the person's step "opens the browser" by
//! GETting the authorization URL and following its redirect to the listener, which answers the
//! browser and hands the URL to the flow. Through the Rust API and the C API, and cancelled
//! while the listener waits.

mod common;

use common::http_server::HttpServer;
use mcpc::auth::{AuthorizationRequest, LoopbackRedirect, OAuthConfig};
use mcpc::{CancellationToken, Client, ClientOptions, ConnectMode, RequestOptions, Status};
use serde_json::json;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The browser: GETs `url`, follows one redirect (to the loopback listener), and returns the
/// status and body of the page the listener showed.
fn browser(url: &str) -> Result<(u16, String), String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .max_redirects(0)
        .http_status_as_error(false)
        .proxy(None)
        .build()
        .into();
    let response = agent.get(url).call().map_err(|e| e.to_string())?;
    let location = response
        .headers()
        .get("location")
        .and_then(|l| l.to_str().ok())
        .map(str::to_owned)
        .ok_or_else(|| format!("no redirect (HTTP {})", response.status()))?;
    let mut page = agent.get(&location).call().map_err(|e| e.to_string())?;
    let status = page.status().as_u16();
    let body = page
        .body_mut()
        .read_to_string()
        .map_err(|e| e.to_string())?;
    Ok((status, body))
}

fn http_client(server: &HttpServer, oauth: OAuthConfig) -> Client {
    let mut config = server.config();
    config.auth.oauth = Some(oauth);
    let options = ClientOptions {
        mode: ConnectMode::Legacy,
        ..ClientOptions::default()
    };
    Client::http(config, options)
}

#[test]
fn the_browser_comes_back_to_the_loopback_listener() {
    let server = HttpServer::start("oauth_loopback_rust", &["--require-auth"]);
    let loopback = Arc::new(LoopbackRedirect::bind(None).unwrap());
    let pages = Arc::new(Mutex::new(Vec::new()));
    let config = OAuthConfig {
        redirect_uri: Some(loopback.redirect_uri().to_owned()),
        authorize: Some(Arc::new({
            let (loopback, pages) = (loopback.clone(), pages.clone());
            move |request: &AuthorizationRequest| {
                assert_eq!(request.redirect_uri, loopback.redirect_uri());
                let page = browser(request.authorization_url)?;
                pages.lock().unwrap().push(page);
                let deadline = Instant::now() + Duration::from_secs(20);
                loopback
                    .wait(Some(request.cancellation), Some(deadline))
                    .map_err(|e| e.message)
            }
        })),
        ..OAuthConfig::default()
    };
    let client = http_client(&server, config);
    client.connect().expect("connect through the loopback");
    let result = client
        .call_tool(
            "echo",
            Some(json!({"text": "via loopback"})),
            &RequestOptions::default(),
        )
        .unwrap();
    assert_eq!(common::text(&result), "via loopback");

    let pages = pages.lock().unwrap().clone();
    assert_eq!(pages.len(), 1, "one authorization");
    assert_eq!(pages[0].0, 200);
    assert!(
        pages[0].1.contains("You can close this window"),
        "{pages:?}"
    );
    // The server registered the listener's URI and issued a code to it.
    let requests = server.requests();
    let registration = requests.iter().find(|r| r["path"] == "/register").unwrap();
    assert_eq!(
        registration["body"]["redirect_uris"],
        json!([loopback.redirect_uri()])
    );
    assert!(requests
        .iter()
        .any(|r| r["path"] == "/token" && r["body"].to_string().contains("authorization_code")));
}

#[test]
fn cancelling_the_call_ends_the_loopback_wait() {
    // tools/call needs a scope the first token lacks: the step-up is the second authorization,
    // where the person never comes back.
    let server = HttpServer::start(
        "oauth_loopback_cancel",
        &["--require-auth", "--auth-tools-scope", "mcp:write"],
    );
    let loopback = Arc::new(LoopbackRedirect::bind(Some("/cb")).unwrap());
    let (waiting_tx, waiting) = mpsc::channel::<()>();
    let (ended_tx, ended) = mpsc::channel::<Status>();
    let (waiting_tx, ended_tx) = (Mutex::new(waiting_tx), Mutex::new(ended_tx));
    let config = OAuthConfig {
        redirect_uri: Some(loopback.redirect_uri().to_owned()),
        authorize: Some(Arc::new({
            let loopback = loopback.clone();
            let first = Mutex::new(true);
            move |request: &AuthorizationRequest| {
                if std::mem::take(&mut *first.lock().unwrap()) {
                    browser(request.authorization_url)?;
                } else {
                    waiting_tx.lock().unwrap().send(()).unwrap();
                }
                // A wide deadline only against a hang: the call's cancel must end the wait.
                let deadline = Instant::now() + Duration::from_secs(30);
                let outcome = loopback.wait(Some(request.cancellation), Some(deadline));
                if let Err(error) = &outcome {
                    ended_tx.lock().unwrap().send(error.status).unwrap();
                }
                outcome.map_err(|e| e.message)
            }
        })),
        ..OAuthConfig::default()
    };
    let client = Arc::new(http_client(&server, config));
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
    waiting
        .recv_timeout(Duration::from_secs(20))
        .expect("the step-up reached the loopback wait");
    let cancelled_at = Instant::now();
    token.cancel(Some("closed the browser"));
    let error = call.join().unwrap().unwrap_err();
    assert_eq!(error.status, Status::Cancelled, "{error}");
    assert!(cancelled_at.elapsed() < Duration::from_secs(5));
    assert_eq!(
        ended.recv_timeout(Duration::from_secs(20)).unwrap(),
        Status::Cancelled
    );
    // The client goes on (a barrier: nothing was left waiting).
    client.tools(&RequestOptions::default()).unwrap();
}

mod c_api {
    use super::*;
    use mcpc::ffi::*;
    use std::ffi::{c_char, c_void, CStr, CString};

    struct Host {
        loopback: *mut mcp_loopback,
        pages: Mutex<Vec<(u16, String)>>,
    }

    /// A native host's callback: open the browser, then let the listener answer the reply.
    unsafe extern "C" fn authorize(
        userdata: *mut c_void,
        url: *const c_char,
        redirect_uri: *const c_char,
        reply: *mut mcp_auth_reply,
    ) -> bool {
        let host = &*(userdata as *const Host);
        assert_eq!(
            CStr::from_ptr(redirect_uri),
            CStr::from_ptr(mcp_loopback_redirect_uri(host.loopback))
        );
        match browser(CStr::from_ptr(url).to_str().unwrap()) {
            Ok(page) => host.pages.lock().unwrap().push(page),
            Err(e) => panic!("the browser failed: {e}"),
        }
        mcp_loopback_wait_authorization(host.loopback, reply, 20_000) == mcp_status::Ok
    }

    #[test]
    fn the_c_api_loopback_answers_the_authorize_callback() {
        let server = HttpServer::start("oauth_loopback_c", &["--require-auth"]);
        unsafe {
            let host = Box::new(Host {
                loopback: mcp_loopback_new(std::ptr::null()),
                pages: Mutex::new(Vec::new()),
            });
            let redirect = mcp_loopback_redirect_uri(host.loopback);
            assert!(!redirect.is_null(), "the listener opened");
            let options = mcp_client_options_new();
            assert_eq!(
                mcp_client_options_set_oauth_redirect_uri(options, redirect),
                mcp_status::Ok
            );
            let userdata = &*host as *const Host as *mut c_void;
            assert_eq!(
                mcp_client_options_set_oauth_authorize_callback(options, Some(authorize), userdata),
                mcp_status::Ok
            );
            mcp_client_options_set_mode(options, mcp_connect_mode::Legacy as i32);
            let url = CString::new(server.url.as_str()).unwrap();
            let client = mcp_client_new_http(url.as_ptr(), options);
            mcp_client_options_free(options);
            let (status, message) = common::take_result(mcp_client_connect(client));
            assert_eq!(status, mcp_status::Ok, "{message}");
            let (status, message) = common::take_result(mcp_client_list_tools(
                client,
                std::ptr::null(),
                std::ptr::null(),
            ));
            assert_eq!(status, mcp_status::Ok, "{message}");
            mcp_client_free(client);
            // The last URL the listener received is the redirect, with the code.
            let last = CStr::from_ptr(mcp_loopback_url(host.loopback))
                .to_str()
                .unwrap();
            assert!(last.starts_with(CStr::from_ptr(redirect).to_str().unwrap()));
            assert!(last.contains("code="), "{last}");
            let pages = host.pages.lock().unwrap().clone();
            assert_eq!(pages.len(), 1);
            assert_eq!(pages[0].0, 200);
            mcp_loopback_free(host.loopback);
        }
    }
}
