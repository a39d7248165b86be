//! The tasks extension from C: declaring it, getting the task instead of its result, and
//! `tasks/get`, `tasks/update`, `tasks/cancel` by hand.

use super::client::{mcp_client, with_request};
use super::client_options::mcp_client_options;
use super::request_options::mcp_request_options;
use super::result::mcp_result;
use super::setter::set;
use super::status::mcp_status;
use super::strings::{optional_json, required_str};
use crate::error::Error;
use std::ffi::c_char;

/// Declares the tasks extension (`io.modelcontextprotocol/tasks`, 2026-07-28 era; default off):
/// the server may then answer `tools/call` with a task. The call polls `tasks/get` (at the
/// task's `pollIntervalMs`, else backing off from 50 ms to 1 s) until the task ends, and returns
/// its result as if the call had been plain: a failed task is the call's MCP_STATUS_SERVER_ERROR,
/// one the server cancelled is MCP_STATUS_CANCELLED. Status changes reach the progress callbacks
/// (message "<status>" or "<status>: <statusMessage>"). Input the task asks for is answered
/// through the request handlers and sent with `tasks/update`. Cancelling the call (or its
/// timeout) returns at once and sends one `tasks/cancel` for the task from another thread.
/// On a 2025-11-25 connection, the experimental tasks of that era where the server offers them:
/// a tool listed (on this connection) with `execution.taskSupport` optional or required is
/// called with a `task` member, polled with `tasks/get` (`pollInterval`), and its result is what
/// `tasks/result` gives.
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_tasks(
    options: *mut mcp_client_options,
    enabled: bool,
) -> mcp_status {
    set(options, |o| {
        o.client.tasks = enabled;
        Ok(())
    })
}

/// A call answered with a task returns the task itself (`resultType` "task", `taskId`,
/// `status`...) instead of polling it; drive it with `mcp_client_get_task`,
/// `mcp_client_update_task` and `mcp_client_cancel_task`.
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_options_set_return_task(
    options: *mut mcp_request_options,
    enabled: bool,
) -> mcp_status {
    set(options, |o| {
        o.request.return_task = enabled;
        Ok(())
    })
}

/// `tasks/get`: the task now (`status`, `statusMessage`, and `result`, `error` or
/// `inputRequests` as the status has them).
///
/// # Safety
/// `client` is NULL or live; `task_id` is NULL or NUL-terminated; `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_get_task(
    client: *mut mcp_client,
    task_id: *const c_char,
    options: *const mcp_request_options,
) -> *mut mcp_result {
    with_request(client, options, |c, o| {
        c.get_task(required_str(task_id, "task id")?, o)
    })
}

/// `tasks/update`: answers a task's `inputRequests`. `input_responses_json` is an object keyed
/// as they are.
///
/// # Safety
/// `client` is NULL or live; strings are NULL or NUL-terminated; `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_update_task(
    client: *mut mcp_client,
    task_id: *const c_char,
    input_responses_json: *const c_char,
    options: *const mcp_request_options,
) -> *mut mcp_result {
    with_request(client, options, |c, o| {
        let task_id = required_str(task_id, "task id")?;
        let responses = optional_json(input_responses_json, "input responses", true)?
            .ok_or_else(|| Error::invalid("input responses must not be NULL"))?;
        c.update_task(task_id, responses, o)
    })
}

/// `tasks/cancel`: asks the server to cancel the task, and waits for its acknowledgement (the
/// task may still end otherwise: cancellation is cooperative).
///
/// # Safety
/// `client` is NULL or live; `task_id` is NULL or NUL-terminated; `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_cancel_task(
    client: *mut mcp_client,
    task_id: *const c_char,
    options: *const mcp_request_options,
) -> *mut mcp_result {
    with_request(client, options, |c, o| {
        c.cancel_task(required_str(task_id, "task id")?, o)
    })
}
