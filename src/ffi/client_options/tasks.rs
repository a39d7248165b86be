//! The client option that declares the tasks extension; `tasks/get`, `tasks/update` and
//! `tasks/cancel` by hand are in `ffi::tasks`.

use super::mcp_client_options;
use crate::ffi::setter::set;
use crate::ffi::status::mcp_status;

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
