//! The starts: `mcp_client_start` and its neighbours start an `mcp_request` without blocking;
//! its `mcp_result` goes to an `mcp_completion_queue` or to a callback on a library thread.

use super::boundary::{borrow, borrow_mut};
use super::callbacks::UserData;
use super::client::mcp_client;
use super::completion_queue::mcp_completion_queue;
use super::guard;
use super::request_constructors::mcp_request;
use super::request_options::mcp_request_options;
use super::result::{into_result, mcp_result};
use super::status::mcp_status;
use crate::client::{Request, RequestOptions};
use crate::engine::completer::Finish;
use crate::error::Result;
use crate::protocol::reply::Reply;
use std::ffi::c_void;

/// Receives one completion: the tag given to `mcp_client_start_callback` and the result, which
/// the callback owns (free it with `mcp_result_free`, now or later).
pub type mcp_completion_callback =
    Option<unsafe extern "C" fn(userdata: *mut c_void, tag: u64, result: *mut mcp_result)>;

/// Starts `request` without blocking; its completion goes to `queue` with `tag`.
///
/// Returns MCP_STATUS_OK when the request was started: then exactly one completion comes,
/// whatever happens (a bad request or option, NOT_CONNECTED, a server error, CANCELLED,
/// TIMEOUT, CLOSED...). Any other status means nothing was started and no completion comes:
/// MCP_STATUS_INVALID_ARGUMENT for a NULL client, request or queue, or a client that could not
/// be made (its reason is what `mcp_client_connect` reports), MCP_STATUS_CLOSED once the client
/// is closed.
///
/// The options' cancellation token cancels it as it cancels a blocking call: at once, with
/// CANCELLED, the server told once if the request reached the wire, nothing sent if the token
/// was cancelled first. The options' timeouts apply as for a blocking call. The request's
/// first message is written on this thread.
///
/// Closing the client (or freeing it) completes every request still pending with
/// MCP_STATUS_CLOSED before it returns.
///
/// # Safety
/// `client`, `request`, `options` and `queue` are NULL or live.
// Its completion is made by the pop that meets the server's answer (see
// `mcp_completion_queue`), or pushed by a library thread (a cancel, a timeout, close).
#[no_mangle]
pub unsafe extern "C" fn mcp_client_start(
    client: *mut mcp_client,
    request: *const mcp_request,
    options: *const mcp_request_options,
    queue: *mut mcp_completion_queue,
    tag: u64,
) -> mcp_status {
    let Some(queue) = borrow(queue).map(|q| q.queue.clone()) else {
        return mcp_status::InvalidArgument;
    };
    // Pushing to the queue neither blocks nor calls the host: the call is finished by the
    // host's pop that meets it, with no hand-off to the completion thread.
    let finish = Finish::Inbox(queue.clone());
    start(client, request, options, finish, move |result| {
        queue.push(tag, result)
    })
}

/// As `mcp_client_start`, with the completion given to `callback(userdata, tag, result)` on
/// the client's completion thread: a thread of the library's completion pool (named
/// `mcpc-complete`, shared by every client of the process; a client holds none while it has
/// nothing to complete). One client's completions run one at a time, in the order they were
/// decided; another client's run meanwhile.
///
/// The callback may call the library: start other requests, make blocking calls (which hold
/// up the client's other completions meanwhile), cancel, close the client, and free it (the completions
/// still pending then run, with CLOSED, before that free returns). It must return: close waits
/// for it (2 s at most, then it returns without it, and no completion callback starts after).
///
/// The contract for close and free: every request started on the client completes exactly
/// once; the completions still pending complete with CLOSED during `mcp_client_close` (or
/// free); once either has returned, no completion callback of that client runs (unless the
/// 2 s bound was hit by a callback that does not return), so `userdata` may be freed then.
///
/// # Safety
/// `client`, `request` and `options` are NULL or live; `callback` is safe to call from another
/// thread with `userdata` until its completion (or until the client's close or free returns).
#[no_mangle]
pub unsafe extern "C" fn mcp_client_start_callback(
    client: *mut mcp_client,
    request: *const mcp_request,
    options: *const mcp_request_options,
    callback: mcp_completion_callback,
    userdata: *mut c_void,
    tag: u64,
) -> mcp_status {
    let Some(callback) = callback else {
        return mcp_status::InvalidArgument;
    };
    let userdata = UserData(userdata);
    start(
        client,
        request,
        options,
        Finish::CompletionThread,
        move |result| {
            let userdata = userdata;
            // SAFETY: the host's contract for `callback`; the result is handed over.
            unsafe { callback(userdata.0, tag, Box::into_raw(result)) }
        },
    )
}

/// Starts `count` requests on `client`, as `mcp_client_start` starts each (`requests[i]` with
/// `options[i]`, its completion going to `queue` with `tags[i]`), and sends them together: on
/// stdio their messages leave in one write, so the server wakes once for the lot. An event
/// loop that refills its window of calls after popping its completions starts the refill
/// with this rather than one `mcp_client_start` each (measured in docs/benchmarks.md).
///
/// `options` may be NULL (every request with the default options), and so may any
/// `options[i]`. `*started` (when `started` is not NULL) is set to how many were started.
///
/// Returns MCP_STATUS_OK when all `count` were started: then each completes exactly once, as
/// with `mcp_client_start`. MCP_STATUS_INVALID_ARGUMENT, with nothing started, for a NULL or
/// unusable client (as `mcp_client_start`), a NULL queue, a NULL `requests` or `tags` array
/// (count > 0) or a NULL request in it. MCP_STATUS_CLOSED once the client is closed: if it
/// closed during the batch, the first `*started` requests were started (and complete with
/// CLOSED) and the rest were not. A `count` of 0 starts nothing and returns MCP_STATUS_OK.
///
/// # Safety
/// `client`, `queue` and every non-NULL element are NULL or live; `requests` and `tags` are
/// NULL or point to `count` elements, and so does `options` when it is not NULL; `started` is
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_start_batch(
    client: *mut mcp_client,
    requests: *const *const mcp_request,
    options: *const *const mcp_request_options,
    queue: *mut mcp_completion_queue,
    tags: *const u64,
    count: usize,
    started: *mut usize,
) -> mcp_status {
    let mut count_started = 0;
    let status = guard(
        || mcp_status::InternalError,
        || {
            let (Some(client), Some(queue)) = (borrow(client), borrow(queue)) else {
                return mcp_status::InvalidArgument;
            };
            let Ok(client) = client.get() else {
                return mcp_status::InvalidArgument;
            };
            if count == 0 {
                return mcp_status::Ok;
            }
            // SAFETY: the caller's contract: each array is NULL or holds `count` elements.
            let (Some(requests), Some(tags)) = (unsafe { array(requests, count) }, unsafe {
                array(tags, count)
            }) else {
                return mcp_status::InvalidArgument;
            };
            let options = unsafe { array(options, count) };
            let mut checked = Vec::with_capacity(count);
            for &request in requests {
                let Some(request) = borrow(request) else {
                    return mcp_status::InvalidArgument; // nothing started yet
                };
                checked.push(request);
            }
            let default = RequestOptions::default();
            let starts = checked
                .into_iter()
                .zip(tags)
                .enumerate()
                .map(|(i, (request, &tag))| {
                    let options = options.map_or(std::ptr::null(), |o| o[i]);
                    let (request, opts) = prepared(request, options, &default);
                    let queue = queue.queue.clone();
                    (
                        request,
                        opts,
                        completion(move |result| queue.push(tag, result)),
                    )
                });
            let finish = Finish::Inbox(queue.queue.clone());
            let (n, outcome) = client.start_checked_together(starts, finish);
            count_started = n;
            match outcome {
                Ok(()) => mcp_status::Ok,
                Err(error) => error.status,
            }
        },
    );
    // SAFETY: the caller's contract (NULL or writable).
    if let Some(started) = unsafe { borrow_mut(started) } {
        *started = count_started;
    }
    status
}

/// The `count` elements at `first`, or None for NULL (or a count no array can hold).
///
/// # Safety
/// `first` is NULL or points to `count` initialised elements, live for `'a`.
unsafe fn array<'a, T>(first: *const T, count: usize) -> Option<&'a [T]> {
    if first.is_null() || count > isize::MAX as usize / std::mem::size_of::<T>().max(1) {
        return None;
    }
    // SAFETY: non-NULL and `count` elements, by the caller's contract.
    Some(unsafe { std::slice::from_raw_parts(first, count) })
}

/// The request to start and the options to start it with: a request whose options could not
/// be made completes with their error.
///
/// # Safety
/// `options` is NULL or live.
unsafe fn prepared<'o>(
    request: &mcp_request,
    options: *const mcp_request_options,
    default: &'o RequestOptions,
) -> (Result<Request>, &'o RequestOptions) {
    match borrow(options) {
        None => (request.request.clone(), default),
        Some(o) => match &o.error {
            Some(error) => (Err(error.clone()), default),
            None => (request.request.clone(), &o.request),
        },
    }
}

/// What a started request's outcome goes through: made an `mcp_result` for `deliver`.
fn completion(
    deliver: impl FnOnce(Box<mcp_result>) + Send + 'static,
) -> impl FnOnce(Result<Reply>) + Send + 'static {
    move |outcome: Result<Reply>| {
        // SAFETY: `into_result` returns a pointer from `Box::into_raw`.
        let result = unsafe { Box::from_raw(into_result(|| outcome)) };
        deliver(result);
    }
}

/// Starts the request, turning its outcome into an `mcp_result` for `deliver`.
///
/// # Safety
/// As for `mcp_client_start`.
unsafe fn start(
    client: *mut mcp_client,
    request: *const mcp_request,
    options: *const mcp_request_options,
    finish: Finish,
    deliver: impl FnOnce(Box<mcp_result>) + Send + 'static,
) -> mcp_status {
    guard(
        || mcp_status::InternalError,
        || {
            let (Some(client), Some(request)) = (borrow(client), borrow(request)) else {
                return mcp_status::InvalidArgument;
            };
            let Ok(client) = client.get() else {
                return mcp_status::InvalidArgument;
            };
            let default = RequestOptions::default();
            let (request, opts) = prepared(request, options, &default);
            match client.start_checked(request, opts, finish, completion(deliver)) {
                Ok(()) => mcp_status::Ok,
                Err(error) => error.status,
            }
        },
    )
}
