//! The tasks extension from C: `tasks/get`, `tasks/update`, `tasks/cancel` by hand. Declaring
//! it and getting the task instead of its result are options (`client_options/tasks.rs`,
//! `request_options.rs`).

use super::client::{mcp_client, with_request};
use super::request_options::mcp_request_options;
use super::result::mcp_result;
use super::strings::{optional_json, required_str};
use crate::error::Error;
use std::ffi::c_char;

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
