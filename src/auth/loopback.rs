//! The loopback redirect helper for native hosts (RFC 8252 §7.3): a listener on 127.0.0.1 at
//! an ephemeral port whose URL the host registers as its OAuth redirect URI. After the person
//! approves in the browser, the authorization server sends the browser to that URL; the
//! listener answers with a short page and hands the full URL (with `code`, `state`, maybe
//! `iss`) to the host, which returns it from its authorization callback.
//!
//! The listener stays open until dropped, so one redirect URI serves every authorization of a
//! client (a step-up needs a second one); each [`LoopbackRedirect::wait`] takes the next
//! redirect. An acceptor thread reads each connection's request head (bounded in size and
//! time), queues requests for the redirect path and answers anything else (a browser's
//! favicon request, a stray local connection) with 404. The wait is cancellable and has a
//! deadline. Checking the URL (`state`, `iss`) is the flow's job, not this listener's.

use crate::cancellation::CancellationToken;
use crate::error::{Error, Result, Status};
use crate::sync::{lock, spawn, wait_until};
use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The longest request head read from one connection; a redirect URL is far shorter.
const MAX_HEAD_BYTES: usize = 16 * 1024;
/// How long one connection may take to send its request head. The acceptor serves one
/// connection at a time, so this bounds how long a silent local connection can hold it.
const HEAD_TIMEOUT: Duration = Duration::from_secs(3);
/// Redirects kept for a later wait; a browser retrying a page load adds one each time.
const MAX_QUEUED: usize = 8;

const PAGE: &str = "<!doctype html><html><head><meta charset=\"utf-8\"><title>Authorization \
received</title></head><body><p>The authorization response was received. You can close this \
window and return to the application.</p></body></html>";

/// A one-redirect-at-a-time listener on 127.0.0.1 for the OAuth redirect. See the module
/// documentation.
pub struct LoopbackRedirect {
    redirect_uri: String,
    address: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

struct Shared {
    queue: Mutex<VecDeque<String>>,
    arrived: Condvar,
    closing: AtomicBool,
}

impl LoopbackRedirect {
    /// Opens the listener on 127.0.0.1 at a port the system picks. `path` is the redirect
    /// URI's path ("/callback" when `None`); it must start with '/' and hold no query,
    /// fragment, space or control character.
    pub fn bind(path: Option<&str>) -> Result<Self> {
        let path = path.unwrap_or("/callback");
        if !path.starts_with('/')
            || path
                .chars()
                .any(|c| c == '?' || c == '#' || c.is_whitespace() || c.is_control())
        {
            return Err(Error::invalid(format!(
                "the loopback redirect path must start with '/' and have no query, fragment, \
                 space or control character: {path:?}"
            )));
        }
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .map_err(|e| Error::transport(format!("cannot listen on 127.0.0.1: {e}")))?;
        let address = listener
            .local_addr()
            .map_err(|e| Error::transport(format!("cannot read the listener's port: {e}")))?;
        let shared = Arc::new(Shared {
            queue: Mutex::new(VecDeque::new()),
            arrived: Condvar::new(),
            closing: AtomicBool::new(false),
        });
        let acceptor = {
            let shared = Arc::clone(&shared);
            let path = path.to_owned();
            let origin = format!("http://{address}");
            spawn(
                "mcpc-loopback",
                move || accept_loop(&listener, &shared, &path, &origin),
                |_| (),
            )?
        };
        Ok(LoopbackRedirect {
            redirect_uri: format!("http://{address}{path}"),
            address,
            shared,
            acceptor: Some(acceptor),
        })
    }

    /// The redirect URI to register and to give the flow, e.g. "http://127.0.0.1:53124/callback".
    pub fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    /// Waits for the next request to the redirect path and returns its full URL. Ends with
    /// CANCELLED when `cancellation` is cancelled, TIMEOUT at `deadline` (`None`: no deadline).
    /// A redirect that came before the wait began is returned at once.
    pub fn wait(
        &self,
        cancellation: Option<&CancellationToken>,
        deadline: Option<Instant>,
    ) -> Result<String> {
        // The cancel hook only wakes the waiter, which then sees the token cancelled.
        let hook = cancellation.and_then(|token| {
            let shared = Arc::clone(&self.shared);
            token.on_cancel(move |_| {
                let _queue = lock(&shared.queue);
                shared.arrived.notify_all();
            })
        });
        let outcome = self.next_redirect(cancellation, deadline);
        // After the queue's lock is released: a cancel running hooks holds the token's lock.
        if let (Some(token), Some(hook)) = (cancellation, hook) {
            token.off_cancel(hook);
        }
        outcome
    }

    fn next_redirect(
        &self,
        cancellation: Option<&CancellationToken>,
        deadline: Option<Instant>,
    ) -> Result<String> {
        let mut queue = lock(&self.shared.queue);
        loop {
            if let Some(url) = queue.pop_front() {
                return Ok(url);
            }
            if let Some(token) = cancellation.filter(|t| t.is_cancelled()) {
                let mut error = Error::new(
                    Status::Cancelled,
                    "cancelled while waiting for the authorization redirect",
                );
                error.cancel_reason = token.reason();
                return Err(error);
            }
            match wait_until(&self.shared.arrived, queue, deadline) {
                Some(guard) => queue = guard,
                None => {
                    return Err(Error::new(
                        Status::Timeout,
                        "no authorization redirect arrived before the deadline",
                    ))
                }
            }
        }
    }
}

impl Drop for LoopbackRedirect {
    /// Stops the acceptor: a connection of our own wakes its blocking accept.
    fn drop(&mut self) {
        self.shared.closing.store(true, Ordering::Release);
        let _ = TcpStream::connect_timeout(&self.address, Duration::from_secs(1));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

impl std::fmt::Debug for LoopbackRedirect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopbackRedirect")
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

fn accept_loop(listener: &TcpListener, shared: &Shared, path: &str, origin: &str) {
    loop {
        let accepted = listener.accept();
        if shared.closing.load(Ordering::Acquire) {
            return;
        }
        let Ok((stream, _)) = accepted else {
            continue; // e.g. the peer reset before accept: keep listening
        };
        if let Some(url) = serve(stream, path, origin) {
            let mut queue = lock(&shared.queue);
            if queue.len() == MAX_QUEUED {
                queue.pop_front();
            }
            queue.push_back(url);
            shared.arrived.notify_all();
        }
    }
}

/// Reads one request head and answers it; the redirect's full URL when it was a GET of `path`.
fn serve(mut stream: TcpStream, path: &str, origin: &str) -> Option<String> {
    let _ = stream.set_read_timeout(Some(HEAD_TIMEOUT));
    let _ = stream.set_write_timeout(Some(HEAD_TIMEOUT));
    let head = read_head(&mut stream)?;
    let line = head.lines().next()?;
    let mut parts = line.split(' ');
    let (method, target) = (parts.next()?, parts.next()?);
    let target_path = target.split(['?', '#']).next().unwrap_or(target);
    let found = method == "GET" && target.starts_with('/') && target_path == path;
    let response = if found {
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\
             Cache-Control: no-store\r\nReferrer-Policy: no-referrer\r\nConnection: close\r\n\r\n{PAGE}",
            PAGE.len()
        )
    } else {
        "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_owned()
    };
    let _ = stream.write_all(response.as_bytes());
    let _ = stream.flush();
    found.then(|| format!("{origin}{}", target.split('#').next().unwrap_or(target)))
}

/// The request head (up to the blank line), or `None` when it is too long, not UTF-8, or
/// does not come in time.
fn read_head(stream: &mut TcpStream) -> Option<String> {
    let deadline = Instant::now() + HEAD_TIMEOUT;
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
        if head.len() > MAX_HEAD_BYTES || Instant::now() >= deadline {
            return None;
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8(head).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(address: SocketAddr, target: &str) -> String {
        let mut stream = TcpStream::connect(address).unwrap();
        write!(stream, "GET {target} HTTP/1.1\r\nHost: {address}\r\n\r\n").unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    }

    #[test]
    fn returns_the_redirect_and_ignores_other_paths() {
        let loopback = LoopbackRedirect::bind(None).unwrap();
        assert!(loopback.redirect_uri().starts_with("http://127.0.0.1:"));
        assert!(loopback.redirect_uri().ends_with("/callback"));
        let response = get(loopback.address, "/favicon.ico");
        assert!(response.starts_with("HTTP/1.1 404"), "{response}");
        let response = get(loopback.address, "/callback?code=c1&state=s1");
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        assert!(response.contains("You can close this window"));
        let url = loopback
            .wait(None, Some(Instant::now() + Duration::from_secs(30)))
            .unwrap();
        assert_eq!(url, format!("{}?code=c1&state=s1", loopback.redirect_uri()));
    }

    #[test]
    fn times_out_and_is_cancelled() {
        let loopback = LoopbackRedirect::bind(Some("/cb")).unwrap();
        let error = loopback
            .wait(None, Some(Instant::now() + Duration::from_millis(50)))
            .unwrap_err();
        assert_eq!(error.status, Status::Timeout);
        let token = CancellationToken::new();
        let canceller = {
            let token = token.clone();
            std::thread::spawn(move || token.cancel(Some("gave up")))
        };
        let error = loopback.wait(Some(&token), None).unwrap_err();
        canceller.join().unwrap();
        assert_eq!(error.status, Status::Cancelled);
        assert_eq!(error.cancel_reason.as_deref(), Some("gave up"));
    }

    #[test]
    fn rejects_bad_paths() {
        for path in ["callback", "/cb?x=1", "/c b", "/cb#f"] {
            let error = LoopbackRedirect::bind(Some(path)).unwrap_err();
            assert_eq!(error.status, Status::InvalidArgument, "{path}");
        }
    }

    #[test]
    fn a_silent_connection_does_not_block_the_redirect_for_long() {
        let loopback = LoopbackRedirect::bind(None).unwrap();
        let _silent = TcpStream::connect(loopback.address).unwrap();
        let start = Instant::now();
        let response = get(loopback.address, "/callback?code=c2");
        assert!(response.starts_with("HTTP/1.1 200"));
        assert!(start.elapsed() < HEAD_TIMEOUT + Duration::from_secs(20));
        let url = loopback.wait(None, None).unwrap();
        assert!(url.ends_with("/callback?code=c2"));
    }
}
