//! `mcp_client_options` and `mcp_request_options`: builders with setters, so fields can be
//! added without breaking the ABI.
//!
//! A setter returns MCP_STATUS_OK or MCP_STATUS_INVALID_ARGUMENT. A rejected value is also
//! remembered, with its message, and reported by the call that uses the options (connect, or
//! the request), so an unchecked setter cannot fail silently.

use super::cancellation::mcp_cancellation;
use super::{guard, optional_json, optional_str, required_str};
use crate::cancellation::CancellationToken;
use crate::client::{ClientOptions, ConnectMode, RequestOptions};
use crate::error::{mcp_status, Error, Result, Status};
use crate::handlers::{mcp_log_level, HandlerError, LogLevel, ServerRequest};
use crate::protocol::jsonrpc::INTERNAL_ERROR;
use crate::protocol::versions;
use crate::transport::stdio::{StderrMode, DEFAULT_MAX_LINE_BYTES};
use serde_json::json;
use serde_json::Value;
use std::ffi::{c_char, c_int, c_void};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Options for a client. Copied when the client is created, so one may serve many clients.
pub struct mcp_client_options {
    pub(crate) client: ClientOptions,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) cwd: Option<PathBuf>,
    pub(crate) max_line_bytes: usize,
    pub(crate) stderr: StderrMode,
    pub(crate) error: Option<Error>,
    /// For `mcp_client_new_http`: everything but the URL.
    pub(crate) http: crate::transport::http::HttpConfig,
}

/// Options for one request: cancellation token, timeout, progress token, `_meta`.
pub struct mcp_request_options {
    pub(crate) request: RequestOptions,
    pub(crate) error: Option<Error>,
}

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

/// Receives each line a stdio server writes to stderr, without its newline, on the client's
/// stderr thread (which holds no lock of the library: it may call the client). `line` is valid
/// during the call only.
pub type mcp_stderr_callback =
    Option<unsafe extern "C" fn(userdata: *mut c_void, line: *const c_char)>;

/// A host pointer handed back to a host callback; the host makes it safe to use from our thread.
#[derive(Clone, Copy)]
pub(crate) struct UserData(pub *mut c_void);
// SAFETY: the pointer is only passed back to the host, whose docs say which thread calls it.
unsafe impl Send for UserData {}
unsafe impl Sync for UserData {}

/// Runs a setter: applies it, remembers a failure, and returns the status.
///
/// # Safety
/// `target` is NULL or a live handle.
pub(super) unsafe fn set<T: HasError>(
    target: *mut T,
    apply: impl FnOnce(&mut T) -> Result<()>,
) -> mcp_status {
    guard(
        || Status::InternalError,
        || {
            let Some(target) = target.as_mut() else {
                return Status::InvalidArgument;
            };
            match apply(target) {
                Ok(()) => Status::Ok,
                Err(error) => {
                    let status = error.status;
                    target.error().get_or_insert(error);
                    status
                }
            }
        },
    )
}

pub(super) trait HasError {
    fn error(&mut self) -> &mut Option<Error>;
}
impl HasError for mcp_client_options {
    fn error(&mut self) -> &mut Option<Error> {
        &mut self.error
    }
}
impl HasError for mcp_request_options {
    fn error(&mut self) -> &mut Option<Error> {
        &mut self.error
    }
}

/// A duration that must not be zero.
fn positive_ms(ms: u64, what: &str) -> Result<Duration> {
    match ms {
        0 => Err(Error::invalid(format!("{what} must be positive"))),
        ms => Ok(Duration::from_millis(ms)),
    }
}

/// Default client options: client info {"name":"mcpc","version":<library version>}, no
/// capabilities, no request timeout, a 30 s connect timeout, lines up to 4 MiB, 1000 pages,
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
            error: None,
            http: crate::transport::http::HttpConfig::new(""),
        }))
    })
}

/// Frees the options. NULL is accepted.
///
/// # Safety
/// `options` is NULL or options not yet freed.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_free(options: *mut mcp_client_options) {
    super::free_handle(options)
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
/// A request that times out returns MCP_STATUS_TIMEOUT and the server is told, as for a cancel.
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

/// How long `mcp_client_connect` waits for the handshake; must be positive (default 30000).
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

/// The longest line accepted from a stdio server (default 4 MiB). A longer line fails the
/// calls pending at that moment with MCP_STATUS_PROTOCOL_ERROR; reading goes on after it.
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
        if name.is_empty() || name.contains('=') {
            return Err(Error::invalid(
                "environment variable name must be non-empty, without '='",
            ));
        }
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
            0 => StderrMode::Tail,
            1 => StderrMode::Inherit,
            2 => StderrMode::Discard,
            _ => return Err(Error::invalid(format!("unknown stderr mode {mode}"))),
        };
        Ok(())
    })
}

/// Sends each stderr line of a stdio server to `callback` (the tail is kept too).
/// NULL `callback` goes back to the tail alone.
///
/// # Safety
/// `options` is NULL or live; `callback` is safe to call from another thread with `userdata`
/// for as long as any client made from these options is alive.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_stderr_callback(
    options: *mut mcp_client_options,
    callback: mcp_stderr_callback,
    userdata: *mut c_void,
) -> mcp_status {
    set(options, |o| {
        let userdata = UserData(userdata);
        o.stderr = match callback {
            None => StderrMode::Tail,
            Some(callback) => StderrMode::Callback(Arc::new(move |line: &str| {
                let userdata = userdata;
                let line = super::to_cstring(line);
                // A panic cannot come from C; this only guards our own conversion.
                let _ = std::panic::catch_unwind(|| callback(userdata.0, line.as_ptr()));
            })),
        };
        Ok(())
    })
}

/// Default request options: no token, the client's timeout, no progress token, no `_meta`.
/// Free with `mcp_request_options_free`. One options object may serve many calls at once.
#[no_mangle]
pub extern "C" fn mcp_request_options_new() -> *mut mcp_request_options {
    guard(std::ptr::null_mut, || {
        Box::into_raw(Box::new(mcp_request_options {
            request: RequestOptions::default(),
            error: None,
        }))
    })
}

/// Frees the options. NULL is accepted. Calls already made with them are unaffected.
///
/// # Safety
/// `options` is NULL or options not yet freed, and no call is reading them.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_options_free(options: *mut mcp_request_options) {
    super::free_handle(options)
}

/// The token that cancels calls made with these options (NULL: none). The options keep their
/// own reference, so the token handle may be freed first.
///
/// # Safety
/// `options` is NULL or live; `token` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_options_set_cancellation(
    options: *mut mcp_request_options,
    token: *const mcp_cancellation,
) -> mcp_status {
    set(options, |o| {
        o.request.cancellation = token.as_ref().map(|t| t.token.clone());
        Ok(())
    })
}

/// This request's timeout in milliseconds; 0 means none, even if the client has one.
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_options_set_timeout_ms(
    options: *mut mcp_request_options,
    ms: u64,
) -> mcp_status {
    set(options, |o| {
        o.request.timeout = Some(Duration::from_millis(ms));
        Ok(())
    })
}

/// A progress token sent as `params._meta.progressToken` (NULL: none).
///
/// # Safety
/// `options` is NULL or live; `token` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_options_set_progress_token(
    options: *mut mcp_request_options,
    token: *const c_char,
) -> mcp_status {
    set(options, |o| {
        o.request.progress_token = optional_str(token, "progress token")?.map(Into::into);
        Ok(())
    })
}

/// Extra `params._meta` entries, as a JSON object (NULL: none).
///
/// # Safety
/// `options` is NULL or live; `json` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_options_set_meta(
    options: *mut mcp_request_options,
    json: *const c_char,
) -> mcp_status {
    set(options, |o| {
        o.request.meta = match optional_json(json, "meta", true)? {
            Some(serde_json::Value::Object(map)) => Some(map),
            _ => None,
        };
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
            0 => ConnectMode::Auto,
            1 => ConnectMode::Legacy,
            2 => ConnectMode::Modern,
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
            if !versions::is_handshake_version(v) && !versions::is_modern_version(v) {
                return Err(Error::invalid(format!(
                    "unsupported protocol version {v:?}"
                )));
            }
        }
        o.client.protocol_version = version.map(str::to_owned);
        Ok(())
    })
}

/// How long the auto mode's `server/discover` probe waits (default 5000); must be positive.
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

/// Where a request handler puts its answer.
pub struct mcp_handler_reply {
    result: Option<Value>,
    error: Option<HandlerError>,
    cancellation: CancellationToken,
}

/// Whether the server cancelled the request being handled (or the call that met it was
/// cancelled). A long handler may poll it and give up; its answer is then not sent.
///
/// # Safety
/// `reply` is the pointer passed to the handler, during that call.
#[no_mangle]
pub unsafe extern "C" fn mcp_handler_reply_is_cancelled(reply: *const mcp_handler_reply) -> bool {
    guard(
        || false,
        || {
            reply
                .as_ref()
                .is_some_and(|r| r.cancellation.is_cancelled())
        },
    )
}

/// Answers a request the server makes of the client (`elicitation/create`,
/// `sampling/createMessage`, `roots/list`): receives the method and params (JSON), and sets the
/// result with `mcp_handler_reply_set_result` (returning true) or an error with
/// `mcp_handler_reply_set_error` (returning false). Handshake era: called on a library thread of
/// its own per server request, several at once. Modern era (`input_required` rounds): called on
/// the thread of the call that met the request. Either way it may make calls on the client
/// itself, and close or free it. Closing the client cancels its reply and waits for it (up to
/// 2 s, see `mcp_client_close`). `params_json` is valid during the call. Registering one declares the matching client
/// capability unless capabilities were set explicitly.
pub type mcp_request_handler = Option<
    unsafe extern "C" fn(
        userdata: *mut c_void,
        method: *const c_char,
        params_json: *const c_char,
        reply: *mut mcp_handler_reply,
    ) -> bool,
>;

/// Gives a handler's result (a JSON object, copied). Returns false if it is not one.
///
/// # Safety
/// `reply` is the pointer passed to the handler, during that call; `json` is NULL or
/// NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_handler_reply_set_result(
    reply: *mut mcp_handler_reply,
    json: *const c_char,
) -> bool {
    guard(
        || false,
        || match (reply.as_mut(), optional_json(json, "handler result", true)) {
            (Some(reply), Ok(Some(result))) => {
                reply.result = Some(result);
                true
            }
            _ => false,
        },
    )
}

/// Gives a handler's error: a JSON-RPC code and message (copied; NULL message: "handler failed").
///
/// # Safety
/// `reply` is the pointer passed to the handler, during that call; `message` is NULL or
/// NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_handler_reply_set_error(
    reply: *mut mcp_handler_reply,
    code: i64,
    message: *const c_char,
) {
    guard(
        || (),
        || {
            if let Some(reply) = reply.as_mut() {
                let message = (!message.is_null()).then(|| {
                    std::ffi::CStr::from_ptr(message)
                        .to_string_lossy()
                        .into_owned()
                });
                reply.error = Some(HandlerError {
                    code,
                    message: message.unwrap_or_else(|| "handler failed".to_owned()),
                });
            }
        },
    )
}

/// Registers the handler for one method the server may ask for (NULL handler: remove it).
///
/// # Safety
/// `options` is NULL or live; `method` is NULL or NUL-terminated; `handler` is safe to call
/// from any thread with `userdata` for as long as a client made from these options is alive.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_request_handler(
    options: *mut mcp_client_options,
    method: *const c_char,
    handler: mcp_request_handler,
    userdata: *mut c_void,
) -> mcp_status {
    set(options, |o| {
        let method = required_str(method, "method")?.to_owned();
        let Some(handler) = handler else {
            o.client.callbacks.request_handlers.remove(&method);
            return Ok(());
        };
        let userdata = UserData(userdata);
        let call = move |request: &ServerRequest| -> std::result::Result<Value, HandlerError> {
            let userdata = userdata;
            let method = super::to_cstring(request.method);
            let params = super::to_cstring(request.params.to_string());
            let mut reply = mcp_handler_reply {
                result: None,
                error: None,
                cancellation: request.cancellation.clone(),
            };
            let ok = handler(userdata.0, method.as_ptr(), params.as_ptr(), &mut reply);
            match (ok, reply.result, reply.error) {
                (true, Some(result), _) => Ok(result),
                (_, _, Some(error)) => Err(error),
                (true, None, None) => Err(HandlerError {
                    code: INTERNAL_ERROR,
                    message: "the handler set no result".into(),
                }),
                (false, _, None) => Err(HandlerError {
                    code: INTERNAL_ERROR,
                    message: "handler failed".into(),
                }),
            }
        };
        o.client
            .callbacks
            .request_handlers
            .insert(method, Arc::new(call));
        Ok(())
    })
}

/// Receives the library's own log messages (dropped tools, skipped frames, era fallback, dropped
/// callbacks), with an `mcp_log_level`, on the client's callback thread, or on the thread of the
/// call or close that noticed; never while the library holds a lock, so it may call the client.
/// `message` is valid during the call.
pub type mcp_log_callback = Option<
    unsafe extern "C" fn(userdata: *mut c_void, level: mcp_log_level, message: *const c_char),
>;

/// Sets the log callback (NULL: none).
///
/// # Safety
/// `options` is NULL or live; `callback` is safe to call from any thread with `userdata` for as
/// long as a client made from these options is alive.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_log_callback(
    options: *mut mcp_client_options,
    callback: mcp_log_callback,
    userdata: *mut c_void,
) -> mcp_status {
    set(options, |o| {
        let userdata = UserData(userdata);
        o.client.callbacks.on_log = callback.map(|callback| -> crate::handlers::LogHandler {
            Arc::new(move |level: LogLevel, message: &str| {
                let userdata = userdata;
                let message = super::to_cstring(message);
                callback(userdata.0, level, message.as_ptr());
            })
        });
        Ok(())
    })
}

/// Continues an `input_required` result by hand: the answers as a JSON object keyed like its
/// `inputRequests` (sent as `inputResponses`; NULL: none).
///
/// # Safety
/// `options` is NULL or live; `json` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_options_set_input_responses(
    options: *mut mcp_request_options,
    json: *const c_char,
) -> mcp_status {
    set(options, |o| {
        o.request.input_responses = optional_json(json, "input responses", true)?;
        Ok(())
    })
}

/// Continues an `input_required` result by hand: its `requestState`, sent back unchanged (NULL:
/// none).
///
/// # Safety
/// `options` is NULL or live; `state` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_options_set_request_state(
    options: *mut mcp_request_options,
    state: *const c_char,
) -> mcp_status {
    set(options, |o| {
        o.request.request_state = optional_str(state, "request state")?.map(str::to_owned);
        Ok(())
    })
}

/// Adds a header to every HTTP request of a client made by `mcp_client_new_http`, e.g.
/// ("Authorization", "Bearer ..."). Rejected (MCP_STATUS_INVALID_ARGUMENT): a name that is not
/// an HTTP token, a value with a control character (CR, LF, NUL...), and the headers the
/// transport sets itself (Accept, Content-Type, Mcp-Session-Id, MCP-Protocol-Version, Mcp-*...).
/// Never sent elsewhere: redirects are not followed.
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

/// How long opening an HTTP connection (TCP, then TLS) may take; must be positive (default
/// 10000). A refused connection fails at once whatever this says.
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
/// long; use request timeouts to bound calls).
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
