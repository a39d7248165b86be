//! Self-healing connections: with a [`ReconnectPolicy`](super::ReconnectPolicy), a request
//! that finds the connection failed connects again before it is sent, pausing between failed
//! attempts. Only requests not yet sent get here: one that was on the wire when the connection
//! failed has failed with it and is never sent again (a tool call is not idempotent).

use super::{closed_error, ClientCore, RequestOptions};
use crate::engine::{cancelled_error, timeout_error};
use crate::error::Result;
use crate::handlers::LogLevel;
use std::time::{Duration, Instant};

impl ClientCore {
    /// Whether a request must connect again before it is sent: a reconnect policy is set and
    /// the connection failed (or is gone after a failure), or a connect is under way (the
    /// request waits for it). A client never connected is left to the host's `connect`.
    pub(super) fn needs_healing(&self) -> bool {
        if self.options.reconnect.is_none() {
            return false;
        }
        let state = self.lock();
        match &state.session {
            _ if state.closed => false,
            Some(session) => session.connection.failure().is_some(),
            // `reconnecting`: a connect is retiring the failed connection, with none in its
            // place yet.
            None => state.lost.is_some() || state.connecting || state.reconnecting,
        }
    }

    /// The deadline a request's own timeout (or the client's) sets, if any.
    pub(super) fn request_deadline(&self, opts: &RequestOptions) -> Option<Instant> {
        match opts.timeout.or(self.options.timeout) {
            Some(Duration::ZERO) | None => None,
            Some(timeout) => Instant::now().checked_add(timeout),
        }
    }

    /// Connects again under the policy: up to its number of attempts, pausing between them.
    /// The request's cancel, `deadline` and `close` end a pause at once (CANCELLED, TIMEOUT,
    /// CLOSED); a connect attempt itself is bounded by the connect timeout. Another request
    /// that healed the connection first makes this one's next attempt return at once.
    pub(super) fn heal(&self, opts: &RequestOptions, deadline: Option<Instant>) -> Result<()> {
        let Some(policy) = self.options.reconnect.clone() else {
            return Ok(());
        };
        let hook = opts.cancellation.as_ref().and_then(|token| {
            let changes = self.changes.clone();
            token.on_cancel(move |_| changes.notify())
        });
        let mut failed = 0;
        let outcome = loop {
            if let Err(stop) = self.may_go_on(opts, deadline) {
                break Err(stop);
            }
            let error = match self.connect() {
                Ok(_) => break Ok(()),
                Err(error) => error,
            };
            failed += 1;
            if self.lock().closed {
                break Err(closed_error());
            }
            if failed >= policy.attempts() {
                break Err(error.context(&format!("reconnecting failed after {failed} attempts")));
            }
            let delay = policy.delay_after(failed);
            self.log(
                LogLevel::Info,
                &format!(
                    "reconnecting failed ({}); attempt {} of {} in {} ms",
                    error.message,
                    failed + 1,
                    policy.attempts(),
                    delay.as_millis()
                ),
            );
            // A wait too long for the clock lasts until the cancel, the deadline or close.
            if let Err(stop) = self.pause(Instant::now().checked_add(delay), opts, deadline) {
                break Err(stop);
            }
        };
        if let (Some(token), Some(hook)) = (&opts.cancellation, hook) {
            token.off_cancel(hook);
        }
        outcome
    }

    /// Waits until `until` (`None`: no end of its own), unless the token, `deadline` or a
    /// close comes first.
    fn pause(
        &self,
        until: Option<Instant>,
        opts: &RequestOptions,
        deadline: Option<Instant>,
    ) -> Result<()> {
        loop {
            let seen = self.changes.seen();
            self.may_go_on(opts, deadline)?;
            if until.is_some_and(|until| Instant::now() >= until) {
                return Ok(());
            }
            let wake = match (until, deadline) {
                (Some(until), Some(deadline)) => Some(until.min(deadline)),
                (until, deadline) => until.or(deadline),
            };
            self.changes.wait(seen, wake);
        }
    }

    /// Whether reconnecting may go on: not when the request was cancelled, its deadline
    /// passed or the client closed.
    fn may_go_on(&self, opts: &RequestOptions, deadline: Option<Instant>) -> Result<()> {
        if let Some(token) = opts.cancellation.as_ref().filter(|t| t.is_cancelled()) {
            return Err(cancelled_error(None, token.reason()));
        }
        if self.lock().closed {
            return Err(closed_error());
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(timeout_error(
                None,
                Some("timed out while reconnecting".to_owned()),
            ));
        }
        Ok(())
    }
}
