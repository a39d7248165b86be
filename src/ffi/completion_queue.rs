//! The completion queue: where started requests' results wait for the host's event loop, with
//! a file descriptor (on Windows, an event object) that is readable while they do.

use super::boundary::{borrow, borrow_mut};
use super::result::mcp_result;
use super::{free_handle, guard};
use crate::deferred_wakes::{wake_soon, Wake};
use crate::engine::completer::{Inbox, Ready};
use crate::sync::lock;
#[cfg(unix)]
use crate::transport::wake::WakePipe as Signal;
use std::collections::VecDeque;
use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex};

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
    pub(super) queue: Arc<Queue>,
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

pub(super) struct Queue {
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
    pub(super) fn push(self: &Arc<Self>, tag: u64, result: Box<mcp_result>) {
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
