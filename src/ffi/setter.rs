//! How every options setter behaves: it returns MCP_STATUS_OK or MCP_STATUS_INVALID_ARGUMENT,
//! and a rejected value is also remembered, with its message, and reported by the call that
//! uses the options (connect, or the request), so an unchecked setter cannot fail silently.

use super::boundary::borrow_mut;
use super::guard;
use super::status::mcp_status;
use crate::error::{Error, Result, Status};
use std::time::Duration;

/// Runs a setter: applies it, remembers a failure, and returns the status.
///
/// # Safety
/// `target` is NULL or a live handle.
pub(super) unsafe fn set<T: HasError>(
    target: *mut T,
    apply: impl FnOnce(&mut T) -> Result<()>,
) -> mcp_status {
    let status = guard(
        || Status::InternalError,
        || {
            let Some(target) = borrow_mut(target) else {
                return Status::InvalidArgument;
            };
            match apply(target) {
                Ok(()) => Status::Ok,
                Err(error) => {
                    let status = error.status;
                    target.error().get_or_insert(error);
                    status
                }
            }
        },
    );
    status
}

pub(super) trait HasError {
    fn error(&mut self) -> &mut Option<Error>;
}

/// A duration that must not be zero.
pub(super) fn positive_ms(ms: u64, what: &str) -> Result<Duration> {
    match ms {
        0 => Err(Error::invalid(format!("{what} must be positive"))),
        ms => Ok(Duration::from_millis(ms)),
    }
}
