//! A child made by `fork()` without `exec` has only the thread that forked: the library's
//! threads (the reactor, the pools) are not there, and a lock one of them held stays held. The
//! library cannot work in such a child; rather than hang there, connecting and every request
//! fail at once with NOT_SUPPORTED, saying why. A handler run in the child by `fork()`
//! (`pthread_atfork`, registered when the library starts its first thread) marks it. A process
//! forked before the library started any thread is not marked: it has lost nothing.

use crate::error::{Error, Result, Status};
use std::sync::atomic::{AtomicBool, Ordering};

static FORKED: AtomicBool = AtomicBool::new(false);

/// Called before the library starts a thread: from then on a forked child is marked.
pub fn watch() {
    #[cfg(unix)]
    {
        static REGISTERED: std::sync::Once = std::sync::Once::new();
        extern "C" fn in_the_child() {
            FORKED.store(true, Ordering::Relaxed);
        }
        // SAFETY: registers a handler that only stores to an atomic (async-signal-safe, as
        // a handler run in a forked child must be).
        REGISTERED.call_once(|| unsafe {
            libc::pthread_atfork(None, None, Some(in_the_child));
        });
    }
}

/// Fails in a child forked after the library started its threads.
pub fn check() -> Result<()> {
    match FORKED.load(Ordering::Relaxed) {
        false => Ok(()),
        true => Err(Error::new(
            Status::NotSupported,
            "this process was forked (without exec) after mcpc started its threads, which a \
             forked child does not have: use mcpc in the parent, or exec in the child first",
        )),
    }
}
