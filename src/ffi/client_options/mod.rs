//! `mcp_client_options`: a builder for how a client connects and behaves, copied when a client
//! is made, so one options object may serve many clients. Setters follow `setter::set`.

use super::setter::{positive_ms, set, HasError};
use super::status::mcp_status;
use super::strings::{optional_json, optional_str, required_str};
use super::{free_handle, guard};
use crate::client::{ClientOptions, ConnectMode};
use crate::error::Error;
use crate::protocol::versions;
use crate::transport::http::{HttpConfig, HttpTransportKind};
use crate::transport::stdio::{check_env_name, StderrMode, DEFAULT_MAX_LINE_BYTES};
use serde_json::json;
use std::ffi::{c_char, c_int};
use std::path::PathBuf;
use std::time::Duration;

// Every other `mcp_client_options_*` setter, one file per feature, so that the header has them
// all together: cbindgen emits this file's items first, then these modules' in this order.
mod callbacks;
mod handlers;
mod oauth;
mod reconnect;
mod tasks;
mod trace;

pub use callbacks::*;
pub use handlers::*;
pub use oauth::*;
pub use reconnect::*;
pub use tasks::*;
pub use trace::*;

/// Options for a client. Copied when the client is created, so one may serve many clients.
pub struct mcp_client_options {
    pub(crate) client: ClientOptions,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) cwd: Option<PathBuf>,
    pub(crate) max_line_bytes: usize,
    pub(crate) stderr: StderrMode,
    pub(crate) sigpipe_ignored: bool,
    pub(crate) close_in_background: bool,
    pub(crate) error: Option<Error>,
    /// For `mcp_client_new_http`: everything but the URL.
    pub(crate) http: HttpConfig,
}

/// The connect mode's C name (one enum: cbindgen.toml renames `ConnectMode`).
pub use crate::client::ConnectMode as mcp_connect_mode;

/// The HTTP transport's C name (one enum: cbindgen.toml renames `HttpTransportKind`).
pub use crate::transport::http::HttpTransportKind as mcp_http_transport;

/// What happens to a stdio server's stderr.
#[repr(C)]
#[allow(non_camel_case_types)]
pub enum mcp_stderr_mode {
    /// Keep the last 50 lines; they are quoted when the server exits unexpectedly (default).
    Tail = 0,
    /// Let the server write to this process's stderr.
    Inherit = 1,
    /// Throw it away.
    Discard = 2,
}

impl HasError for mcp_client_options {
    fn error(&mut self) -> &mut Option<Error> {
        &mut self.error
    }
}

/// Default client options: client info `{"name":"mcpc","version":"<library version>"}`, no
/// capabilities, no request timeout, a 30 s connect timeout, lines up to 100 MiB, 1000 pages,
/// stderr kept as a tail. Free with `mcp_client_options_free`.
#[no_mangle]
pub extern "C" fn mcp_client_options_new() -> *mut mcp_client_options {
    guard(std::ptr::null_mut, || {
        Box::into_raw(Box::new(mcp_client_options {
            client: ClientOptions::default(),
            env: Vec::new(),
            cwd: None,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            stderr: StderrMode::Tail,
            sigpipe_ignored: false,
            close_in_background: false,
            error: None,
            http: HttpConfig::new(""),
        }))
    })
}

/// Frees the options. NULL is accepted.
///
/// # Safety
/// `options` is NULL or options not yet freed.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_free(options: *mut mcp_client_options) {
    free_handle(options)
}

/// The `clientInfo` sent in `initialize`.
///
/// # Safety
/// `options` is NULL or live; the strings are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_client_info(
    options: *mut mcp_client_options,
    name: *const c_char,
    version: *const c_char,
) -> mcp_status {
    set(options, |o| {
        let name = required_str(name, "client name")?;
        let version = required_str(version, "client version")?;
        o.client.client_info = json!({ "name": name, "version": version });
        Ok(())
    })
}

/// The client capabilities sent in `initialize`, as a JSON object.
///
/// # Safety
/// `options` is NULL or live; `json` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_capabilities(
    options: *mut mcp_client_options,
    json: *const c_char,
) -> mcp_status {
    set(options, |o| {
        let caps = optional_json(json, "capabilities", true)?;
        o.client.capabilities =
            Some(caps.ok_or_else(|| Error::invalid("capabilities must not be NULL"))?);
        Ok(())
    })
}

/// The timeout of every request that sets none itself; 0 means no timeout (the default).
/// It bounds the whole request: every leg it takes (`input_required` rounds, a task's
/// `tasks/get` polls, `tasks/update` and `tasks/result`, an authorization retry) shares one
/// deadline taken when the request starts. A request that times out returns
/// MCP_STATUS_TIMEOUT and the server is told, as for a cancel.
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_timeout_ms(
    options: *mut mcp_client_options,
    ms: u64,
) -> mcp_status {
    set(options, |o| {
        o.client.timeout = (ms > 0).then(|| Duration::from_millis(ms));
        Ok(())
    })
}

/// The bound of the whole of `mcp_client_connect`; must be positive (default 30000). One
/// deadline, taken when connect starts, covers the auto mode's probe, a proxy tunnel, TLS, the
/// handshake and OAuth discovery together; connect returns MCP_STATUS_TIMEOUT past it.
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_connect_timeout_ms(
    options: *mut mcp_client_options,
    ms: u64,
) -> mcp_status {
    set(options, |o| {
        o.client.connect_timeout = positive_ms(ms, "connect timeout")?;
        Ok(())
    })
}

/// Connect on the first request instead of at `mcp_client_connect` (default off): making the
/// client starts nothing (no process, socket or thread). The first request starts the connect
/// (on a short-lived thread of the library) and waits for it; requests made meanwhile wait for
/// the same connect. Each waits bounded by its own timeout and cancel; `mcp_client_close` ends
/// the connect and the waits with MCP_STATUS_CLOSED. When the connect fails, the requests that
/// waited for it return its status with a message starting "lazy connect failed"; the next
/// request tries again. The connect's time comes out of the request's timeout.
/// `mcp_client_connect` still connects at once.
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_lazy_connect(
    options: *mut mcp_client_options,
    lazy: bool,
) -> mcp_status {
    set(options, |o| {
        o.client.lazy_connect = lazy;
        Ok(())
    })
}

/// Stops a stdio server that has had no request for `ms` milliseconds (none in flight, no
/// listen open), as close stops one (stdin closed, a grace period, SIGTERM, SIGKILL); the
/// next request starts it again, as a lazy connect does. 0 means never (the default).
/// `mcp_client_connection_state` says MCP_CONNECTION_STATE_NOT_CONNECTED while it is stopped. HTTP clients ignore it.
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_idle_shutdown_ms(
    options: *mut mcp_client_options,
    ms: u64,
) -> mcp_status {
    set(options, |o| {
        o.client.idle_shutdown = (ms > 0).then(|| Duration::from_millis(ms));
        Ok(())
    })
}

/// The longest line accepted from a stdio server, and the largest JSON body or SSE event from
/// an HTTP server (default 100 MiB). A longer line fails the calls pending at that moment with
/// MCP_STATUS_PROTOCOL_ERROR, whose message names this setter; reading goes on after it. The
/// memory a large result costs at its peak is in docs/benchmarks.md.
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_max_line_bytes(
    options: *mut mcp_client_options,
    bytes: usize,
) -> mcp_status {
    set(options, |o| {
        if bytes == 0 {
            return Err(Error::invalid("max line bytes must be positive"));
        }
        o.max_line_bytes = bytes;
        Ok(())
    })
}

/// The most pages an all-pages call fetches before MCP_STATUS_PAGINATION_LIMIT (default 1000).
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_max_pages(
    options: *mut mcp_client_options,
    pages: u32,
) -> mcp_status {
    set(options, |o| {
        if pages == 0 {
            return Err(Error::invalid("max pages must be positive"));
        }
        o.client.max_pages = pages as usize;
        Ok(())
    })
}

/// Adds (or overrides) one environment variable for a stdio server; the rest is inherited.
///
/// # Safety
/// `options` is NULL or live; the strings are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_env(
    options: *mut mcp_client_options,
    name: *const c_char,
    value: *const c_char,
) -> mcp_status {
    set(options, |o| {
        let name = required_str(name, "environment variable name")?;
        check_env_name(name)?;
        let value = required_str(value, "environment variable value")?;
        o.env.push((name.to_owned(), value.to_owned()));
        Ok(())
    })
}

/// The working directory of a stdio server (default: this process's). NULL resets it.
///
/// # Safety
/// `options` is NULL or live; `path` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_cwd(
    options: *mut mcp_client_options,
    path: *const c_char,
) -> mcp_status {
    set(options, |o| {
        o.cwd = optional_str(path, "working directory")?.map(PathBuf::from);
        Ok(())
    })
}

/// What happens to a stdio server's stderr: an `mcp_stderr_mode` value.
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_stderr(
    options: *mut mcp_client_options,
    mode: c_int,
) -> mcp_status {
    set(options, |o| {
        o.stderr = match mode {
            m if m == mcp_stderr_mode::Tail as c_int => StderrMode::Tail,
            m if m == mcp_stderr_mode::Inherit as c_int => StderrMode::Inherit,
            m if m == mcp_stderr_mode::Discard as c_int => StderrMode::Discard,
            _ => return Err(Error::invalid(format!("unknown stderr mode {mode}"))),
        };
        Ok(())
    })
}

/// The host promises that SIGPIPE is ignored in its process (`signal(SIGPIPE, SIG_IGN)`, as many
/// servers and runtimes do at start) and stays so while the client lives: writes to a stdio
/// server then skip the two signal-mask calls that otherwise hold SIGPIPE off around each one on
/// Linux before 6.18. `mcp_client_connect` checks the promise (MCP_STATUS_INVALID_ARGUMENT when
/// SIGPIPE is not ignored then); breaking it later lets a server that dies kill the host.
/// Default false. No effect on Linux 6.18 and later (each write asks for no signal), macOS and
/// Windows, which need no mask.
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_sigpipe_ignored(
    options: *mut mcp_client_options,
    ignored: bool,
) -> mcp_status {
    set(options, |o| {
        o.sigpipe_ignored = ignored;
        Ok(())
    })
}

/// For a stdio server (unix): `mcp_client_close` returns once the client is unusable and no
/// callback of it can run, without waiting for the server to exit. The library ends the server
/// in the background with the same bounded sequence as a close that waits (stdin closed;
/// SIGTERM to the server's process group after 2 s, SIGKILL after 2 s more), then SIGKILLs what
/// is left of the group and reaps the server: no zombie is left. Processes of the server's
/// group may so still run for up to about 4 s after close and free return; a host that exits
/// before then leaves each server only its stdin's end. For hosts that close many servers:
/// closing one costs no wait for its exit. Default false: close returns once no process of the
/// server's group is left. No effect on Windows (close waits) nor for HTTP servers.
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_close_in_background(
    options: *mut mcp_client_options,
    in_background: bool,
) -> mcp_status {
    set(options, |o| {
        o.close_in_background = in_background;
        Ok(())
    })
}

/// Which protocol era to speak: an `mcp_connect_mode` value (default MCP_CONNECT_MODE_AUTO).
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_mode(
    options: *mut mcp_client_options,
    mode: c_int,
) -> mcp_status {
    set(options, |o| {
        o.client.mode = match mode {
            m if m == ConnectMode::Auto as c_int => ConnectMode::Auto,
            m if m == ConnectMode::Legacy as c_int => ConnectMode::Legacy,
            m if m == ConnectMode::Modern as c_int => ConnectMode::Modern,
            _ => return Err(Error::invalid(format!("unknown connect mode {mode}"))),
        };
        Ok(())
    })
}

/// Pins a protocol version (NULL: none). A handshake version ("2025-11-25" and older) means the
/// `initialize` handshake offering it; a modern one ("2026-07-28") is never downgraded.
///
/// # Safety
/// `options` is NULL or live; `version` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_protocol_version(
    options: *mut mcp_client_options,
    version: *const c_char,
) -> mcp_status {
    set(options, |o| {
        let version = optional_str(version, "protocol version")?;
        if let Some(v) = version {
            versions::check_supported(v)?;
        }
        o.client.protocol_version = version.map(str::to_owned);
        Ok(())
    })
}

/// How long the auto mode's `server/discover` probe waits before falling back to the
/// handshake (default 5000); must be positive. The probe's share of the connect timeout: it
/// never makes connect take longer than that.
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_discover_timeout_ms(
    options: *mut mcp_client_options,
    ms: u64,
) -> mcp_status {
    set(options, |o| {
        o.client.discover_timeout = positive_ms(ms, "discover timeout")?;
        Ok(())
    })
}

/// The most `input_required` rounds one call may take (default 10).
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_input_required_max_rounds(
    options: *mut mcp_client_options,
    rounds: u32,
) -> mcp_status {
    set(options, |o| {
        o.client.input_required_max_rounds = rounds;
        Ok(())
    })
}

/// Adds a header to every HTTP request of a client made by `mcp_client_new_http`, e.g.
/// ("Authorization", "Bearer ..."). Rejected (MCP_STATUS_INVALID_ARGUMENT): a name that is not
/// an HTTP token, a value with a control character (CR, LF, NUL...), the headers the
/// transport sets itself (Accept, Content-Type, Mcp-Session-Id, MCP-Protocol-Version, Mcp-*...),
/// the headers that shape the HTTP exchange (Connection, Content-Length, Expect, Host,
/// Keep-Alive, Proxy-Connection, TE, Trailer, Transfer-Encoding, Upgrade; any case), and
/// extra headers over 64 KiB in all. Never sent elsewhere: redirects are not followed; values
/// never appear in messages.
///
/// # Safety
/// `options` is NULL or live; `name` and `value` are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_add_header(
    options: *mut mcp_client_options,
    name: *const c_char,
    value: *const c_char,
) -> mcp_status {
    set(options, |o| {
        let name = required_str(name, "header name")?;
        let value = required_str(value, "header value")?;
        o.http.add_header(name, value)
    })
}

/// How long opening one HTTP connection (TCP, a proxy tunnel, then TLS) may take; must be
/// positive (default 10000). A refused connection fails at once whatever this says. Within
/// connect and a request it never outlasts their own timeouts, which bound them whole.
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_http_connect_timeout_ms(
    options: *mut mcp_client_options,
    ms: u64,
) -> mcp_status {
    set(options, |o| {
        if ms == 0 {
            return Err(Error::invalid("HTTP connect timeout must be positive"));
        }
        o.http.connect_timeout = Duration::from_millis(ms);
        Ok(())
    })
}

/// The longest silence while reading an HTTP response before the call fails with
/// MCP_STATUS_TRANSPORT_ERROR; 0 means none (the default: a slow tool may say nothing for
/// long; use request timeouts to bound calls). It bounds a call's own response (and its
/// resumption); the streams that last as long as the session (the standalone GET stream, the
/// HTTP+SSE transport's event stream, which carries that transport's answers) wait for as long
/// as the server is quiet: request timeouts bound those calls.
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_http_idle_timeout_ms(
    options: *mut mcp_client_options,
    ms: u64,
) -> mcp_status {
    set(options, |o| {
        o.http.idle_timeout = (ms > 0).then(|| Duration::from_millis(ms));
        Ok(())
    })
}

/// Whether a handshake-era HTTP client opens the standalone GET stream once connected, for
/// what the server sends outside any call (its requests, list changes). On by default; a
/// server without one answers 405 and it is not tried again.
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_http_listen(
    options: *mut mcp_client_options,
    listen: bool,
) -> mcp_status {
    set(options, |o| {
        o.http.listen = listen;
        Ok(())
    })
}

/// Which HTTP transport to speak: an `mcp_http_transport` value (default
/// MCP_HTTP_TRANSPORT_AUTO). With MCP_HTTP_TRANSPORT_LEGACY_SSE the URL is the server's event
/// stream (often ending in `/sse`), and only the handshake era is spoken: MCP_CONNECT_MODE_MODERN
/// then fails the connect with MCP_STATUS_INVALID_ARGUMENT.
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_http_transport(
    options: *mut mcp_client_options,
    transport: c_int,
) -> mcp_status {
    set(options, |o| {
        o.http.transport = match transport {
            t if t == HttpTransportKind::Auto as c_int => HttpTransportKind::Auto,
            t if t == HttpTransportKind::Streamable as c_int => HttpTransportKind::Streamable,
            t if t == HttpTransportKind::LegacySse as c_int => HttpTransportKind::LegacySse,
            _ => {
                return Err(Error::invalid(format!(
                    "unknown HTTP transport {transport}"
                )))
            }
        };
        Ok(())
    })
}

/// The proxy for every HTTP request: `http://[user:password@]host[:port]` or `https://...`
/// (credentials percent-encoded, sent as Proxy-Authorization and never shown in messages).
/// Requests go through a CONNECT tunnel, plain http ones too. NULL or "" removes it.
/// Rejected (MCP_STATUS_INVALID_ARGUMENT): another scheme, no host.
///
/// # Safety
/// `options` is NULL or live; `url` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_proxy(
    options: *mut mcp_client_options,
    url: *const c_char,
) -> mcp_status {
    set(options, |o| {
        let url = optional_str(url, "proxy URL")?;
        o.http.set_proxy(url)
    })
}

/// Hosts reached without the proxy, in curl's NO_PROXY syntax: comma-separated host names,
/// domain suffixes (".corp.example"), IP addresses, or "*" for every host. Replaces the
/// NO_PROXY of the environment. NULL removes the list.
///
/// # Safety
/// `options` is NULL or live; `list` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_noproxy(
    options: *mut mcp_client_options,
    list: *const c_char,
) -> mcp_status {
    set(options, |o| {
        o.http.no_proxy = optional_str(list, "no-proxy list")?.map(str::to_owned);
        Ok(())
    })
}

/// Whether HTTP clients also take their proxy from the environment: HTTPS_PROXY for https
/// URLs, HTTP_PROXY for http ones, ALL_PROXY for both, and NO_PROXY (lower-case names first).
/// Off by default; read when the client connects; an explicit proxy wins.
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_proxy_from_env(
    options: *mut mcp_client_options,
    from_env: bool,
) -> mcp_status {
    set(options, |o| {
        o.http.proxy_from_env = from_env;
        Ok(())
    })
}

/// Trusts the CA certificates of a PEM file (read now) for https, besides the bundled roots.
/// Rejected (MCP_STATUS_INVALID_ARGUMENT): a file that cannot be read or holds no certificate.
///
/// # Safety
/// `options` is NULL or live; `path` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_add_ca_file(
    options: *mut mcp_client_options,
    path: *const c_char,
) -> mcp_status {
    set(options, |o| {
        o.http.add_ca_file(required_str(path, "CA file")?)
    })
}

/// Trusts the CA certificates of every PEM file in a directory (read now; like curl's
/// --capath, files without a certificate are skipped, but one must have some).
///
/// # Safety
/// `options` is NULL or live; `path` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_add_ca_dir(
    options: *mut mcp_client_options,
    path: *const c_char,
) -> mcp_status {
    set(options, |o| {
        o.http.add_ca_dir(required_str(path, "CA directory")?)
    })
}

/// Trusts the CA certificates of a PEM text (one or more "BEGIN CERTIFICATE" blocks).
///
/// # Safety
/// `options` is NULL or live; `pem` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_add_ca_pem(
    options: *mut mcp_client_options,
    pem: *const c_char,
) -> mcp_status {
    set(options, |o| o.http.add_ca_pem(required_str(pem, "CA PEM")?))
}

/// Whether the added CAs (and the system store, if used) replace the bundled Mozilla roots
/// instead of adding to them. Off by default. A client left with no root fails to connect
/// with MCP_STATUS_INVALID_ARGUMENT.
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_ca_replace(
    options: *mut mcp_client_options,
    replace: bool,
) -> mcp_status {
    set(options, |o| {
        if replace {
            crate::transport::http::require_tls("replacing the root certificates")?;
        }
        o.http.replace_roots = replace;
        Ok(())
    })
}

/// Whether https also trusts the operating system's certificate store (on Linux the
/// distribution's CA bundle, or SSL_CERT_FILE / SSL_CERT_DIR). Off by default.
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_use_system_roots(
    options: *mut mcp_client_options,
    use_system: bool,
) -> mcp_status {
    set(options, |o| {
        if use_system {
            crate::transport::http::require_tls("the system certificate store")?;
        }
        o.http.system_roots = use_system;
        Ok(())
    })
}

/// The client certificate (PEM chain) and its private key (PEM: PKCS#8, PKCS#1 or SEC1) shown
/// to https servers that ask for one; the two paths may name the same file. Read and checked
/// now: both must parse and the key must belong to the certificate. NULL for both removes it.
///
/// # Safety
/// `options` is NULL or live; `cert_file` and `key_file` are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_client_cert(
    options: *mut mcp_client_options,
    cert_file: *const c_char,
    key_file: *const c_char,
) -> mcp_status {
    set(options, |o| {
        let cert = optional_str(cert_file, "client certificate file")?;
        let key = optional_str(key_file, "client key file")?;
        match (cert, key) {
            (None, None) => {
                o.http.clear_client_cert();
                Ok(())
            }
            (Some(cert), Some(key)) => o.http.set_client_cert_files(cert, key),
            _ => Err(Error::invalid(
                "a client certificate needs both its certificate file and its key file",
            )),
        }
    })
}
