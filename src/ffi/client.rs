//! `mcp_client`: create, connect, one function per request, close, free.
//!
//! Every request function blocks the calling thread and may be called from many threads at
//! once on one client. Each returns a non-NULL `mcp_result *`.

use super::options::{mcp_client_options, mcp_request_options};
use super::result::{into_result, mcp_result};
use super::{guard, optional_json, optional_str, required_str, to_cstring};
use crate::client::{Client, ClientOptions, RequestOptions};
use crate::error::{Error, Result};
use crate::transport::http::HttpConfig;
use crate::transport::stdio::StdioConfig;
use serde_json::{json, Value};
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
    fn new(client: Result<Client>) -> *mut mcp_client {
        Box::into_raw(Box::new(mcp_client {
            client,
            strings: Mutex::default(),
        }))
    }

    fn get(&self) -> Result<&Client> {
        self.client.as_ref().map_err(Clone::clone)
    }

    /// A string owned by the client: the same pointer while the value is unchanged.
    fn keep(&self, key: &'static str, value: Option<String>) -> *const c_char {
        let Some(value) = value else {
            return std::ptr::null();
        };
        let mut strings = self.strings.lock().unwrap_or_else(|e| e.into_inner());
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
unsafe fn client_options<'a>(
    options: *const mcp_client_options,
) -> Result<Option<&'a mcp_client_options>> {
    match options.as_ref() {
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
/// directly (no shell; argv[0] is looked up in PATH). `options` may be NULL and is copied.
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
    let made = guard(
        || {
            Err(Error::new(
                crate::Status::InternalError,
                "internal error creating the client",
            ))
        },
        || {
            let argv = read_argv(argv)?;
            let mut config = StdioConfig::new(argv);
            let client_options = match client_options(options)? {
                Some(o) => {
                    config.env = o.env.clone();
                    config.cwd = o.cwd.clone();
                    config.max_line_bytes = o.max_line_bytes;
                    config.stderr = o.stderr.clone();
                    o.client.clone()
                }
                None => ClientOptions::default(),
            };
            Ok(Client::stdio(config, client_options))
        },
    );
    mcp_client::new(made)
}

/// A client over a transport of the host's own (see `mcp_transport_vtable`). The vtable is
/// copied; `userdata` is passed to every function in it and must stay valid until
/// `mcp_client_free` returns. Never returns NULL.
///
/// # Safety
/// `vtable` is NULL or points to a vtable; its functions follow the contract documented on it.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_new_custom(
    vtable: *const super::transport::mcp_transport_vtable,
    userdata: *mut std::ffi::c_void,
    options: *const mcp_client_options,
) -> *mut mcp_client {
    let made = guard(
        || {
            Err(Error::new(
                crate::Status::InternalError,
                "internal error creating the client",
            ))
        },
        || {
            let transport = super::transport::HostTransport::new(vtable, userdata)?;
            let client_options =
                client_options(options)?.map_or_else(ClientOptions::default, |o| o.client.clone());
            Ok(Client::custom(transport, client_options))
        },
    );
    mcp_client::new(made)
}

/// Starts the server and learns its protocol era. In the default auto mode it probes with
/// `server/discover` (2026-07-28) and falls back to the `initialize` handshake (offering
/// 2025-11-25; older versions the server counters with are accepted). The result is the
/// discover or `initialize` result. Calling it again while connected returns the same result.
/// Never cancelled on the wire; bounded by the connect (and discover) timeouts.
///
/// # Safety
/// `client` is NULL or a live client.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_connect(client: *mut mcp_client) -> *mut mcp_result {
    with_client(client, |c| c.connect())
}

/// Ends the session: every pending call returns MCP_STATUS_CLOSED at once, and request handlers
/// still running are told (`mcp_handler_reply_is_cancelled` turns true; their answers are not
/// sent). The callbacks already queued run; then no callback of any kind starts, and close
/// waits for those running on other threads to return. All this within 2 s: what is still
/// queued then is dropped. When close returns, no callback runs and none will, unless one ran
/// past those 2 s (logged); such a callback must not touch anything the host frees after close. Then the server's stdin is closed and it gets 2 s to exit, then SIGTERM, 2 s more,
/// then SIGKILL (its whole process group), and it is reaped. Later calls return
/// MCP_STATUS_CLOSED. Safe from any thread, more than once, and from inside a callback (close
/// does not wait for the callback it is called from). NULL is accepted.
///
/// # Safety
/// `client` is NULL or a live client.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_close(client: *mut mcp_client) {
    guard(
        || (),
        || {
            if let Some(Ok(client)) = client.as_ref().map(|c| &c.client) {
                client.close();
            }
        },
    )
}

/// Closes the client if needed (see `mcp_client_close`: when free returns, no callback runs, with
/// the same 2 s bound) and frees it. NULL is accepted. No other thread may be using the client
/// (close it first to end their calls, and let them return). A callback may free its own client
/// when nothing else uses it; it must not touch the client afterwards.
///
/// # Safety
/// `client` is NULL or a client not yet freed.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_free(client: *mut mcp_client) {
    super::free_handle(client)
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
        || {
            client
                .as_ref()
                .is_some_and(|c| c.get().is_ok_and(Client::is_modern))
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

/// `ping` (handshake era; a modern server answers MCP_STATUS_SERVER_ERROR -32601). The result
/// is `{}`.
///
/// # Safety
/// `client` is NULL or live; `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_ping(
    client: *mut mcp_client,
    options: *const mcp_request_options,
) -> *mut mcp_result {
    with_request(client, options, |c, o| c.ping(o))
}

/// `server/discover`. Servers of the handshake era answer MCP_STATUS_SERVER_ERROR (-32601).
///
/// # Safety
/// `client` is NULL or live; `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_discover(
    client: *mut mcp_client,
    options: *const mcp_request_options,
) -> *mut mcp_result {
    with_request(client, options, |c, o| c.discover(o))
}

/// `tools/call`. `arguments_json` is a JSON object or NULL. The result is the tool's result
/// object (`content`, `structuredContent`, `isError`).
///
/// # Safety
/// `client` is NULL or live; strings are NULL or NUL-terminated; `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_call_tool(
    client: *mut mcp_client,
    name: *const c_char,
    arguments_json: *const c_char,
    options: *const mcp_request_options,
) -> *mut mcp_result {
    with_request(client, options, |c, o| {
        let name = required_str(name, "tool name")?;
        let arguments = optional_json(arguments_json, "tool arguments", true)?;
        c.call_tool(name, arguments, o)
    })
}

/// `resources/read`. The result is `{"contents": [...]}`.
///
/// # Safety
/// `client` is NULL or live; `uri` is NULL or NUL-terminated; `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_read_resource(
    client: *mut mcp_client,
    uri: *const c_char,
    options: *const mcp_request_options,
) -> *mut mcp_result {
    with_request(client, options, |c, o| {
        c.read_resource(required_str(uri, "resource uri")?, o)
    })
}

/// `prompts/get`. `arguments_json` is a JSON object of strings, or NULL.
///
/// # Safety
/// `client` is NULL or live; strings are NULL or NUL-terminated; `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_get_prompt(
    client: *mut mcp_client,
    name: *const c_char,
    arguments_json: *const c_char,
    options: *const mcp_request_options,
) -> *mut mcp_result {
    with_request(client, options, |c, o| {
        let name = required_str(name, "prompt name")?;
        let arguments = optional_json(arguments_json, "prompt arguments", true)?;
        c.get_prompt(name, arguments, o)
    })
}

/// `completion/complete`. `ref_json` is e.g. `{"type":"ref/prompt","name":"greet"}`,
/// `argument_json` is `{"name":...,"value":...}`, `context_json` is a JSON object or NULL.
/// The result is `{"completion": {...}}`.
///
/// # Safety
/// `client` is NULL or live; strings are NULL or NUL-terminated; `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_complete(
    client: *mut mcp_client,
    ref_json: *const c_char,
    argument_json: *const c_char,
    context_json: *const c_char,
    options: *const mcp_request_options,
) -> *mut mcp_result {
    with_request(client, options, |c, o| {
        let reference = optional_json(ref_json, "completion ref", true)?
            .ok_or_else(|| Error::invalid("completion ref must not be NULL"))?;
        let argument = optional_json(argument_json, "completion argument", true)?
            .ok_or_else(|| Error::invalid("completion argument must not be NULL"))?;
        let context = optional_json(context_json, "completion context", true)?;
        c.complete(reference, argument, context, o)
    })
}

/// Any request by method name, for methods without a function of their own. `params_json` is
/// a JSON object or NULL. The result is the response's `result`.
///
/// # Safety
/// `client` is NULL or live; strings are NULL or NUL-terminated; `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_request(
    client: *mut mcp_client,
    method: *const c_char,
    params_json: *const c_char,
    options: *const mcp_request_options,
) -> *mut mcp_result {
    with_request(client, options, |c, o| {
        let method = required_str(method, "method")?;
        let params = optional_json(params_json, "params", true)?;
        c.request(method, params, o)
    })
}

/// `logging/setLevel` (handshake era only; a modern connection returns
/// MCP_STATUS_NOT_SUPPORTED and sends nothing). `level` is e.g. "debug", "info", "warning".
///
/// # Safety
/// `client` is NULL or live; `level` is NULL or NUL-terminated; `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_set_logging_level(
    client: *mut mcp_client,
    level: *const c_char,
    options: *const mcp_request_options,
) -> *mut mcp_result {
    with_request(client, options, |c, o| {
        c.set_logging_level(required_str(level, "level")?, o)
    })
}

/// `resources/subscribe` (handshake era only, else MCP_STATUS_NOT_SUPPORTED): updates arrive
/// through the resource-updated callback.
///
/// # Safety
/// `client` is NULL or live; `uri` is NULL or NUL-terminated; `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_subscribe_resource(
    client: *mut mcp_client,
    uri: *const c_char,
    options: *const mcp_request_options,
) -> *mut mcp_result {
    with_request(client, options, |c, o| {
        c.subscribe_resource(required_str(uri, "resource uri")?, o)
    })
}

/// `resources/unsubscribe` (handshake era only, else MCP_STATUS_NOT_SUPPORTED).
///
/// # Safety
/// `client` is NULL or live; `uri` is NULL or NUL-terminated; `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_unsubscribe_resource(
    client: *mut mcp_client,
    uri: *const c_char,
    options: *const mcp_request_options,
) -> *mut mcp_result {
    with_request(client, options, |c, o| {
        c.unsubscribe_resource(required_str(uri, "resource uri")?, o)
    })
}

// cbindgen does not expand macros, so each list function is written out.

/// One page of `tools/list`. `cursor` is NULL for the first page; the result's `nextCursor`
/// gives the next.
///
/// # Safety
/// `client` is NULL or live; `cursor` is NULL or NUL-terminated; `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_list_tools(
    client: *mut mcp_client,
    cursor: *const c_char,
    options: *const mcp_request_options,
) -> *mut mcp_result {
    with_request(client, options, |c, o| {
        c.list_tools(optional_str(cursor, "cursor")?, o)
    })
}

/// One page of `resources/list`. `cursor` is NULL for the first page; the result's `nextCursor`
/// gives the next.
///
/// # Safety
/// `client` is NULL or live; `cursor` is NULL or NUL-terminated; `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_list_resources(
    client: *mut mcp_client,
    cursor: *const c_char,
    options: *const mcp_request_options,
) -> *mut mcp_result {
    with_request(client, options, |c, o| {
        c.list_resources(optional_str(cursor, "cursor")?, o)
    })
}

/// One page of `resources/templates/list`. `cursor` is NULL for the first page; the result's `nextCursor`
/// gives the next.
///
/// # Safety
/// `client` is NULL or live; `cursor` is NULL or NUL-terminated; `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_list_resource_templates(
    client: *mut mcp_client,
    cursor: *const c_char,
    options: *const mcp_request_options,
) -> *mut mcp_result {
    with_request(client, options, |c, o| {
        c.list_resource_templates(optional_str(cursor, "cursor")?, o)
    })
}

/// One page of `prompts/list`. `cursor` is NULL for the first page; the result's `nextCursor`
/// gives the next.
///
/// # Safety
/// `client` is NULL or live; `cursor` is NULL or NUL-terminated; `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_list_prompts(
    client: *mut mcp_client,
    cursor: *const c_char,
    options: *const mcp_request_options,
) -> *mut mcp_result {
    with_request(client, options, |c, o| {
        c.list_prompts(optional_str(cursor, "cursor")?, o)
    })
}

/// Every tool, over all pages: `{"tools": [...]}`. One token cancels the walk; a repeated
/// cursor ends it; past the client's max pages it fails with MCP_STATUS_PAGINATION_LIMIT.
///
/// # Safety
/// `client` is NULL or live; `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_tools(
    client: *mut mcp_client,
    options: *const mcp_request_options,
) -> *mut mcp_result {
    with_request(client, options, |c, o| Ok(json!({ "tools": c.tools(o)? })))
}

/// Every resource, over all pages: `{"resources": [...]}`. One token cancels the walk; a repeated
/// cursor ends it; past the client's max pages it fails with MCP_STATUS_PAGINATION_LIMIT.
///
/// # Safety
/// `client` is NULL or live; `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_resources(
    client: *mut mcp_client,
    options: *const mcp_request_options,
) -> *mut mcp_result {
    with_request(client, options, |c, o| {
        Ok(json!({ "resources": c.resources(o)? }))
    })
}

/// Every resource template, over all pages: `{"resourceTemplates": [...]}`. One token cancels the walk; a repeated
/// cursor ends it; past the client's max pages it fails with MCP_STATUS_PAGINATION_LIMIT.
///
/// # Safety
/// `client` is NULL or live; `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_resource_templates(
    client: *mut mcp_client,
    options: *const mcp_request_options,
) -> *mut mcp_result {
    with_request(client, options, |c, o| {
        Ok(json!({ "resourceTemplates": c.resource_templates(o)? }))
    })
}

/// Every prompt, over all pages: `{"prompts": [...]}`. One token cancels the walk; a repeated
/// cursor ends it; past the client's max pages it fails with MCP_STATUS_PAGINATION_LIMIT.
///
/// # Safety
/// `client` is NULL or live; `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_prompts(
    client: *mut mcp_client,
    options: *const mcp_request_options,
) -> *mut mcp_result {
    with_request(client, options, |c, o| {
        Ok(json!({ "prompts": c.prompts(o)? }))
    })
}

unsafe fn with_client(
    client: *const mcp_client,
    body: impl FnOnce(&Client) -> Result<Value>,
) -> *mut mcp_result {
    into_result(|| {
        let client = client
            .as_ref()
            .ok_or_else(|| Error::invalid("client must not be NULL"))?;
        body(client.get()?)
    })
}

unsafe fn with_request(
    client: *const mcp_client,
    options: *const mcp_request_options,
    body: impl FnOnce(&Client, &RequestOptions) -> Result<Value>,
) -> *mut mcp_result {
    with_client(client, |c| {
        let default = RequestOptions::default();
        let options = match options.as_ref() {
            None => &default,
            Some(o) => match &o.error {
                Some(error) => return Err(error.clone()),
                None => &o.request,
            },
        };
        body(c, options)
    })
}

unsafe fn getter(
    client: *const mcp_client,
    key: &'static str,
    read: impl FnOnce(&Client) -> Option<String>,
) -> *const c_char {
    guard(std::ptr::null, || match client.as_ref() {
        Some(handle) => match handle.get() {
            Ok(c) => handle.keep(key, read(c)),
            Err(_) => std::ptr::null(),
        },
        None => std::ptr::null(),
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
    let made = guard(
        || {
            Err(Error::new(
                crate::Status::InternalError,
                "internal error creating the client",
            ))
        },
        || {
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
        },
    );
    mcp_client::new(made)
}
