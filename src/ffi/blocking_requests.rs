//! One function per MCP request on an `mcp_client`. Each blocks the calling thread, may be
//! called from many threads at once on one client, and returns a non-NULL `mcp_result *`.

use super::client::{mcp_client, with_request};
use super::request_options::mcp_request_options;
use super::result::mcp_result;
use super::strings::{optional_arguments, optional_json, optional_str, required_str};
use crate::client::Request;
use crate::error::Error;
use serde_json::json;
use std::ffi::c_char;

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
    with_request(client, options, |c, o| c.run_reply(Request::Ping, o))
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
    with_request(client, options, |c, o| c.run_reply(Request::Discover, o))
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
    with_request(client, options, |c, o| {
        let name = required_str(name, "tool name")?;
        let arguments = optional_arguments(arguments_json, "tool arguments")?;
        let name = name.to_owned();
        c.run_reply(Request::CallTool { name, arguments }, o)
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
        let uri = required_str(uri, "resource uri")?.to_owned();
        c.run_reply(Request::ReadResource { uri }, o)
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
        let arguments = optional_arguments(arguments_json, "prompt arguments")?;
        let name = name.to_owned();
        c.run_reply(Request::GetPrompt { name, arguments }, o)
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
        let method = method.to_owned();
        c.run_reply(Request::Other { method, params }, o)
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
        let cursor = optional_str(cursor, "cursor")?.map(str::to_owned);
        c.run_reply(Request::ListTools { cursor }, o)
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
        let cursor = optional_str(cursor, "cursor")?.map(str::to_owned);
        c.run_reply(Request::ListResources { cursor }, o)
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
        let cursor = optional_str(cursor, "cursor")?.map(str::to_owned);
        c.run_reply(Request::ListResourceTemplates { cursor }, o)
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
        let cursor = optional_str(cursor, "cursor")?.map(str::to_owned);
        c.run_reply(Request::ListPrompts { cursor }, o)
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
        Ok(json!({ "skills": c.skills(o)? }))
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
