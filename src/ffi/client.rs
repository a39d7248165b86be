//! `mcp_client`: create (stdio, Streamable HTTP), connect, what the server said about itself,
//! close, free. A client over a custom transport is made in `transport.rs`; the request
//! functions are in `blocking_requests.rs`.

use super::boundary::borrow;
use super::client_options::mcp_client_options;
use super::request_options::mcp_request_options;
use super::result::{into_result, mcp_result};
use super::strings::{required_str, to_cstring};
use super::{free_handle, guard};
/// The connection state's C name (one enum: cbindgen.toml renames `ConnectionState`).
pub use crate::client::ConnectionState as mcp_connection_state;
use crate::client::{Client, ClientOptions, ConnectionState, RequestOptions};
use crate::error::{Error, Result};
use crate::protocol::reply::Reply;
use crate::sync::lock;
use crate::transport::http::HttpConfig;
use crate::transport::stdio::StdioConfig;
use std::ffi::{c_char, CString};
use std::sync::Mutex;

/// A client for one MCP server. Thread-safe: any number of threads may make calls at once.
pub struct mcp_client {
    /// Why the client could not be made (bad argv or options); reported by connect and calls.
    client: std::result::Result<Client, Error>,
    /// Strings handed out by getters; kept until the client is freed so pointers stay valid.
    strings: Mutex<Vec<(&'static str, CString)>>,
}

impl mcp_client {
    /// Boxes the client `make` builds, or why it could not (reported by connect and calls);
    /// a panic in `make` becomes INTERNAL_ERROR. Never NULL.
    pub(super) fn make(make: impl FnOnce() -> Result<Client>) -> *mut mcp_client {
        let client = guard(
            || {
                Err(Error::new(
                    crate::Status::InternalError,
                    "internal error creating the client",
                ))
            },
            make,
        );
        Box::into_raw(Box::new(mcp_client {
            client,
            strings: Mutex::default(),
        }))
    }

    pub(super) fn get(&self) -> Result<&Client> {
        self.client.as_ref().map_err(Clone::clone)
    }

    /// A string owned by the client: the same pointer while the value is unchanged.
    fn keep(&self, key: &'static str, value: Option<String>) -> *const c_char {
        let Some(value) = value else {
            return std::ptr::null();
        };
        let mut strings = lock(&self.strings);
        let current = strings.iter().rev().find(|(k, _)| *k == key);
        if let Some((_, s)) = current.filter(|(_, s)| s.as_bytes() == value.as_bytes()) {
            return s.as_ptr();
        }
        let s = to_cstring(value);
        let ptr = s.as_ptr();
        strings.push((key, s));
        ptr
    }
}

/// Reads the client options (NULL: defaults), failing with their remembered error.
pub(super) unsafe fn client_options<'a>(
    options: *const mcp_client_options,
) -> Result<Option<&'a mcp_client_options>> {
    match borrow(options) {
        Some(o) if o.error.is_some() => Err(o.error.clone().expect("checked")),
        other => Ok(other),
    }
}

/// Reads a NULL-terminated argv array.
unsafe fn read_argv(argv: *const *const c_char) -> Result<Vec<String>> {
    if argv.is_null() {
        return Err(Error::invalid("argv must not be NULL"));
    }
    let mut args = Vec::new();
    for i in 0.. {
        let arg = *argv.add(i);
        if arg.is_null() {
            break;
        }
        args.push(required_str(arg, &format!("argv[{i}]"))?.to_owned());
    }
    if args.is_empty() {
        return Err(Error::invalid(
            "argv is empty: argv[0] must name the server program",
        ));
    }
    Ok(args)
}

/// A client for a server run as a child process: `argv` is a NULL-terminated array, executed
/// directly (no shell; `argv[0]` is looked up in PATH). `options` may be NULL and is copied.
/// Nothing starts until `mcp_client_connect`. Never returns NULL: invalid arguments are
/// reported by `mcp_client_connect` as MCP_STATUS_INVALID_ARGUMENT. Free with `mcp_client_free`.
///
/// # Safety
/// `argv` is NULL or a NULL-terminated array of NUL-terminated strings; `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_new_stdio(
    argv: *const *const c_char,
    options: *const mcp_client_options,
) -> *mut mcp_client {
    mcp_client::make(|| {
        let argv = read_argv(argv)?;
        let mut config = StdioConfig::new(argv);
        let client_options = match client_options(options)? {
            Some(o) => {
                config.env = o.env.clone();
                config.cwd = o.cwd.clone();
                config.max_line_bytes = o.max_line_bytes;
                config.stderr = o.stderr.clone();
                config.sigpipe_ignored = o.sigpipe_ignored;
                config.close_in_background = o.close_in_background;
                o.client.clone()
            }
            None => ClientOptions::default(),
        };
        Ok(Client::stdio(config, client_options))
    })
}

/// A client for a server reached by Streamable HTTP at `url` (e.g. "https://host/mcp"; https
/// is verified, plain http is for loopback and tests). `options` may be NULL and is copied; its
/// headers, HTTP timeouts and max line bytes (here: the largest JSON body or SSE event) apply.
/// Nothing is sent until `mcp_client_connect`. Never returns NULL: a bad URL or option is
/// reported by `mcp_client_connect` as MCP_STATUS_INVALID_ARGUMENT. Free with `mcp_client_free`.
///
/// # Safety
/// `url` is NULL or NUL-terminated; `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_new_http(
    url: *const c_char,
    options: *const mcp_client_options,
) -> *mut mcp_client {
    mcp_client::make(|| {
        let url = required_str(url, "url")?;
        let (mut config, client_options) = match client_options(options)? {
            Some(o) => {
                let mut config = o.http.clone();
                config.max_message_bytes = o.max_line_bytes;
                (config, o.client.clone())
            }
            None => (HttpConfig::new(""), ClientOptions::default()),
        };
        config.url = url.to_owned();
        Ok(Client::http(config, client_options))
    })
}

/// Starts the server and learns its protocol era. In the default auto mode it probes with
/// `server/discover` (2026-07-28) and falls back to the `initialize` handshake (offering
/// 2025-11-25; older versions the server counters with are accepted). The result is the
/// discover or `initialize` result. Never cancelled on the wire. The connect timeout
/// (`mcp_client_options_set_connect_timeout_ms`) bounds the whole of it: the probe, a proxy
/// tunnel, TLS, the handshake and OAuth discovery share one deadline, taken when connect
/// starts, and it returns MCP_STATUS_TIMEOUT past it. A connect made while another is under way
/// waits for that one's outcome within its own timeout. `mcp_client_close` from another thread
/// ends it at any point with MCP_STATUS_CLOSED. Any callback (the log callback, a stderr line,
/// a handler) may call it on its own client.
///
/// Reconnecting: called again while connected, it returns the same result without I/O. When
/// the connection has failed since (`mcp_client_connection_state` says
/// MCP_CONNECTION_STATE_FAILED: the stdio server exited, the HTTP server ended the session),
/// it starts a new connection (the server is started again, a new session is opened), says
/// so through the log callback, and returns the new result. Calls made on the failed
/// connection keep failing; calls made after it returns go to the new one.
///
/// # Safety
/// `client` is NULL or a live client.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_connect(client: *mut mcp_client) -> *mut mcp_result {
    with_client(client, |c| c.connect())
}

/// Ends the session: every pending call returns MCP_STATUS_CLOSED at once, and request handlers
/// still running are told (`mcp_handler_reply_is_cancelled` turns true; their answers are not
/// sent). A connect in progress returns MCP_STATUS_CLOSED at once. The callbacks already queued
/// run; then no callback of any kind starts, and close waits for those running on other threads
/// to return. All this within 2 s: what is still queued then is dropped. When close returns, no
/// callback runs and none will, unless one ran past those 2 s (logged); such a callback must not
/// touch anything the host frees after close. Then the server's stdin is closed and it gets 2 s
/// to exit, then SIGTERM, 2 s more, then SIGKILL (its whole process group), and it is reaped;
/// the rest of its group gets up to 1 s more to end, so none of it is left when close returns
/// (even when the server had exited before). Processes the server started outside its group
/// that still hold its pipes are not waited for. With `mcp_client_options_set_close_in_background`
/// close does not wait for the server: it returns once the callbacks are done and the server's
/// stdin is closed, and the library ends the server (same steps) and reaps it in the background.
/// The library's own threads get 1 s more to end,
/// and are let go past it (one stuck in a TCP connect, or running a stderr callback that never
/// returns). In all, close returns within 9 s (`mcpc::limits::CLOSE_BOUND`) whatever the server
/// and the callbacks do; a callback still running then is abandoned, and what it uses (its
/// userdata) must outlive it. Later calls return MCP_STATUS_CLOSED. Safe from any thread, more
/// than once, and from inside a callback (close does not wait for the callback it is called
/// from). NULL is accepted.
///
/// # Safety
/// `client` is NULL or a live client.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_close(client: *mut mcp_client) {
    guard(
        || (),
        || {
            if let Some(Ok(client)) = borrow(client).map(|c| &c.client) {
                client.close();
            }
        },
    )
}

/// Closes the client if needed (see `mcp_client_close`: when free returns, no callback runs, with
/// the same 2 s bound, and free returns within the same 9 s) and frees it. NULL is accepted. No other thread may be using the client
/// (close it first to end their calls, and let them return). A callback may free its own client
/// when nothing else uses it; it must not touch the client afterwards.
///
/// # Safety
/// `client` is NULL or a client not yet freed.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_free(client: *mut mcp_client) {
    free_handle(client)
}

/// The server's `initialize` result (modern era: its `server/discover` result) as JSON, or
/// NULL before connect. Owned by the client.
///
/// # Safety
/// `client` is NULL or a live client.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_server_info(client: *const mcp_client) -> *const c_char {
    getter(client, "server_info", |c| {
        c.server_info().map(|v| v.to_string())
    })
}

/// The negotiated protocol version, e.g. "2025-11-25", or NULL before connect. Owned by the
/// client.
///
/// # Safety
/// `client` is NULL or a live client.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_protocol_version(client: *const mcp_client) -> *const c_char {
    getter(client, "protocol_version", |c| c.protocol_version())
}

/// The server's capabilities as JSON, or NULL before connect. Owned by the client.
///
/// # Safety
/// `client` is NULL or a live client.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_server_capabilities(
    client: *const mcp_client,
) -> *const c_char {
    getter(client, "capabilities", |c| {
        c.server_capabilities().map(|v| v.to_string())
    })
}

/// The server's instructions, or NULL when it gave none. Owned by the client.
///
/// # Safety
/// `client` is NULL or a live client.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_instructions(client: *const mcp_client) -> *const c_char {
    getter(client, "instructions", |c| c.instructions())
}

/// Whether the connection speaks the modern (2026-07-28) era. False before connect.
///
/// # Safety
/// `client` is NULL or a live client.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_is_modern(client: *const mcp_client) -> bool {
    guard(
        || false,
        || borrow(client).is_some_and(|c| c.get().is_ok_and(|c| c.is_modern())),
    )
}

/// Where the client stands. MCP_CONNECTION_STATE_FAILED means the connection failed after
/// connecting (the stdio server exited, the HTTP server ended the session); the next
/// `mcp_client_connect` (with a reconnect policy, the next request) starts a new one,
/// MCP_CONNECTION_STATE_RECONNECTING while it runs. NULL: MCP_CONNECTION_STATE_NOT_CONNECTED.
///
/// # Safety
/// `client` is NULL or a live client.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_connection_state(client: *const mcp_client) -> ConnectionState {
    guard(
        || ConnectionState::NotConnected,
        || match borrow(client).map(|c| c.get()) {
            Some(Ok(c)) => c.state(),
            _ => ConnectionState::NotConnected,
        },
    )
}

/// The server's implementation info (`{"name":...,"version":...}`) as JSON, in either era, or
/// NULL. Owned by the client.
///
/// # Safety
/// `client` is NULL or a live client.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_server_implementation(
    client: *const mcp_client,
) -> *const c_char {
    getter(client, "implementation", |c| {
        c.server_implementation().map(|v| v.to_string())
    })
}

pub(super) unsafe fn getter(
    client: *const mcp_client,
    key: &'static str,
    read: impl FnOnce(&Client) -> Option<String>,
) -> *const c_char {
    guard(std::ptr::null, || match borrow(client) {
        Some(handle) => match handle.get() {
            Ok(c) => handle.keep(key, read(c)),
            Err(_) => std::ptr::null(),
        },
        None => std::ptr::null(),
    })
}

pub(super) unsafe fn with_client<T: Into<Reply>>(
    client: *const mcp_client,
    body: impl FnOnce(&Client) -> Result<T>,
) -> *mut mcp_result {
    into_result(|| {
        let client = borrow(client).ok_or_else(|| Error::invalid("client must not be NULL"))?;
        body(client.get()?)
    })
}

pub(super) unsafe fn with_request<T: Into<Reply>>(
    client: *const mcp_client,
    options: *const mcp_request_options,
    body: impl FnOnce(&Client, &RequestOptions) -> Result<T>,
) -> *mut mcp_result {
    with_client(client, |c| {
        let default = RequestOptions::default();
        let options = match borrow(options) {
            None => &default,
            Some(o) => match &o.error {
                Some(error) => return Err(error.clone()),
                None => &o.request,
            },
        };
        body(c, options)
    })
}
