//! The completion API: start any request without blocking (`mcp_client_start` with an
//! `mcp_request` made by one of the `mcp_request_*` constructors) and get its `mcp_result`
//! through a pollable `mcp_completion_queue` or a callback on a library thread.

use super::boundary::{borrow, borrow_mut};
use super::callbacks::UserData;
use super::client::mcp_client;
use super::request_options::mcp_request_options;
use super::result::{into_result, mcp_result};
use super::status::mcp_status;
use super::strings::{optional_arguments, optional_json, optional_str, required_str};
use super::{free_handle, guard};
use crate::client::{Request, RequestOptions};
use crate::deferred_wakes::{wake_soon, Wake};
use crate::engine::completer::{Finish, Inbox, Ready};
use crate::error::{Error, Result, Status};
use crate::protocol::reply::Reply;
use crate::sync::lock;
#[cfg(unix)]
use crate::transport::wake::WakePipe as Signal;
use std::collections::VecDeque;
use std::ffi::{c_char, c_int, c_void};
use std::sync::{Arc, Mutex};

/// A request to start with `mcp_client_start` (or `mcp_client_start_callback`). Made by an
/// `mcp_request_*` constructor, never NULL; a constructor given a bad argument makes a request
/// whose completion is MCP_STATUS_INVALID_ARGUMENT. One request may be started many times.
/// Free it with `mcp_request_free` (at any time after the start returned).
pub struct mcp_request {
    request: Result<Request>,
}

fn make_request(build: impl FnOnce() -> Result<Request>) -> *mut mcp_request {
    let request = guard(
        || {
            Err(Error::new(
                Status::InternalError,
                "internal error: the library panicked",
            ))
        },
        build,
    );
    Box::into_raw(Box::new(mcp_request { request }))
}

fn cursor_request(
    cursor: *const c_char,
    make: impl FnOnce(Option<String>) -> Request,
) -> *mut mcp_request {
    // SAFETY: the caller's contract (NULL or NUL-terminated).
    make_request(|| {
        Ok(make(
            unsafe { optional_str(cursor, "cursor")? }.map(str::to_owned),
        ))
    })
}

/// `ping`.
#[no_mangle]
pub extern "C" fn mcp_request_ping() -> *mut mcp_request {
    make_request(|| Ok(Request::Ping))
}

/// `server/discover`.
#[no_mangle]
pub extern "C" fn mcp_request_discover() -> *mut mcp_request {
    make_request(|| Ok(Request::Discover))
}

/// `tools/call`, as `mcp_client_call_tool`.
///
/// # Safety
/// Strings are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_call_tool(
    name: *const c_char,
    arguments_json: *const c_char,
) -> *mut mcp_request {
    make_request(|| {
        Ok(Request::CallTool {
            name: required_str(name, "tool name")?.to_owned(),
            arguments: optional_arguments(arguments_json, "tool arguments")?,
        })
    })
}

/// `resources/read`, as `mcp_client_read_resource`.
///
/// # Safety
/// `uri` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_read_resource(uri: *const c_char) -> *mut mcp_request {
    make_request(|| {
        let uri = required_str(uri, "resource uri")?.to_owned();
        Ok(Request::ReadResource { uri })
    })
}

/// `prompts/get`, as `mcp_client_get_prompt`.
///
/// # Safety
/// Strings are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_get_prompt(
    name: *const c_char,
    arguments_json: *const c_char,
) -> *mut mcp_request {
    make_request(|| {
        Ok(Request::GetPrompt {
            name: required_str(name, "prompt name")?.to_owned(),
            arguments: optional_arguments(arguments_json, "prompt arguments")?,
        })
    })
}

/// `completion/complete`, as `mcp_client_complete`.
///
/// # Safety
/// Strings are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_complete(
    ref_json: *const c_char,
    argument_json: *const c_char,
    context_json: *const c_char,
) -> *mut mcp_request {
    make_request(|| {
        Ok(Request::Complete {
            reference: optional_json(ref_json, "completion ref", true)?
                .ok_or_else(|| Error::invalid("completion ref must not be NULL"))?,
            argument: optional_json(argument_json, "completion argument", true)?
                .ok_or_else(|| Error::invalid("completion argument must not be NULL"))?,
            context: optional_json(context_json, "completion context", true)?,
        })
    })
}

/// Any request by method name, as `mcp_client_request`.
///
/// # Safety
/// Strings are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_other(
    method: *const c_char,
    params_json: *const c_char,
) -> *mut mcp_request {
    make_request(|| {
        Ok(Request::Other {
            method: required_str(method, "method")?.to_owned(),
            params: optional_json(params_json, "params", true)?,
        })
    })
}

/// `logging/setLevel`, as `mcp_client_set_logging_level`.
///
/// # Safety
/// `level` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_set_logging_level(level: *const c_char) -> *mut mcp_request {
    make_request(|| {
        let level = required_str(level, "level")?.to_owned();
        Ok(Request::SetLoggingLevel { level })
    })
}

/// `resources/subscribe`, as `mcp_client_subscribe_resource`.
///
/// # Safety
/// `uri` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_subscribe_resource(uri: *const c_char) -> *mut mcp_request {
    make_request(|| {
        let uri = required_str(uri, "resource uri")?.to_owned();
        Ok(Request::SubscribeResource { uri })
    })
}

/// `resources/unsubscribe`, as `mcp_client_unsubscribe_resource`.
///
/// # Safety
/// `uri` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_unsubscribe_resource(uri: *const c_char) -> *mut mcp_request {
    make_request(|| {
        let uri = required_str(uri, "resource uri")?.to_owned();
        Ok(Request::UnsubscribeResource { uri })
    })
}

/// One page of `tools/list`; `cursor` is NULL for the first.
///
/// # Safety
/// `cursor` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_list_tools(cursor: *const c_char) -> *mut mcp_request {
    cursor_request(cursor, |cursor| Request::ListTools { cursor })
}

/// One page of `resources/list`; `cursor` is NULL for the first.
///
/// # Safety
/// `cursor` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_list_resources(cursor: *const c_char) -> *mut mcp_request {
    cursor_request(cursor, |cursor| Request::ListResources { cursor })
}

/// One page of `resources/templates/list`; `cursor` is NULL for the first.
///
/// # Safety
/// `cursor` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_list_resource_templates(
    cursor: *const c_char,
) -> *mut mcp_request {
    cursor_request(cursor, |cursor| Request::ListResourceTemplates { cursor })
}

/// One page of `prompts/list`; `cursor` is NULL for the first.
///
/// # Safety
/// `cursor` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_list_prompts(cursor: *const c_char) -> *mut mcp_request {
    cursor_request(cursor, |cursor| Request::ListPrompts { cursor })
}

/// Every tool over all pages (`{"tools": [...]}`), as `mcp_client_tools`.
#[no_mangle]
pub extern "C" fn mcp_request_tools() -> *mut mcp_request {
    make_request(|| Ok(Request::Tools))
}

/// Every resource over all pages (`{"resources": [...]}`).
#[no_mangle]
pub extern "C" fn mcp_request_resources() -> *mut mcp_request {
    make_request(|| Ok(Request::Resources))
}

/// Every resource template over all pages (`{"resourceTemplates": [...]}`).
#[no_mangle]
pub extern "C" fn mcp_request_resource_templates() -> *mut mcp_request {
    make_request(|| Ok(Request::ResourceTemplates))
}

/// Every prompt over all pages (`{"prompts": [...]}`).
#[no_mangle]
pub extern "C" fn mcp_request_prompts() -> *mut mcp_request {
    make_request(|| Ok(Request::Prompts))
}

/// Frees a request; NULL is accepted. Requests already started are not affected.
///
/// # Safety
/// `request` is NULL or a request not freed yet.
#[no_mangle]
pub unsafe extern "C" fn mcp_request_free(request: *mut mcp_request) {
    free_handle(request)
}

/// A queue of completions with a file descriptor for the host's event loop (poll, epoll,
/// kqueue, a GLib/libuv/Qt watcher; on Windows an event object, `mcp_completion_queue_event`,
/// signaled whenever the descriptor would be readable): the descriptor becomes readable when a
/// completion is pushed onto the empty queue, and stays readable until
/// `mcp_completion_queue_pop` finds the queue empty. So, woken, pop until it returns false
/// (then the descriptor is not readable until the next completion). Rarely, it is readable
/// with nothing to pop: that pop returns false and settles it. Only read it through
/// `mcp_completion_queue_pop`: never read, write or close the descriptor yourself. One queue
/// may serve many clients and threads.
//
// Readable with nothing to pop: a completion taken before its wake-up was written, or one page
// of an all-pages request, whose next page then goes out.
//
// A server's answer is finished into its completion by the pop that meets it, on the thread
// that pops (the library's reader thread only hands it over): the result is made and freed on
// the host's thread, and the reader goes straight back to reading.
pub struct mcp_completion_queue {
    queue: Arc<Queue>,
}

/// Freeing the handle lets go of what waits in the queue: completions are freed, and answered
/// calls not finished yet go to their client's completion thread, which finishes them (so
/// every started operation still ends, and its client's close need not wait for them).
impl Drop for mcp_completion_queue {
    fn drop(&mut self) {
        let items = {
            let mut items = lock(&self.queue.items);
            items.freed = true;
            std::mem::take(&mut items.list)
        };
        drop(items);
    }
}

struct Queue {
    items: Mutex<Items>,
    /// Readable while armed: from the first item pushed onto an empty queue until a pop finds
    /// the queue empty.
    signal: Signal,
}

#[derive(Default)]
struct Items {
    list: VecDeque<Item>,
    /// The signal was (or is being) written and no pop has found the queue empty since.
    armed: bool,
    /// The host freed the handle: nothing more is kept.
    freed: bool,
}

enum Item {
    /// A completion, for the host.
    Done(u64, Box<mcp_result>),
    /// An answered call, finished by the pop that takes it (see `engine::completer::Finish`):
    /// on the host's thread, which made the call and frees its result.
    Ready(Ready),
}

impl Wake for Queue {
    fn wake(&self) {
        self.signal.wake();
    }
}

impl Inbox for Queue {
    fn hold(self: Arc<Self>, ready: Ready) -> std::result::Result<(), Ready> {
        self.add(Item::Ready(ready)).map_err(|item| match item {
            Item::Ready(ready) => ready,
            Item::Done(..) => unreachable!("add gives back what it was given"),
        })
    }
}

impl Queue {
    /// Adds a completion (after the handle was freed, it is dropped).
    fn push(self: &Arc<Self>, tag: u64, result: Box<mcp_result>) {
        let _ = self.add(Item::Done(tag, result));
    }

    /// Adds an item; the first since the queue was found empty arms the descriptor, after the
    /// lock is let go (so a host woken by it does not find the lock held), and maybe after the
    /// other completions of the same read (`deferred_wakes`). Gives the item back once the
    /// handle is freed.
    fn add(self: &Arc<Self>, item: Item) -> std::result::Result<(), Item> {
        let arm = {
            let mut items = lock(&self.items);
            if items.freed {
                return Err(item);
            }
            items.list.push_back(item);
            !std::mem::replace(&mut items.armed, true)
        };
        if arm {
            wake_soon(self.clone());
        }
        Ok(())
    }

    /// Takes the oldest completion, finishing the answered calls it meets on the way (each
    /// pushes its completion, or its operation's next request goes out). Finding the queue
    /// empty disarms the descriptor (reads its byte): a pop that takes the last completion
    /// leaves it armed, so the host's next pop (which finds it empty) does it. An arming that
    /// comes late, after that pop, leaves the descriptor readable with nothing in the queue:
    /// the next pop finds it empty and disarms it again.
    fn pop(&self) -> Option<(u64, Box<mcp_result>)> {
        loop {
            let ready = {
                let mut items = lock(&self.items);
                match items.list.pop_front() {
                    Some(Item::Done(tag, result)) => return Some((tag, result)),
                    Some(Item::Ready(ready)) => ready,
                    None => {
                        self.signal.drain();
                        items.armed = false;
                        return None;
                    }
                }
            };
            ready.finish();
        }
    }
}

/// A new, empty completion queue; NULL only when the system has no descriptor (or, on
/// Windows, event object) left.
#[no_mangle]
pub extern "C" fn mcp_completion_queue_new() -> *mut mcp_completion_queue {
    guard(std::ptr::null_mut, || match Signal::new() {
        Ok(signal) => Box::into_raw(Box::new(mcp_completion_queue {
            queue: Arc::new(Queue {
                items: Mutex::default(),
                signal,
            }),
        })),
        Err(_) => std::ptr::null_mut(),
    })
}

/// The descriptor that is readable while completions wait (see `mcp_completion_queue`), for
/// poll, epoll, kqueue or an event loop's watcher; -1 for NULL, and on Windows, which waits on
/// `mcp_completion_queue_event` instead. It stays the same for the queue's life.
///
/// # Safety
/// `queue` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_completion_queue_fd(queue: *const mcp_completion_queue) -> c_int {
    guard(
        || -1,
        || match borrow(queue) {
            #[cfg(unix)]
            Some(q) => q.queue.signal.read_fd(),
            _ => -1,
        },
    )
}

/// Windows: the queue's event object (a manual-reset event HANDLE), signaled while
/// completions wait, just as the descriptor is readable elsewhere (see `mcp_completion_queue`):
/// wait on it with WaitForSingleObject, WaitForMultipleObjects, MsgWaitForMultipleObjects (a
/// window's message loop), RegisterWaitForSingleObject or a QWinEventNotifier, then pop until
/// the pop returns false, which resets it. Only wait on it: never set, reset or close it. It
/// stays the same for the queue's life. NULL for NULL, and on other systems (use
/// `mcp_completion_queue_fd`).
///
/// # Safety
/// `queue` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_completion_queue_event(
    queue: *const mcp_completion_queue,
) -> *mut c_void {
    guard(std::ptr::null_mut, || match borrow(queue) {
        #[cfg(windows)]
        Some(q) => q.queue.signal.0.raw(),
        _ => std::ptr::null_mut(),
    })
}

/// Takes the oldest completion: true with `*tag` (the tag given to the start) and `*result`
/// (owned by the caller: free it with `mcp_result_free`), or false when the queue is empty
/// (or an argument is NULL); finding it empty makes the descriptor unreadable. Never blocks.
///
/// # Safety
/// `queue` is NULL or live; `tag` and `result` are NULL or point to writable storage.
#[no_mangle]
pub unsafe extern "C" fn mcp_completion_queue_pop(
    queue: *mut mcp_completion_queue,
    tag: *mut u64,
    result: *mut *mut mcp_result,
) -> bool {
    guard(
        || false,
        || {
            let (Some(queue), Some(tag), Some(result)) =
                (borrow(queue), borrow_mut(tag), borrow_mut(result))
            else {
                return false;
            };
            let Some((popped_tag, popped)) = queue.queue.pop() else {
                return false;
            };
            *tag = popped_tag;
            *result = Box::into_raw(popped);
            true
        },
    )
}

/// Frees the queue; NULL is accepted. Requests still pending on it complete into nothing
/// (their results are freed by the library); the descriptor (or event) is closed once the last
/// of them has completed, so take it out of your event loop first.
///
/// # Safety
/// `queue` is NULL or a queue not freed yet.
#[no_mangle]
pub unsafe extern "C" fn mcp_completion_queue_free(queue: *mut mcp_completion_queue) {
    free_handle(queue)
}

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
/// the client's completion thread (a library thread; one per client, started with its first
/// started request). Completions run one at a time, in the order they were decided.
///
/// The callback may call the library: start other requests, make blocking calls (which hold
/// up the other completions meanwhile), cancel, close the client, and free it (the completions
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
                Err(error) => error.status.into(),
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
                Err(error) => error.status.into(),
            }
        },
    )
}

/// On Windows the queue's signal is an event object, set while armed: the host waits on it
/// (`mcp_completion_queue_event`) where a POSIX host polls the descriptor.
#[cfg(windows)]
struct Signal(crate::transport::WindowsEvent);

#[cfg(windows)]
impl Signal {
    fn new() -> std::io::Result<Signal> {
        crate::transport::WindowsEvent::new().map(Signal)
    }
    fn wake(&self) {
        self.0.set();
    }
    fn drain(&self) {
        self.0.reset();
    }
}
