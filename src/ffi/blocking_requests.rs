//! One function per MCP request on an `mcp_client`. Each blocks the calling thread, may be
//! called from many threads at once on one client, and returns a non-NULL `mcp_result *`.
//! A request's C arguments are read by `request_arguments`, as its constructor reads them.

use super::client::{mcp_client, with_request};
use super::request_arguments as arguments;
use super::request_options::mcp_request_options;
use super::result::mcp_result;
use super::strings::{optional_json, optional_str};
use crate::client::Request;
use crate::error::{Error, Result};
use std::ffi::c_char;

/// Runs the request that `request` makes of the C arguments (their errors are the result's).
///
/// # Safety
/// `client` and `options` are NULL or live.
unsafe fn run(
    client: *mut mcp_client,
    options: *const mcp_request_options,
    request: impl FnOnce() -> Result<Request>,
) -> *mut mcp_result {
    with_request(client, options, |c, o| c.run_reply(request()?, o))
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
    run(client, options, || Ok(Request::Ping))
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
    run(client, options, || Ok(Request::Discover))
}

/// `tools/call`. `arguments_json` is a JSON object or NULL; it is checked, then sent as written
/// (its spacing, key order and numbers untouched). The result is the tool's result object
/// (`content`, `structuredContent`, `isError`).
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
    run(client, options, || {
        arguments::call_tool(name, arguments_json)
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
    run(client, options, || arguments::read_resource(uri))
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
    run(client, options, || {
        arguments::get_prompt(name, arguments_json)
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
    run(client, options, || {
        arguments::complete(ref_json, argument_json, context_json)
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
    run(client, options, || arguments::other(method, params_json))
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
    run(client, options, || arguments::set_logging_level(level))
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
    run(client, options, || arguments::subscribe_resource(uri))
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
    run(client, options, || arguments::unsubscribe_resource(uri))
}

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
    run(client, options, || {
        arguments::list_page(cursor, |cursor| Request::ListTools { cursor })
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
    run(client, options, || {
        arguments::list_page(cursor, |cursor| Request::ListResources { cursor })
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
    run(client, options, || {
        arguments::list_page(cursor, |cursor| Request::ListResourceTemplates { cursor })
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
    run(client, options, || {
        arguments::list_page(cursor, |cursor| Request::ListPrompts { cursor })
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
    run(client, options, || Ok(Request::Tools))
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
    run(client, options, || Ok(Request::Resources))
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
    run(client, options, || Ok(Request::ResourceTemplates))
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
    run(client, options, || Ok(Request::Prompts))
}

/// Every skill the server lists (the Skills extension, `skills/list` over all pages):
/// `{"skills": [...]}`, each entry a manifest of the skill's files with their digests. No file
/// is read. MCP_STATUS_NOT_SUPPORTED, with nothing sent, when the server did not declare
/// `io.modelcontextprotocol/skills`.
///
/// # Safety
/// `client` is NULL or live; `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_skills(
    client: *mut mcp_client,
    options: *const mcp_request_options,
) -> *mut mcp_result {
    with_request(client, options, |c, o| {
        Ok(serde_json::json!({ "skills": c.skills(o)? }))
    })
}

/// Reads one file of a skill (`resources/read`) and verifies it against the skill's entry.
/// `skill_json` is one entry of mcp_client_skills()' `skills`; `uri` is the file to read, NULL
/// for the skill's `SKILL.md`. A file the entry does not list is MCP_STATUS_INVALID_ARGUMENT
/// (nothing sent). Content whose size or SHA-256 digest differs from the entry's, or a
/// `SKILL.md` whose YAML frontmatter differs from the entry's `frontmatter`, is
/// MCP_STATUS_PROTOCOL_ERROR: the content is not returned. The result is the read's
/// `{"contents": [...]}`.
///
/// # Safety
/// `client` is NULL or live; strings are NULL or NUL-terminated; `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_read_skill(
    client: *mut mcp_client,
    skill_json: *const c_char,
    uri: *const c_char,
    options: *const mcp_request_options,
) -> *mut mcp_result {
    with_request(client, options, |c, o| {
        let skill = optional_json(skill_json, "skill entry", true)?
            .ok_or_else(|| Error::invalid("skill entry must not be NULL"))?;
        let uri = optional_str(uri, "skill file uri")?;
        c.read_skill(&skill, uri, o)
    })
}
