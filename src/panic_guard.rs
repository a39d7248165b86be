//! Panics inside the library: caught where they happen, turned into INTERNAL_ERROR outcomes, and
//! kept off the host's stderr.
//!
//! Every thread the library starts runs its body through [`spawn`], and every C export runs
//! through [`catch`]. A panic there is a bug of ours: the pending calls it would strand get an
//! INTERNAL_ERROR (the `on_panic` of each thread), and nothing is printed.
//!
//! Rust's default panic hook prints "thread ... panicked at ..." even for a panic that is caught,
//! and the library must never write to stderr. So the first use installs a hook (once per
//! process) that stays silent for panics on library threads and inside `catch`, and hands every
//! other panic to the hook that was there before: a host's own panics are reported as the host
//! set up. A host that installs its own hook *after* the library's first use replaces ours, and
//! then decides itself what library panics print; to keep them quiet it can install its hook
//! before using the library, or call the hook it replaced (`std::panic::take_hook`).

use crate::error::{Error, Status};
use std::any::Any;
use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;
use std::thread::JoinHandle;

thread_local! {
    /// How deep the current thread is in library code that catches panics.
    static GUARDED: Cell<usize> = const { Cell::new(0) };
}

/// Runs `body`, catching a panic; the panic is described in the INTERNAL_ERROR returned.
pub fn catch<T>(body: impl FnOnce() -> T) -> Result<T, Error> {
    install_quiet_hook();
    let _guarded = Guarded::enter();
    panic::catch_unwind(AssertUnwindSafe(body)).map_err(|payload| internal_error(&*payload))
}

/// Starts a library thread named `name` that runs `body`. If `body` panics, `on_panic` gets the
/// INTERNAL_ERROR, on the same thread, so it can end what the thread leaves pending.
pub fn spawn(
    name: &str,
    body: impl FnOnce() + Send + 'static,
    on_panic: impl FnOnce(Error) + Send + 'static,
) -> std::io::Result<JoinHandle<()>> {
    install_quiet_hook();
    crate::fork_guard::watch();
    let name = name.to_owned();
    std::thread::Builder::new()
        .name(name.clone())
        .spawn(move || {
            if let Err(mut error) = catch(body) {
                error.message = format!("internal error in the {name} thread: {}", error.message);
                // The handler of a panic is library code too: if it panics, stay quiet.
                let _ = catch(|| on_panic(error));
            }
        })
}

/// Whether a panic now would be caught by library code (so the hook keeps quiet).
fn guarded() -> bool {
    GUARDED.with(Cell::get) > 0
}

struct Guarded;

impl Guarded {
    fn enter() -> Guarded {
        GUARDED.with(|depth| depth.set(depth.get() + 1));
        Guarded
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        GUARDED.with(|depth| depth.set(depth.get() - 1));
    }
}

fn install_quiet_hook() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        // `take_hook` and `set_hook` panic on a thread that is panicking; no first use of the
        // library happens there, but a panic here must not escape either.
        let _ = panic::catch_unwind(|| {
            let previous = panic::take_hook();
            panic::set_hook(Box::new(move |info| {
                if !guarded() {
                    previous(info);
                }
            }));
        });
    });
}

fn internal_error(payload: &(dyn Any + Send)) -> Error {
    let what = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic");
    Error::new(
        Status::InternalError,
        format!("internal error (a panic, caught): {what}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn a_panic_in_catch_is_an_internal_error() {
        let error = catch(|| panic!("boom {}", 42)).unwrap_err();
        assert_eq!(error.status, Status::InternalError);
        assert!(error.message.contains("boom 42"), "{error}");
        assert!(!guarded(), "the depth is restored after a panic");
        assert_eq!(catch(|| 7).unwrap(), 7);
    }

    #[test]
    fn a_panicking_library_thread_hands_its_error_to_on_panic() {
        let (tx, rx) = mpsc::channel();
        let thread = spawn(
            "mcpc-test",
            || {
                assert!(
                    guarded(),
                    "library threads are guarded for their whole body"
                );
                panic!("worker bug");
            },
            move |error| tx.send(error).unwrap(),
        )
        .unwrap();
        thread.join().expect("the panic does not escape the thread");
        let error = rx.recv().unwrap();
        assert_eq!(error.status, Status::InternalError);
        assert!(error.message.contains("mcpc-test"), "{error}");
        assert!(error.message.contains("worker bug"), "{error}");
    }

    #[test]
    fn panics_outside_the_library_are_not_guarded() {
        install_quiet_hook();
        assert!(!guarded());
        let inner = catch(guarded).unwrap();
        assert!(inner);
    }
}
