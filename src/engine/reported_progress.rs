//! Progress the client reports for a call itself (a task's status while the call polls it),
//! delivered like the server's `notifications/progress`: on the callback thread, in order, the
//! call's own callback first, then the client's, and never after the call has returned.

use super::callback_queue::CallbackQueue;
use super::own_progress::OwnProgress;
use super::Connection;
use crate::handlers::{Progress, ProgressHandler};
use std::sync::Arc;

pub struct ReportedProgress {
    own: Option<OwnProgress>,
    client: Option<ProgressHandler>,
    callback_queue: Arc<CallbackQueue>,
}

impl Connection {
    /// A reporter for one call: `own` is the call's callback, `client` the client's.
    pub fn progress_reporter(
        &self,
        own: Option<ProgressHandler>,
        client: Option<ProgressHandler>,
    ) -> ReportedProgress {
        ReportedProgress {
            own: own.map(OwnProgress::new),
            client,
            callback_queue: self.callback_queue.clone(),
        }
    }
}

impl ReportedProgress {
    pub fn is_heard(&self) -> bool {
        self.own.is_some() || self.client.is_some()
    }

    /// Queues `progress` for the callbacks; never blocks (a full queue drops it, as it does
    /// the server's).
    pub fn report(&self, progress: Progress) {
        if !self.is_heard() {
            return;
        }
        let ticket = self.own.as_ref().map(OwnProgress::ticket);
        let client = self.client.clone();
        // A task's status message is the server's text.
        let bytes = progress.message.as_ref().map_or(0, String::len);
        let event = Box::new(move || {
            if let Some(ticket) = ticket {
                ticket.run(&progress);
            }
            if let Some(client) = client {
                client(&progress);
            }
        });
        let _ = self.callback_queue.send(event, bytes);
    }

    /// As the call returns: one that ended by itself lets its queued reports run first; a
    /// cancelled one drops them (see `OwnProgress::finish`).
    pub fn finish(&self, ended_by_itself: bool) {
        if let Some(own) = &self.own {
            own.finish(ended_by_itself, !self.callback_queue.is_current());
        }
    }
}
